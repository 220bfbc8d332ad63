import { appendFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { AllergyIntolerance, Bundle, Patient, Subscription } from "fhir/r4.js";
import { afterEach, describe, expect, it } from "vitest";
import { runCli } from "../../src/cli/main.js";
import { http, killStray, startCli } from "../cli/cli-process.js";
import { pharmacyOrganization } from "../orders/pharmacy-client.js";
import { ALTERNATE, envelope, example, messageBundle, STANDARD } from "../support/messages.js";

// A real process, killed with SIGKILL: what reached the file before the kill is all there is.
const dirs: string[] = [];
afterEach(async () => {
  await killStray();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

const AUTH_SECRET = "client-secret-4711";
const SUBSCRIPTION_SECRET = "pharmacy-hook-secret-0815";

const EID = "urn:ae:emirates-id";
const patient = (value: string): Patient => ({ resourceType: "Patient", identifier: [{ system: EID, value }] });
const addAllergy = (): Bundle =>
  messageBundle("add-allergy", [
    {
      ...example<AllergyIntolerance>("allergyintolerance-example.json"),
      patient: { identifier: { system: EID, value: "784-1990-1234567-6" } },
    } as AllergyIntolerance,
  ]);
const subscribe = (): Bundle =>
  messageBundle("subscribe-order-notifications", [
    {
      resourceType: "Subscription",
      status: "requested",
      reason: "Drug order fulfillment requests",
      criteria: "Task?code=fulfill",
      channel: {
        type: "rest-hook",
        endpoint: "http://127.0.0.1:9/pharmacy-hook",
        payload: "application/fhir+json",
        header: [`Authorization: Bearer ${SUBSCRIPTION_SECRET}`, "X-Pharmacy: PH-1"],
      },
    } as Subscription,
    pharmacyOrganization("PH-JOURNAL-1"),
  ]);

/** Calls of every kind: messages, a refused one, a wrong method, one with credentials, a subscription. */
const CALLS: Array<{ path?: string; method?: string; body?: string; headers?: Record<string, string> }> = [
  { body: envelope(addAllergy()), headers: { authorization: `Bearer ${AUTH_SECRET}` } },
  { body: envelope(messageBundle("view-patient-profile", [patient("784-1990-1234567-6")])) },
  { body: envelope(subscribe()) },
  { body: "not json at all" },
  { method: "GET" },
  { body: envelope(messageBundle("get-pending-tasks", [patient("784-1990-1234567-6")])), path: ALTERNATE },
  { body: envelope(messageBundle("view-patient-profile", [patient("784-1985-7654322-1")])) },
];

async function send(url: string, call: (typeof CALLS)[number]): Promise<number> {
  const reply = await http(`${url}${call.path ?? STANDARD}`, {
    method: call.method ?? "POST",
    headers: { "content-type": "application/json", ...call.headers },
    ...(call.body === undefined ? {} : { body: call.body }),
  });
  return reply.status;
}

const lines = (file: string) => readFileSync(file, "utf8").split("\n").slice(0, -1);
/** A line of the file as the admin API shows the call: without the file's own highestIdIssued. */
const asCall = (line: string) => {
  const { highestIdIssued: _, ...call } = JSON.parse(line);
  return call;
};

describe("--journal-file", { timeout: 60_000 }, () => {
  it("keeps every completed call across a SIGKILL, redacted, and continues numbering after a restart", async () => {
    const dir = mkdtempSync(join(tmpdir(), "journal-file-"));
    dirs.push(dir);
    const file = join(dir, "calls.ndjson");
    const empty = join(dir, "no-scenarios");
    mkdirSync(empty);
    const args = ["--journal-file", file, "--journal-limit", "5", "--scenarios", empty, "--no-watch"];

    const first = await startCli(args);
    const statuses: number[] = [];
    for (const call of CALLS) statuses.push(await send(first.url, call));
    expect(statuses).toEqual([200, 200, 200, 400, 405, 404, 200]);
    // The in-memory journal keeps 5; the export streams exactly those.
    const memory = (await http(`${first.url}/__admin/calls`)).json.calls;
    expect(memory.map((c: { id: string }) => c.id)).toEqual(["3", "4", "5", "6", "7"]);
    const exported = await http(`${first.url}/__admin/calls/export`);
    expect(exported.headers.get("content-type")).toMatch(/^application\/x-ndjson/);
    expect(exported.text.endsWith("\n")).toBe(true);
    expect(
      exported.text
        .trimEnd()
        .split("\n")
        .map((l) => JSON.parse(l)),
    ).toEqual(memory);

    first.child.process.kill("SIGKILL");
    expect((await first.child.waitForExit()).signal).toBe("SIGKILL");

    // Every completed call is in the file, one parseable line each, secrets redacted.
    const text = readFileSync(file, "utf8");
    const written = lines(file).map(asCall);
    expect(written.map((c) => c.id)).toEqual(["1", "2", "3", "4", "5", "6", "7"]);
    // Each line says the highest id handed out when it was written: calls ran one at a time here.
    expect(lines(file).map((l) => JSON.parse(l).highestIdIssued)).toEqual(["1", "2", "3", "4", "5", "6", "7"]);
    expect(written.map((c) => c.response.status)).toEqual(statuses);
    expect(written.slice(2)).toEqual(memory);
    expect(text).not.toContain(AUTH_SECRET);
    expect(text).not.toContain(SUBSCRIPTION_SECRET);
    expect(written[0].request.headers.authorization).toBe("[redacted]");
    const subscription = JSON.parse(written[2].request.body.content).entry[1].resource;
    // Every Subscription header value, whatever its name (README: redaction by rule).
    expect(subscription.channel.header).toEqual(["Authorization: [redacted]", "X-Pharmacy: [redacted]"]);
    expect(written[3]).toMatchObject({ operation: null, request: { body: "not json at all" } });

    // A crash in the middle of a write leaves a cut-off line: export skips it and says so.
    appendFileSync(file, '{"id":"8","direction":"inbound","request":{"meth');
    const out: string[] = [];
    const err: string[] = [];
    const code = await runCli(["export", "--from", file], {
      out: (l) => out.push(l),
      err: (l) => err.push(l),
      env: {},
    });
    expect(code).toBe(0);
    expect(err.join("\n")).toContain(`${file}:8: the last line is cut off`);
    expect(out.join("\n")).toContain("name: recorded add-allergy 1");

    // Restarted on the same file: the cut-off line is moved aside (with a warning), new calls are numbered after the old.
    const second = await startCli(args);
    expect(second.child.stderr).toContain(`Moved it to ${file}.cut-off`);
    expect(readFileSync(`${file}.cut-off`, "utf8")).toBe('{"id":"8","direction":"inbound","request":{"meth\n');
    for (const call of CALLS) await send(second.url, call);
    const all = lines(file);
    expect(all).toHaveLength(14);
    const after = all.slice(7).map(asCall);
    expect(after.map((c) => c.id)).toEqual(["8", "9", "10", "11", "12", "13", "14"]);
    const memoryAfter = (await http(`${second.url}/__admin/calls`)).json.calls;
    expect(memoryAfter.map((c: { id: string }) => c.id)).toEqual(["10", "11", "12", "13", "14"]);
    expect(after.slice(2)).toEqual(memoryAfter);
    expect((await http(`${second.url}/__admin/health`)).json.calls).toBe(5);
    expect(readFileSync(file, "utf8")).not.toContain(AUTH_SECRET);
  });

  it("restarts on a file with unreadable lines in the middle: ids continue past the highest (issue 21)", async () => {
    const dir = mkdtempSync(join(tmpdir(), "journal-file-"));
    dirs.push(dir);
    const file = join(dir, "calls.ndjson");
    const args = ["--journal-file", file, "--no-watch"];
    // Bodies with line breaks, as clients send them (pretty-printed, jq -Rs): each call still one line.
    const pretty = JSON.stringify({ content: `${JSON.stringify(addAllergy(), null, 2)}\n` }, null, 2);
    const first = await startCli(args);
    expect(await send(first.url, { body: pretty })).toBe(200);
    expect(await send(first.url, { body: `${envelope(addAllergy())}\r\n` })).toBe(200);
    first.child.process.kill("SIGKILL");
    await first.child.waitForExit();
    expect(lines(file).map((l) => JSON.parse(l).id)).toEqual(["1", "2"]);

    // A call as earlier builds wrote it, split at its body's line breaks, and a line edited by hand.
    const split = `{"id":"7","highestIdIssued":"7","direction":"inbound","request":{"method":"POST","body":${pretty}},"response":null}`;
    appendFileSync(file, `${split}\nnot a call\n`);
    const second = await startCli(args);
    expect(second.child.stderr).toContain(`journal file ${file}: holds lines that are no recorded call`);
    expect(second.child.stderr).toContain("Call ids continue at 8");
    expect(await send(second.url, { body: pretty })).toBe(200);
    second.child.process.kill("SIGKILL");
    await second.child.waitForExit();

    // Those lines are in the middle now: the next start still continues after the highest id.
    const third = await startCli(args);
    const reply = await http(`${third.url}${STANDARD}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: pretty,
    });
    expect(reply.headers.get("x-sandbox-call-id")).toBe("9");
    const written = lines(file).flatMap((l) => {
      try {
        return [JSON.parse(l).id];
      } catch {
        return [];
      }
    });
    expect(written).toEqual(["1", "2", "8", "9"]);
  });
});
