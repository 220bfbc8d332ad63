import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { AllergyIntolerance, Bundle, OperationOutcome, Patient } from "fhir/r4.js";
import { afterEach, describe, expect, it } from "vitest";
import { envelope, example, messageBundle, responseHeader, STANDARD } from "../support/messages.js";
import { type Answer, startReceiver } from "../support/receiver.js";
import { http, killStray, runToExit, startCli } from "./cli-process.js";

// Asynchronous messaging through the real CLI (its node:http server and the Hono route behind it), with a
// receiver on 127.0.0.1 that the test waits on: R4 $process-message with async=true and response-url.

const EID = "urn:ae:emirates-id";
const PATIENT = "784-1980-1111111-3";

const closers: Array<() => unknown> = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
  await killStray();
});

async function receiver(answer?: Answer) {
  const r = await startReceiver(answer);
  closers.push(r.close);
  return r;
}

function folder(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), "async-cli-"));
  closers.push(() => rmSync(dir, { recursive: true, force: true }));
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  return dir;
}

const addAllergy = (id: string) =>
  messageBundle(
    "add-allergy",
    [
      {
        ...example<AllergyIntolerance>("allergyintolerance-example.json"),
        patient: { identifier: { system: EID, value: PATIENT } },
      } as AllergyIntolerance,
    ],
    { id },
  );

function send(url: string, query: string, bundle: Bundle, headers: Record<string, string> = {}) {
  return http(`${url}${STANDARD}${query}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: envelope(bundle),
  });
}

const asyncTo = (target: string) => `?async=true&response-url=${encodeURIComponent(target)}`;

/** The journal's calls of one message, oldest first, once `count` are recorded (bounded poll: the CLI is another process). */
async function legs(url: string, messageId: string, count: number, headers: Record<string, string> = {}) {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const reply = await http(`${url}/__admin/calls?messageId=${messageId}&order=asc`, { headers });
    const calls = reply.json.calls as Array<Record<string, unknown>>;
    if (calls.length >= count || Date.now() > deadline) return calls;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe("async=true through the CLI", { timeout: 60_000 }, () => {
  it("answers 202, POSTs the response message to the receiver, and journals both legs linked", async () => {
    const inbox = await receiver();
    const { url } = await startCli(["--no-watch"]);
    const reply = await send(url, asyncTo(inbox.url), addAllergy("cli-1"));
    expect(reply.status, reply.text).toBe(202);
    const outcome = reply.json as OperationOutcome;
    expect(outcome.issue[0]).toMatchObject({ severity: "information", code: "informational" });
    expect(outcome.issue[0]?.diagnostics).toContain(inbox.url);

    const got = await inbox.next();
    expect(got.headers["content-type"]).toBe("application/fhir+json; charset=utf-8");
    const bundle = JSON.parse(got.body) as Bundle;
    expect(bundle.type).toBe("message");
    expect(responseHeader(bundle).response).toMatchObject({ identifier: "cli-1", code: "ok" });
    expect(bundle.entry?.some((e) => e.resource?.resourceType === "AllergyIntolerance")).toBe(true);

    const calls = await legs(url, "cli-1", 2);
    const inboundId = reply.headers.get("x-sandbox-call-id");
    expect(calls.map((c) => [c.id === inboundId, c.direction, (c.response as { status: number }).status])).toEqual([
      [true, "inbound", 202],
      [false, "outbound", 200],
    ]);
    expect(calls[0]?.asyncAnswer).toEqual({ to: inbox.url });
    expect(calls[1]).toMatchObject({ respondsTo: inboundId, target: inbox.url, attempt: 1, operation: "add-allergy" });
    expect(JSON.stringify((calls[1] as { request: { body: unknown } }).request.body)).toBe(JSON.stringify(bundle));

    const verify = await http(`${url}/__admin/calls/verify`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ operation: "add-allergy", direction: "outbound", count: 1 }),
    });
    expect(verify.json).toMatchObject({ ok: true, matched: 1 });
  });

  it("retries a receiver that answers 503 first (the push dispatcher's retries)", async () => {
    const inbox = await receiver((_req, n) => ({ status: n === 1 ? 503 : 200 }));
    const { url } = await startCli(["--no-watch"]);
    expect((await send(url, asyncTo(inbox.url), addAllergy("cli-retry"))).status).toBe(202);
    const first = await inbox.next();
    const second = await inbox.next();
    expect(second.body).toBe(first.body);
    const calls = await legs(url, "cli-retry", 3);
    expect(calls.map((c) => [c.direction, c.attempt ?? null, (c.response as { status: number }).status])).toEqual([
      ["inbound", null, 202],
      ["outbound", 1, 503],
      ["outbound", 2, 200],
    ]);
  });

  it("refuses what it cannot do with a clear 400, before processing", async () => {
    const { url } = await startCli(["--no-watch"]);
    const bad = await send(url, "?async=maybe", addAllergy("cli-bad"));
    expect(bad.status).toBe(400);
    expect(bad.json.issue[0].diagnostics).toContain("async must be true or false");
    const relative = await send(url, asyncTo("/answers"), addAllergy("cli-bad"));
    expect(relative.status).toBe(400);
    expect(relative.json.issue[0].diagnostics).toContain("not an absolute URL");
    const view = messageBundle("view-patient-profile", [
      { resourceType: "Patient", identifier: [{ system: EID, value: PATIENT }] } as Patient,
    ]);
    const read = await send(url, asyncTo("http://127.0.0.1:9/a"), view);
    expect(read.status).toBe(400);
    expect(read.json.issue[0].diagnostics).toContain("synchronously only");
    // Nothing of the refused messages was kept: the same id is processed as new.
    const sync = await send(url, "", addAllergy("cli-bad"));
    expect(sync.status).toBe(200);
    expect(sync.headers.get("x-sandbox-duplicate")).toBeNull();
  });

  it("--auth oauth2: a loopback response-url is refused unless --push-allow names it", async () => {
    const inbox = await receiver();
    const clients = join(folder({}), "clients.yaml");
    writeFileSync(
      clients,
      "clients:\n  - { id: clinic, secret: clinic-secret-123, scopes: [patient-profile.write] }\n",
    );
    const token = async (url: string) => {
      const reply = await http(`${url}/oauth2/token`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: "grant_type=client_credentials&client_id=clinic&client_secret=clinic-secret-123",
      });
      expect(reply.status, reply.text).toBe(200);
      return { authorization: `Bearer ${reply.json.access_token}` };
    };

    const guarded = await startCli(["--no-watch", "--auth", "oauth2", "--clients", clients]);
    const refused = await send(guarded.url, asyncTo(inbox.url), addAllergy("ssrf-1"), await token(guarded.url));
    expect(refused.status, refused.text).toBe(400);
    expect(refused.json.issue[0].diagnostics).toContain("loopback");
    expect(refused.json.issue[0].diagnostics).toContain("--push-allow");
    // An anonymous caller is refused before its query counts.
    expect((await send(guarded.url, asyncTo(inbox.url), addAllergy("ssrf-2"))).status).toBe(401);

    const allowed = await startCli([
      "--no-watch",
      "--auth",
      "oauth2",
      "--clients",
      clients,
      "--push-allow",
      "127.0.0.1",
    ]);
    const reply = await send(allowed.url, asyncTo(inbox.url), addAllergy("ssrf-3"), await token(allowed.url));
    expect(reply.status, reply.text).toBe(202);
    expect(responseHeader(JSON.parse((await inbox.next()).body)).response?.identifier).toBe("ssrf-3");
  });

  it("scenario rules script the asynchronous leg: a delay, and an answer never sent", async () => {
    const inbox = await receiver();
    const scenarios = folder({
      "async.yaml": [
        "rules:",
        "  - name: slow-answer",
        "    when: { fhirpath: \"entry[0].resource.id = 'slow'\" }",
        "    respond: { builtIn: true, async: { delay: 400ms } }",
        "  - name: lost-answer",
        "    when: { fhirpath: \"entry[0].resource.id = 'lost'\" }",
        "    respond: { builtIn: true, async: { drop: true } }",
        "",
      ].join("\n"),
    });
    const { url } = await startCli(["--no-watch", "--scenarios", scenarios]);

    const lost = await send(url, asyncTo(inbox.url), addAllergy("lost"));
    expect(lost.status).toBe(202);
    expect(lost.headers.get("x-sandbox-rule")).toBe("lost-answer");
    const sent = performance.now();
    const slow = await send(url, asyncTo(inbox.url), addAllergy("slow"));
    expect(slow.status).toBe(202);
    // The first answer the receiver gets is the slow one's, after its delay: the lost one never went.
    const got = await inbox.next();
    expect(performance.now() - sent).toBeGreaterThanOrEqual(395);
    expect(responseHeader(JSON.parse(got.body)).response?.identifier).toBe("slow");
    const [lostCall] = await legs(url, "lost", 1);
    expect(lostCall?.asyncAnswer).toEqual({ to: inbox.url, dropped: true });
    const [slowCall] = await legs(url, "slow", 1);
    expect(slowCall?.asyncAnswer).toEqual({ to: inbox.url, delayMs: 400 });
  });

  it("--state-file: an answer not yet sent when the sandbox is killed is sent after the restart", async () => {
    const inbox = await receiver();
    const dir = folder({
      "async.yaml": [
        "rules:",
        "  - name: slow-answer",
        "    when: { operation: add-allergy }",
        "    respond: { builtIn: true, async: { delay: 2s } }",
        "",
      ].join("\n"),
    });
    const args = ["--no-watch", "--scenarios", dir, "--state-file", join(dir, "sandbox.db")];
    const first = await startCli(args);
    const reply = await send(first.url, asyncTo(inbox.url), addAllergy("kept-answer"));
    expect(reply.status).toBe(202);
    const inboundId = reply.headers.get("x-sandbox-call-id");
    // A crash during the delay: the answer was not sent.
    first.child.process.kill("SIGKILL");
    await first.child.exited;
    expect(inbox.received).toHaveLength(0);

    const second = await startCli(args);
    const got = await inbox.next();
    expect(responseHeader(JSON.parse(got.body)).response?.identifier).toBe("kept-answer");
    const calls = await legs(second.url, "kept-answer", 2);
    expect(calls.map((c) => [c.direction, c.respondsTo ?? null])).toEqual([
      ["inbound", null],
      ["outbound", inboundId],
    ]);
    expect(inbox.received).toHaveLength(1);
  });

  it("--max-async-answers: past it a message is refused 429 with Retry-After and not processed; another workspace is accepted", async () => {
    const inbox = await receiver(() => "hang");
    const { url } = await startCli(["--no-watch", "--max-async-answers", "2"]);
    // The reported attack: one message resent at a receiver that never answers, each resend one more answer.
    const resent = addAllergy("cap-resent");
    expect((await send(url, asyncTo(inbox.url), resent)).status).toBe(202);
    expect((await send(url, asyncTo(inbox.url), resent)).status).toBe(202);

    const refused = await send(url, asyncTo(inbox.url), addAllergy("cap-3"));
    expect(refused.status, refused.text).toBe(429);
    // --push-timeout's default, 5 s, in seconds.
    expect(refused.headers.get("retry-after")).toBe("5");
    expect(refused.headers.get("content-type")).toBe("application/fhir+json; charset=utf-8");
    expect(refused.json.issue[0]).toMatchObject({ severity: "error", code: "throttled" });
    expect(refused.json.issue[0].diagnostics).toContain("--max-async-answers");

    const teamB = await http(`${url}/w/team-b${STANDARD}${asyncTo(inbox.url)}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: envelope(addAllergy("cap-team-b")),
    });
    expect(teamB.status, teamB.text).toBe(202);

    const health = await http(`${url}/__admin/health`);
    expect(health.json.workspace.limits.asyncAnswers).toEqual({ held: 2, max: 2, flag: "--max-async-answers" });
    // Nothing of the refused message was kept: the same id is processed as new.
    const sync = await send(url, "", addAllergy("cap-3"));
    expect(sync.status).toBe(200);
    expect(sync.headers.get("x-sandbox-duplicate")).toBeNull();
    inbox.release();
  });

  it("validate checks a rule's async: a valid one passes, a misspelt one is an error at its line", async () => {
    const dir = folder({
      "good.yaml": "rules:\n  - respond: { builtIn: true, async: { delay: { min: 1s, max: 3s } } }\n",
      "bad.yaml": "rules:\n  - respond:\n      builtIn: true\n      async: { delay: 2 seconds, drop: false }\n",
      "long.yaml": "rules:\n  - respond:\n      builtIn: true\n      async: { delay: { min: 1s, max: 10m } }\n",
    });
    const good = await runToExit(["validate", join(dir, "good.yaml")]);
    expect(good.code, good.stderr).toBe(0);
    const bad = await runToExit(["validate", join(dir, "bad.yaml")]);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain("bad.yaml:4:");
    expect(bad.stderr).toContain('did you mean "2s"');
    expect(bad.stderr).toMatch(/drop/);
    const long = await runToExit(["validate", join(dir, "long.yaml")]);
    expect(long.code).toBe(1);
    expect(long.stderr).toContain("long.yaml:4:");
    expect(long.stderr).toContain("async.delay must be at most 5m");
  });
});
