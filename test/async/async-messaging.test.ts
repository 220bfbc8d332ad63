import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { AllergyIntolerance, Bundle, OperationOutcome, Patient } from "fhir/r4.js";
import { afterEach, describe, expect, it } from "vitest";
import { createApp, type SandboxApp } from "../../src/app.js";
import type { SandboxOptions } from "../../src/config/options.js";
import { admin, listCalls, manualClock } from "../admin/admin-client.js";
import { example, messageBundle, post, responseHeader, STANDARD } from "../support/messages.js";
import { type Answer, startReceiver } from "../support/receiver.js";

// R4 $process-message, asynchronous mode: async=true (and response-url) in the URL, 202 Accepted at once, the
// response message POSTed later to response-url, else to MessageHeader.source.endpoint.

const EID = "urn:ae:emirates-id";
const PATIENT = "784-1980-1111111-3";

const closers: Array<() => unknown> = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

/** Ids and times that repeat: two sandboxes built alike answer the same message with the same bytes. */
function sameDeps() {
  let n = 0;
  return {
    now: manualClock("2026-03-01T08:00:00.000Z").now,
    newId: () => `00000000-0000-4000-8000-${String(++n).padStart(12, "0")}`,
    random: () => 0.5,
  };
}

function sandbox(options: Partial<SandboxOptions> = {}, rules?: string): SandboxApp {
  let scenarios: string | undefined;
  if (rules !== undefined) {
    scenarios = mkdtempSync(join(tmpdir(), "async-test-"));
    writeFileSync(join(scenarios, "rules.yaml"), rules);
    closers.push(() => rmSync(scenarios as string, { recursive: true, force: true }));
  }
  const s = createApp({ pushBackoffMs: 2, ...(scenarios ? { scenarios, watch: false } : {}), ...options }, sameDeps());
  closers.push(s.close);
  return s;
}

async function receiver(answer?: Answer) {
  const r = await startReceiver(answer);
  closers.push(r.close);
  return r;
}

const addAllergy = (options: { id?: string; source?: string } = {}) =>
  messageBundle(
    "add-allergy",
    [
      {
        ...example<AllergyIntolerance>("allergyintolerance-example.json"),
        patient: { identifier: { system: EID, value: PATIENT } },
      } as AllergyIntolerance,
    ],
    { id: options.id ?? "msg-1", ...(options.source ? { source: options.source } : {}) },
  );

/** A message of an operation that reads a patient's data (view-patient-profile, get-pending-tasks). */
const readPatient = (operation: string, id: string) =>
  messageBundle(operation, [{ resourceType: "Patient", identifier: [{ system: EID, value: PATIENT }] } as Patient], {
    id,
  });

const asyncPath = (responseUrl?: string) =>
  `${STANDARD}?async=true${responseUrl ? `&response-url=${encodeURIComponent(responseUrl)}` : ""}`;

/** The 202's OperationOutcome: one information issue that names where the answer goes. */
function expectAccepted(reply: { status: number; body: unknown; headers: Headers }, target: string) {
  expect(reply.status, JSON.stringify(reply.body)).toBe(202);
  expect(reply.headers.get("content-type")).toBe("application/fhir+json; charset=utf-8");
  const outcome = reply.body as OperationOutcome;
  expect(outcome.resourceType).toBe("OperationOutcome");
  expect(outcome.issue).toHaveLength(1);
  expect(outcome.issue[0]?.severity).toBe("information");
  expect(outcome.issue[0]?.code).toBe("informational");
  expect(outcome.issue[0]?.diagnostics).toContain(target);
}

describe("$process-message?async=true", () => {
  it("answers 202 at once and POSTs the very response message the synchronous call answers to response-url", async () => {
    const inbox = await receiver();
    const twin = sandbox();
    const sync = await twin.app.request(STANDARD, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ content: JSON.stringify(addAllergy()) }),
    });
    const syncText = await sync.text();
    expect(sync.status).toBe(200);

    const s = sandbox();
    const reply = await post(s.app, addAllergy(), { path: asyncPath(inbox.url) });
    expectAccepted(reply, inbox.url);

    const got = await inbox.next();
    expect(got.method).toBe("POST");
    expect(got.path).toBe("/fhir-hook");
    expect(got.headers["content-type"]).toBe("application/fhir+json; charset=utf-8");
    expect(got.body).toBe(syncText);
    const bundle = JSON.parse(got.body) as Bundle;
    expect(responseHeader(bundle).response).toMatchObject({ identifier: "msg-1", code: "ok" });
  });

  it("sends it to MessageHeader.source.endpoint when no response-url is given", async () => {
    const inbox = await receiver();
    const s = sandbox();
    const reply = await post(s.app, addAllergy({ source: inbox.url }), { path: `${STANDARD}?async=true` });
    expectAccepted(reply, inbox.url);
    const got = await inbox.next();
    expect(responseHeader(JSON.parse(got.body)).response?.identifier).toBe("msg-1");
  });

  it("journals both legs, linked: the inbound call answered 202 and the outbound delivery naming it", async () => {
    const inbox = await receiver();
    const s = sandbox();
    const reply = await post(s.app, addAllergy(), { path: asyncPath(inbox.url) });
    const inboundId = reply.headers.get("x-sandbox-call-id");
    await inbox.next();
    const outbound = await new Promise<unknown>((resolve) => {
      const seen = () => listCalls(s.app, "direction=outbound").then((calls) => calls[0] && resolve(calls[0]));
      s.events.on("call:recorded", () => void seen());
      void seen();
    });

    const calls = await listCalls(s.app, "messageId=msg-1&order=asc");
    expect(calls.map((c) => [c.direction, c.response?.status])).toEqual([
      ["inbound", 202],
      ["outbound", 200],
    ]);
    expect(calls[0]).toMatchObject({ id: inboundId, operation: "add-allergy", asyncAnswer: { to: inbox.url } });
    expect(outbound).toMatchObject({
      operation: "add-allergy",
      messageId: "msg-1",
      respondsTo: inboundId,
      target: inbox.url,
      attempt: 1,
    });
    const detail = await admin(s.app, "GET", `/calls/${(outbound as { id: string }).id}`);
    expect(detail.body.explanation.summary).toContain(`The asynchronous answer to call ${inboundId}`);
    const summary = await listCalls(s.app, "view=summary&order=asc");
    expect(summary[1]).toMatchObject({ direction: "outbound", respondsTo: inboundId });

    const verify = await admin(s.app, "POST", "/calls/verify", {
      body: { operation: "add-allergy", direction: "outbound", count: 1 },
    });
    expect(verify.body).toMatchObject({ ok: true, matched: 1 });
  });

  it("every absolute fullUrl of the asynchronous answer resolves with a REST read, as a synchronous answer's does", async () => {
    const inbox = await receiver();
    // An error answer: its OperationOutcome is held nowhere but in the journal's record of the delivery.
    const s = sandbox(
      {},
      "rules:\n  - name: later-error\n    when: { operation: add-allergy }\n    respond:\n      outcome: { response: fatal-error, diagnostics: no }\n",
    );
    await post(s.app, addAllergy(), { path: asyncPath(inbox.url) });
    const bundle = JSON.parse((await inbox.next()).body) as Bundle;
    // The delivery is journaled after the receiver answers: wait for its record before reading.
    await new Promise<void>((resolve) => {
      const seen = () => listCalls(s.app, "direction=outbound").then((c) => c.length > 0 && resolve());
      s.events.on("call:recorded", () => void seen());
      void seen();
    });
    const urls = (bundle.entry ?? []).map((e) => e.fullUrl).filter((u): u is string => /^https?:/.test(u ?? ""));
    expect(urls.some((u) => u.includes("/OperationOutcome/"))).toBe(true);
    for (const url of urls) {
      const path = new URL(url).pathname;
      const read = await s.app.request(path, { headers: { accept: "application/fhir+json" } });
      expect(read.status, `${path}: ${await read.clone().text()}`).toBe(200);
      const resource = (await read.json()) as { resourceType: string; id: string };
      const entry = bundle.entry?.find((e) => e.fullUrl === url)?.resource as { resourceType: string; id: string };
      expect([resource.resourceType, resource.id]).toEqual([entry.resourceType, entry.id]);
    }
  });

  it("retries a receiver that answers 503 first, each attempt journaled as a leg of the same call", async () => {
    const inbox = await receiver((_req, n) => ({ status: n === 1 ? 503 : 200 }));
    const s = sandbox();
    const reply = await post(s.app, addAllergy(), { path: asyncPath(inbox.url) });
    const inboundId = reply.headers.get("x-sandbox-call-id");
    const first = await inbox.next();
    const second = await inbox.next();
    expect(second.body).toBe(first.body);
    const calls = await new Promise<Array<Record<string, unknown>>>((resolve) => {
      const seen = () => listCalls(s.app, "direction=outbound&order=asc").then((c) => c.length === 2 && resolve(c));
      s.events.on("call:recorded", () => void seen());
      void seen();
    });
    expect(calls.map((c) => [c.attempt, (c.response as { status: number }).status, c.respondsTo])).toEqual([
      [1, 503, inboundId],
      [2, 200, inboundId],
    ]);
  });

  it("answers an exact resend again: 202, and the original response message sent again", async () => {
    const inbox = await receiver();
    const s = sandbox();
    const message = addAllergy();
    await post(s.app, message, { path: asyncPath(inbox.url) });
    const first = await inbox.next();
    const again = await post(s.app, message, { path: asyncPath(inbox.url) });
    expectAccepted(again, inbox.url);
    expect(again.headers.get("x-sandbox-duplicate")).toBe("true");
    expect((await inbox.next()).body).toBe(first.body);
  });

  it("wraps the answer in the envelope under --response-envelope, as the synchronous answer is", async () => {
    const inbox = await receiver();
    const s = sandbox({ responseEnvelope: true });
    await post(s.app, addAllergy(), { path: asyncPath(inbox.url) });
    const got = await inbox.next();
    expect(got.headers["content-type"]).toBe("application/json; charset=utf-8");
    expect(responseHeader(got.bundle).response?.identifier).toBe("msg-1");
  });

  it("async=false answers exactly as without the parameter", async () => {
    const plain = sandbox();
    const flagged = sandbox();
    const a = await plain.app.request(STANDARD, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ content: JSON.stringify(addAllergy()) }),
    });
    const b = await flagged.app.request(`${STANDARD}?async=false`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ content: JSON.stringify(addAllergy()) }),
    });
    expect(b.status).toBe(a.status);
    expect(await b.text()).toBe(await a.text());
  });
});

describe("refusals: a clear 400, the message not processed", () => {
  // Written from the operation definition (async: boolean; response-url: a url) and the push allow-list.
  const cases: Array<[string, string, string]> = [
    [
      "async is not a boolean",
      `${STANDARD}?async=yes&response-url=http://127.0.0.1:1/a`,
      "async must be true or false",
    ],
    ["async given twice", `${STANDARD}?async=true&async=false`, "async is given 2 times"],
    ["response-url without async=true", `${STANDARD}?response-url=http://127.0.0.1:1/a`, "only with async=true"],
    [
      "response-url with async=false",
      `${STANDARD}?async=false&response-url=http://127.0.0.1:1/a`,
      "only with async=true",
    ],
    ["response-url relative", asyncPath("/answers"), "is not an absolute URL"],
    ["response-url not http(s)", asyncPath("ftp://127.0.0.1/answers"), "not an http:// or https:// URL"],
    ["response-url with credentials", asyncPath("http://user:secret@127.0.0.1:1/a"), "credentials"],
    [
      "response-url given twice",
      `${asyncPath("http://127.0.0.1:1/a")}&response-url=http://127.0.0.1:1/b`,
      "given 2 times",
    ],
  ];
  it.each(cases)("%s", async (_what, path, says) => {
    const s = sandbox();
    const reply = await post(s.app, addAllergy(), { path });
    expect(reply.status).toBe(400);
    expect(reply.body.resourceType).toBe("OperationOutcome");
    expect(reply.body.issue[0].severity).toBe("error");
    expect(reply.body.issue[0].diagnostics).toContain(says);
    expect(reply.body.issue[0].diagnostics).not.toContain("secret");
    // Nothing was kept: the same message id is new to the sandbox.
    const again = await post(s.app, addAllergy());
    expect(again.status).toBe(200);
    expect(again.headers.get("x-sandbox-duplicate")).toBeNull();
  });

  it("refuses a response-url --push-allow does not name", async () => {
    const s = sandbox({ pushAllow: ["pharmacy.example.ae"] });
    const reply = await post(s.app, addAllergy(), { path: asyncPath("http://127.0.0.1:9/answers") });
    expect(reply.status).toBe(400);
    expect(reply.body.issue[0].diagnostics).toContain("--push-allow");
  });

  it("refuses async=true without response-url when source.endpoint is no http(s) URL", async () => {
    const s = sandbox();
    const reply = await post(s.app, addAllergy({ source: "urn:oid:1.2.3" }), { path: `${STANDARD}?async=true` });
    expect(reply.status).toBe(400);
    expect(reply.body.issue[0].diagnostics).toContain("give response-url=");
    expect(reply.body.issue[0].expression).toEqual(["Bundle.entry[0].resource.source.endpoint"]);
  });

  it("refuses async=true on an operation that only reads, and counts nothing of it", async () => {
    const s = sandbox();
    for (const operation of ["view-patient-profile", "get-pending-tasks"]) {
      const bundle = readPatient(operation, `read-${operation}`);
      const reply = await post(s.app, bundle, { path: asyncPath("http://127.0.0.1:1/a") });
      expect(reply.status, operation).toBe(400);
      expect(reply.body.issue[0].code).toBe("not-supported");
      expect(reply.body.issue[0].diagnostics).toContain("synchronously only");
      const sync = await post(s.app, bundle);
      expect(sync.status, operation).toBe(200);
      expect(sync.headers.get("x-sandbox-duplicate")).toBeNull();
    }
  });

  it("answers an invalid message at once with its OperationOutcome, and sends nothing later", async () => {
    const inbox = await receiver();
    const s = sandbox();
    const invalid = addAllergy({ id: "bad" });
    (invalid.entry?.[1]?.resource as { clinicalStatus?: unknown }).clinicalStatus = "active";
    const reply = await post(s.app, invalid, { path: asyncPath(inbox.url) });
    expect(reply.status).toBe(400);
    expect(reply.body.resourceType).toBe("OperationOutcome");
    // The next delivery the receiver gets is the valid message's answer: the invalid one sent none.
    await post(s.app, addAllergy({ id: "good" }), { path: asyncPath(inbox.url) });
    expect(responseHeader(JSON.parse((await inbox.next()).body)).response?.identifier).toBe("good");
  });
});

describe("a response message sent asynchronously", () => {
  it("accepts async=true on a response message with 202 and answers nothing (R4: content may be a response message to accept)", async () => {
    const inbox = await receiver();
    const s = sandbox();
    const response = addAllergy({ id: "a-response" });
    (response.entry?.[0]?.resource as { response?: unknown }).response = { identifier: "x", code: "ok" };
    const reply = await post(s.app, response, { path: asyncPath(inbox.url) });
    expect(reply.status, JSON.stringify(reply.body)).toBe(202);
    expect(reply.body.resourceType).toBe("OperationOutcome");
    expect(reply.body.issue).toHaveLength(1);
    expect(reply.body.issue[0]).toMatchObject({ severity: "information", code: "informational" });
    expect(reply.body.issue[0].diagnostics).toContain("never answered");
    // Without response-url its source.endpoint need not be one the sandbox could POST to: nothing goes there.
    const noWhere = addAllergy({ id: "another-response", source: "urn:oid:1.2.3" });
    (noWhere.entry?.[0]?.resource as { response?: unknown }).response = { identifier: "y", code: "ok" };
    expect((await post(s.app, noWhere, { path: `${STANDARD}?async=true` })).status).toBe(202);
    const [first] = await listCalls(s.app, "direction=inbound&order=asc");
    expect(first?.response?.status).toBe(202);
    expect(first?.asyncAnswer).toBeUndefined();
    // The receiver's first delivery is the next message's answer: the response messages got none.
    await post(s.app, addAllergy({ id: "a-request" }), { path: asyncPath(inbox.url) });
    expect(responseHeader(JSON.parse((await inbox.next()).body)).response?.identifier).toBe("a-request");
  });
});

describe("scenario rules script the asynchronous leg", () => {
  it("async.delay: the 202 at once, the answer after the delay", async () => {
    const inbox = await receiver();
    const s = sandbox(
      {},
      "rules:\n  - name: slow-answer\n    when: { operation: add-allergy }\n    respond: { builtIn: true, async: { delay: 300ms } }\n",
    );
    const sent = performance.now();
    const reply = await post(s.app, addAllergy(), { path: asyncPath(inbox.url) });
    expect(reply.status).toBe(202);
    expect(reply.headers.get("x-sandbox-rule")).toBe("slow-answer");
    await inbox.next();
    expect(performance.now() - sent).toBeGreaterThanOrEqual(295);
    const [inbound] = await listCalls(s.app, "direction=inbound");
    expect(inbound.asyncAnswer).toEqual({ to: inbox.url, delayMs: 300 });
    const rules = (await admin(s.app, "GET", "/scenarios")).body.rules as Array<{ name: string; answers: unknown[] }>;
    expect(rules.find((r) => r.name === "slow-answer")?.answers[0]).toMatchObject({
      kind: "built-in",
      async: { delay: "300ms", drop: false },
    });
  });

  it("a reset withdraws the answers still waiting: the next case of a suite gets no answer of the one before", async () => {
    const inbox = await receiver();
    const s = sandbox(
      {},
      "rules:\n  - name: slow-answer\n    when: { operation: add-allergy }\n    respond: { builtIn: true, async: { delay: 200ms } }\n",
    );
    expect((await post(s.app, addAllergy({ id: "before-reset" }), { path: asyncPath(inbox.url) })).status).toBe(202);
    const held = async () => ((await admin(s.app, "GET", "/health")).body.pushes.asyncAnswers as { held: number }).held;
    expect(await held()).toBe(1);
    expect((await admin(s.app, "POST", "/reset")).status).toBe(200);
    expect(await held()).toBe(0);
    // Sent after the reset with the same delay: were the first not withdrawn, it would be due first and arrive first.
    expect((await post(s.app, addAllergy({ id: "after-reset" }), { path: asyncPath(inbox.url) })).status).toBe(202);
    expect(responseHeader(JSON.parse((await inbox.next()).body)).response?.identifier).toBe("after-reset");
    expect(inbox.received).toHaveLength(1);
  });

  it("async.drop: accepted, never answered; the journal says so", async () => {
    const inbox = await receiver();
    const s = sandbox(
      {},
      "rules:\n  - name: lost-answer\n    when: { fhirpath: \"entry[0].resource.id = 'lost'\" }\n    respond: { builtIn: true, async: { drop: true } }\n",
    );
    const reply = await post(s.app, addAllergy({ id: "lost" }), { path: asyncPath(inbox.url) });
    expectAccepted(reply, inbox.url);
    const [inbound] = await listCalls(s.app, "direction=inbound");
    expect(inbound.asyncAnswer).toEqual({ to: inbox.url, dropped: true });
    // The receiver's first delivery is the next message's: the dropped one never went.
    await post(s.app, addAllergy({ id: "kept" }), { path: asyncPath(inbox.url) });
    expect(responseHeader(JSON.parse((await inbox.next()).body)).response?.identifier).toBe("kept");
  });

  it("an error response message goes asynchronously like any answer", async () => {
    const inbox = await receiver();
    const s = sandbox(
      {},
      "rules:\n  - name: later-error\n    when: { operation: add-allergy }\n    respond:\n      outcome: { response: transient-error, diagnostics: try again later }\n",
    );
    const reply = await post(s.app, addAllergy(), { path: asyncPath(inbox.url) });
    expect(reply.status).toBe(202);
    const bundle = JSON.parse((await inbox.next()).body) as Bundle;
    expect(responseHeader(bundle).response).toMatchObject({ identifier: "msg-1", code: "transient-error" });
  });

  it("a scripted fault is the 202's: the call fails at once and nothing is sent later", async () => {
    const s = sandbox(
      {},
      "rules:\n  - name: broken\n    when: { operation: add-allergy }\n    respond: { status: 503, fault: empty-body }\n",
    );
    const res = await s.app.request(asyncPath("http://127.0.0.1:1/a"), {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ content: JSON.stringify(addAllergy()) }),
    });
    expect(res.status).toBe(503);
    const [inbound] = await listCalls(s.app, "direction=inbound");
    expect(inbound.asyncAnswer).toBeUndefined();
  });
});

describe("--max-async-answers: a workspace's answers not yet delivered are bounded", () => {
  // The limit as the docs give it: answers waiting for their delay, queued or being sent count; past it 429
  // (RFC 6585) with Retry-After, issue throttled, the message not processed; other workspaces are not affected.
  const health = async (s: SandboxApp, prefix = "") => (await admin(s.app, "GET", "/health", { prefix })).body;
  const asyncFigures = async (s: SandboxApp) => (await health(s)).pushes.asyncAnswers;

  it("refuses the message past the limit with 429 and changes nothing; another workspace is still accepted; the place frees once an answer is delivered", async () => {
    const inbox = await receiver(() => "hang");
    const s = sandbox({ maxAsyncAnswers: 3 });
    const message = addAllergy({ id: "resent" });
    // The reported attack: one message resent, each resend one more answer to a receiver that never answers.
    for (let i = 0; i < 3; i++) expect((await post(s.app, message, { path: asyncPath(inbox.url) })).status).toBe(202);

    const refused = await post(s.app, addAllergy({ id: "one-too-many" }), { path: asyncPath(inbox.url) });
    expect(refused.status).toBe(429);
    // --push-timeout's default (5 s): an answer in flight ends its attempt within it.
    expect(refused.headers.get("retry-after")).toBe("5");
    expect(refused.body.resourceType).toBe("OperationOutcome");
    expect(refused.body.issue).toHaveLength(1);
    expect(refused.body.issue[0]).toMatchObject({ severity: "error", code: "throttled" });
    expect(refused.body.issue[0].diagnostics).toContain("--max-async-answers");
    expect(refused.body.issue[0].diagnostics).toContain("3");
    // An exact resend past it is refused too: no fourth answer.
    expect((await post(s.app, message, { path: asyncPath(inbox.url) })).status).toBe(429);

    // Another workspace has its own limit.
    expect(
      (await post(s.app, addAllergy({ id: "team-b-1" }), { path: `/w/team-b${asyncPath(inbox.url)}` })).status,
    ).toBe(202);

    const limits = (await health(s)).workspace.limits;
    expect(limits.asyncAnswers).toEqual({ held: 3, max: 3, flag: "--max-async-answers" });
    expect((await health(s, "/w/team-b")).workspace.limits.asyncAnswers).toEqual({
      held: 1,
      max: 3,
      flag: "--max-async-answers",
    });
    await expect.poll(() => inbox.received.length, { timeout: 5000 }).toBe(4);
    expect(await asyncFigures(s)).toEqual({ held: 4, waiting: 0 });

    // Nothing of the refused message was processed: its id is new to the duplicate memory.
    const sync = await post(s.app, addAllergy({ id: "one-too-many" }));
    expect(sync.status).toBe(200);
    expect(sync.headers.get("x-sandbox-duplicate")).toBeNull();

    // An answer delivered frees its place.
    expect(inbox.release(1)).toBe(1);
    await expect.poll(async () => (await health(s)).workspace.limits.asyncAnswers.held, { timeout: 5000 }).toBe(2);
    expect((await post(s.app, addAllergy({ id: "after-one" }), { path: asyncPath(inbox.url) })).status).toBe(202);
    inbox.release();
  });

  it("counts answers waiting for a rule's async.delay (health: pushes.asyncAnswers)", async () => {
    const s = sandbox(
      { maxAsyncAnswers: 2 },
      "rules:\n  - name: slow-answer\n    when: { operation: add-allergy }\n    respond: { builtIn: true, async: { delay: 5m } }\n",
    );
    const to = asyncPath("http://127.0.0.1:9/answers");
    expect((await post(s.app, addAllergy({ id: "w-1" }), { path: to })).status).toBe(202);
    expect((await post(s.app, addAllergy({ id: "w-2" }), { path: to })).status).toBe(202);
    expect((await post(s.app, addAllergy({ id: "w-3" }), { path: to })).status).toBe(429);
    expect(await asyncFigures(s)).toEqual({ held: 2, waiting: 2 });
    expect((await health(s)).pushes.pending).toBe(0);
  });

  it("a dropped answer (async.drop) and a refused message hold no place", async () => {
    const s = sandbox(
      { maxAsyncAnswers: 1 },
      "rules:\n  - name: lost-answer\n    when: { fhirpath: \"entry[0].resource.id.startsWith('lost')\" }\n    respond: { builtIn: true, async: { drop: true } }\n",
    );
    const to = asyncPath("http://127.0.0.1:9/answers");
    expect((await post(s.app, addAllergy({ id: "lost-1" }), { path: to })).status).toBe(202);
    expect((await post(s.app, addAllergy({ id: "lost-2" }), { path: to })).status).toBe(202);
    const invalid = addAllergy({ id: "bad" });
    (invalid.entry?.[1]?.resource as { clinicalStatus?: unknown }).clinicalStatus = "active";
    expect((await post(s.app, invalid, { path: to })).status).toBe(400);
    expect((await health(s)).workspace.limits.asyncAnswers.held).toBe(0);
  });

  it("one workspace's answers take at most a quarter of --push-concurrency: another's answer is not queued behind them", async () => {
    const inbox = await receiver(() => "hang");
    // 4 slots: one workspace's answers hold 1 at a time.
    const s = sandbox({ pushConcurrency: 4 });
    for (let i = 1; i <= 6; i++) {
      const reply = await post(s.app, addAllergy({ id: `a-${i}` }), { path: asyncPath(inbox.url) });
      expect(reply.status).toBe(202);
    }
    await expect.poll(() => inbox.received.length, { timeout: 5000 }).toBe(1);
    expect(await asyncFigures(s)).toEqual({ held: 6, waiting: 5 });
    expect((await health(s)).pushes).toMatchObject({ pending: 1, inFlight: 1, queued: 0 });

    // Team b's answer gets a slot at once, though team a has five waiting.
    await post(s.app, addAllergy({ id: "b-1" }), { path: `/w/team-b${asyncPath(inbox.url)}` });
    await expect.poll(() => inbox.received.length, { timeout: 5000 }).toBe(2);
    expect(responseHeader(JSON.parse(inbox.received[1]?.body ?? "{}")).response?.identifier).toBe("b-1");

    // Team a's next answer goes once its first is delivered.
    inbox.release(1);
    await expect.poll(() => inbox.received.length, { timeout: 5000 }).toBe(3);
    expect(responseHeader(JSON.parse(inbox.received[2]?.body ?? "{}")).response?.identifier).toBe("a-2");
    inbox.release();
  });
});
