import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { AllergyIntolerance, Bundle } from "fhir/r4.js";
import { afterEach, describe, expect, it, vi } from "vitest";
import { createApp, type SandboxApp, type SandboxDeps } from "../../src/app.js";
import type { SandboxOptions } from "../../src/config/options.js";
import { RecordedRequest, RecordedResponse } from "../../src/journal/kept-call.js";
import { envelope, example, messageBundle, STANDARD } from "../support/messages.js";

// A REST read of what only the journal holds (an OperationOutcome the sandbox sent) looks at the calls that carried
// its URL, not at the whole journal: an id no answer named reads no body, a journal-only resource one. The calls the
// journal's limits dropped are no longer found, those it keeps are, also after a restart on a state file.

const quiet: Partial<SandboxDeps> = { logger: { info: () => undefined, error: () => undefined } };
const open: SandboxApp[] = [];
const dirs: string[] = [];
afterEach(() => {
  vi.restoreAllMocks();
  for (const sandbox of open.splice(0)) sandbox.close();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

// Messages with X-Refuse are refused by this rule: the answer is a response message with an OperationOutcome entry
// under a RESTful fullUrl, which the workspace holds nowhere but in its journal.
const REFUSE = `
rules:
  - name: refuse
    when: { headers: { X-Refuse: "yes" } }
    respond:
      outcome: { diagnostics: "refused" }
`;

async function sandboxWith(options: Partial<SandboxOptions> = {}): Promise<SandboxApp> {
  const sandbox = createApp({ watch: false, ...options }, quiet);
  open.push(sandbox);
  const added = await sandbox.app.request("/__admin/scenarios", {
    method: "POST",
    headers: { "content-type": "application/yaml" },
    body: REFUSE,
  });
  expect(added.status).toBe(201);
  return sandbox;
}

const addAllergy = () =>
  messageBundle("add-allergy", [
    {
      ...example<AllergyIntolerance>("allergyintolerance-example.json"),
      patient: { identifier: { system: "urn:ae:emirates-id", value: "784-1990-1234567-6" } },
    } as AllergyIntolerance,
  ]);

/** Sends an add-allergy message; the path of each RESTful fullUrl of the answer, by resource type. */
async function send(sandbox: SandboxApp, refuse = false): Promise<Map<string, string>> {
  const res = await sandbox.app.request(STANDARD, {
    method: "POST",
    headers: { "content-type": "application/json", ...(refuse ? { "x-refuse": "yes" } : {}) },
    body: envelope(addAllergy()),
  });
  expect(res.status).toBe(200);
  const bundle = (await res.json()) as Bundle;
  return new Map(
    (bundle.entry ?? [])
      .filter((e) => e.fullUrl?.startsWith("http"))
      .map((e) => [e.resource?.resourceType as string, new URL(e.fullUrl as string).pathname]),
  );
}

/**
 * Counts the reads of the bodies of the calls the journal holds now (it keeps them packed: each read unpacks one);
 * not those of calls recorded later (a read is a call too, which a state file writes down, bodies and all).
 */
function countBodyReads(sandbox: SandboxApp): () => number {
  const held = new Set<object>(sandbox.journal.list().flatMap((c) => [c.request, ...(c.response ? [c.response] : [])]));
  const responses = vi.spyOn(RecordedResponse.prototype, "body", "get");
  const requests = vi.spyOn(RecordedRequest.prototype, "body", "get");
  return () =>
    [...responses.mock.contexts, ...requests.mock.contexts].filter((side) => held.has(side as object)).length;
}

const status = async (sandbox: SandboxApp, path: string) => (await sandbox.app.request(path)).status;

describe("a REST read looks only at the calls that carried the URL", () => {
  it("an id no answer named reads no body; a resource only an older answer carried, one", async () => {
    const sandbox = await sandboxWith();
    const outcome = (await send(sandbox, true)).get("OperationOutcome") as string;
    expect(outcome).toMatch(/^\/uae-fhir\/r4\/OperationOutcome\/[A-Za-z0-9\-.]+$/);
    // Newer calls that do not carry it, between it and the read.
    for (let i = 0; i < 30; i++) await send(sandbox, i % 3 === 0);
    expect(sandbox.journal.size).toBeGreaterThan(30);

    const bodies = countBodyReads(sandbox);
    expect(await status(sandbox, "/uae-fhir/r4/OperationOutcome/no-answer-named-this")).toBe(404);
    expect(await status(sandbox, "/uae-fhir/r4/Observation/no-answer-named-this/_history/1")).toBe(404);
    expect(bodies()).toBe(0);

    const read = await sandbox.app.request(outcome);
    expect(read.status).toBe(200);
    expect(((await read.json()) as { issue: Array<{ diagnostics: string }> }).issue[0]?.diagnostics).toBe("refused");
    expect(bodies()).toBe(1);
  });

  it("what the journal's limits dropped is no longer found, what it keeps is; the index holds no more calls", async () => {
    const sandbox = await sandboxWith({ journalLimit: 5 });
    const dropped = (await send(sandbox, true)).get("OperationOutcome") as string;
    const outcomes: string[] = [];
    for (let i = 0; i < 8; i++) outcomes.push((await send(sandbox, true)).get("OperationOutcome") as string);
    // The journal keeps the last 5 calls: the first message's answer went.
    expect(await status(sandbox, dropped)).toBe(404);
    // A read is a call too: read the newest first, so each read drops only calls older than the one read next.
    const kept = outcomes.slice(-2).reverse();
    for (const path of kept) expect(await status(sandbox, path), path).toBe(200);
    expect(sandbox.journal.resources.size.calls).toBeLessThanOrEqual(5);

    // Cleared with the journal.
    expect((await sandbox.app.request("/__admin/calls", { method: "DELETE" })).status).toBe(200);
    expect(sandbox.journal.resources.size).toEqual({ resources: 0, calls: 0 });
    expect(await status(sandbox, outcomes.at(-1) as string)).toBe(404);
  });

  it("a vread of a version no answer carried parses only the answers that carried the resource", async () => {
    const sandbox = await sandboxWith();
    const allergy = (await send(sandbox)).get("AllergyIntolerance") as string;
    for (let i = 0; i < 20; i++) await send(sandbox, true);
    // Version 1 is the one the store holds: no body read.
    const bodies = countBodyReads(sandbox);
    expect(await status(sandbox, `${allergy}/_history/1`)).toBe(200);
    expect(bodies()).toBe(0);
    // Version 2 never was: the one answer that carried the allergy is looked in, no other.
    expect(await status(sandbox, `${allergy}/_history/2`)).toBe(404);
    expect(bodies()).toBe(1);
  });

  it("a journal restored from a state file is indexed again: its answers' resources are read after a restart", async () => {
    const dir = mkdtempSync(join(tmpdir(), "rest-read-index-"));
    dirs.push(dir);
    const file = join(dir, "state.db");
    const first = await sandboxWith({ stateFile: file });
    const outcome = (await send(first, true)).get("OperationOutcome") as string;
    expect(await status(first, outcome)).toBe(200);
    first.close();
    open.splice(open.indexOf(first), 1);

    const second = createApp({ watch: false, stateFile: file }, quiet);
    open.push(second);
    expect(second.journal.resources.size.calls).toBeGreaterThan(0);
    const bodies = countBodyReads(second);
    expect(await status(second, outcome)).toBe(200);
    expect(bodies()).toBe(1);
  });
});
