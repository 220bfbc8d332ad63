import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import type { AllergyIntolerance, Bundle, OperationOutcome, Patient } from "fhir/r4.js";
import { afterEach, describe, expect, it, vi } from "vitest";
import { createApp, type SandboxApp } from "../../src/app.js";
import { type RunningServer, startServer } from "../../src/server/start-server.js";
import { EMIRATES_ID_SYSTEM, isEmiratesId } from "../support/emirates-id.js";
import { envelope, example, messageBundle, post, responseHeader, STANDARD } from "../support/messages.js";

// The magic test patients of the shipped scenarios/10-magic-patients.yaml, checked
// against the table in that file's header comment (the documentation).

const SCENARIOS = fileURLToPath(new URL("../../scenarios/", import.meta.url));
const MAGIC_FILE = `${SCENARIOS}10-magic-patients.yaml`;
const QUIET = { info: () => undefined, error: () => undefined };
const CLIENT_TIMEOUT_MS = 5_000;
const CLIENT_PATIENCE_MS = 200;

type Expected =
  | { kind: "answer"; status: number; response: "fatal-error" | "transient-error"; issue: string; retryAfter?: string }
  | { kind: "slow"; ms: number }
  | { kind: "reset" }
  | { kind: "timeout" };

interface Magic {
  id: string;
  /** Words the documented answer must contain, so the comment and this table say the same. */
  says: string[];
  rule: string;
  expected: Expected;
}

const MAGIC: Magic[] = [
  {
    id: "784-1900-0000422-7",
    says: ["200", "fatal-error", "business-rule"],
    rule: "magic-business-refusal",
    expected: { kind: "answer", status: 200, response: "fatal-error", issue: "business-rule" },
  },
  {
    id: "784-1900-0000500-0",
    says: ["500", "transient-error"],
    rule: "magic-server-error",
    expected: { kind: "answer", status: 500, response: "transient-error", issue: "exception" },
  },
  {
    id: "784-1900-0000503-4",
    says: ["503", "transient-error", "Retry-After: 5"],
    rule: "magic-unavailable",
    expected: { kind: "answer", status: 503, response: "transient-error", issue: "transient", retryAfter: "5" },
  },
  {
    id: "784-1900-0000408-6",
    says: ["normal answer", "8 seconds"],
    rule: "magic-slow",
    expected: { kind: "slow", ms: 8_000 },
  },
  {
    id: "784-1900-0000104-1",
    says: ["reset", "ECONNRESET"],
    rule: "magic-connection-reset",
    expected: { kind: "reset" },
  },
  {
    id: "784-1900-0000504-2",
    says: ["no answer", "client gives up"],
    rule: "magic-timeout",
    expected: { kind: "timeout" },
  },
];

/** The rows of the Markdown table in the file's header comment: Emirates ID → documented answer. */
function documentedTable(): Array<{ id: string; answer: string }> {
  const rows: Array<{ id: string; answer: string }> = [];
  for (const line of readFileSync(MAGIC_FILE, "utf8").split("\n")) {
    if (!line.startsWith("#")) break;
    const row = /^#\s*\|\s*(784-[\d-]+)\s*\|\s*(.+?)\s*\|\s*$/.exec(line);
    if (row) rows.push({ id: row[1] as string, answer: row[2] as string });
  }
  return rows;
}

/** The two messages each magic patient is tried with: it is named by a Patient entry, and by a reference. */
const MESSAGES = {
  "view-patient-profile": (id: string) => {
    const patient: Patient = { resourceType: "Patient", identifier: [{ system: EMIRATES_ID_SYSTEM, value: id }] };
    return messageBundle("view-patient-profile", [patient]);
  },
  "add-allergy": (id: string) => {
    const allergy: AllergyIntolerance = {
      ...example<AllergyIntolerance>("allergyintolerance-example.json"),
      patient: { identifier: { system: EMIRATES_ID_SYSTEM, value: id } },
    };
    return messageBundle("add-allergy", [allergy]);
  },
} as const;

const CASES = MAGIC.flatMap((magic) =>
  (Object.keys(MESSAGES) as Array<keyof typeof MESSAGES>).map((operation) => ({ ...magic, operation })),
);

let sandbox: SandboxApp | undefined;
let server: RunningServer | undefined;

afterEach(async () => {
  vi.useRealTimers();
  await server?.close(500);
  sandbox?.close();
  server = undefined;
  sandbox = undefined;
});

function shipped(): SandboxApp {
  sandbox = createApp({ scenarios: SCENARIOS }, { logger: QUIET });
  return sandbox;
}

async function serveShipped(): Promise<string> {
  server = await startServer(shipped(), { port: 0, host: "127.0.0.1" });
  return server.url;
}

const postOver = (url: string, bundle: Bundle, signal: AbortSignal) =>
  fetch(`${url}${STANDARD}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: envelope(bundle),
    signal,
  });

async function rejection(call: unknown): Promise<Error> {
  try {
    const answered = await call;
    throw new Error(`expected no answer, got ${String(answered)}`);
  } catch (error) {
    return error as Error;
  }
}

async function journalOf(url: string, operation: string) {
  const wait = await fetch(`${url}/__admin/calls/wait`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ operation, atLeast: 1, timeoutMs: 4_000 }),
    signal: AbortSignal.timeout(CLIENT_TIMEOUT_MS),
  });
  expect(await wait.json()).toMatchObject({ ok: true, matched: 1 });
  const list = await fetch(`${url}/__admin/calls`, { signal: AbortSignal.timeout(CLIENT_TIMEOUT_MS) });
  // biome-ignore lint/suspicious/noExplicitAny: tests read arbitrary call JSON
  return ((await list.json()) as { calls: any[] }).calls;
}

describe("magic test patients (scenarios/10-magic-patients.yaml)", () => {
  it("the header comment's table lists exactly these patients, with these answers", () => {
    const documented = documentedTable();
    expect(documented.map((r) => r.id)).toEqual(MAGIC.map((m) => m.id));
    for (const [i, magic] of MAGIC.entries()) {
      for (const word of magic.says) expect(documented[i]?.answer).toContain(word);
    }
  });

  it.each(MAGIC)("$id has a valid check digit", ({ id }) => {
    expect(isEmiratesId(id)).toBe(true);
  });
});

describe.each(CASES)("magic patient $id in $operation", ({ id, operation, rule, expected }) => {
  const bundle = () => MESSAGES[operation](id);

  if (expected.kind === "answer") {
    it(`answers ${expected.status} ${expected.response} (${expected.issue})`, async () => {
      const { app, journal } = shipped();
      const reply = await post(app, bundle());

      expect(reply.status).toBe(expected.status);
      const header = responseHeader(reply.body);
      expect(header.response?.code).toBe(expected.response);
      const outcome = reply.body.entry.find(
        (e: { resource: { resourceType: string } }) => e.resource.resourceType === "OperationOutcome",
      ).resource as OperationOutcome;
      expect(outcome.issue[0]?.code).toBe(expected.issue);
      expect(outcome.issue[0]?.diagnostics).toContain(id);
      expect(reply.headers.get("retry-after")).toBe(expected.retryAfter ?? null);
      expect(journal.list()).toMatchObject([{ rule, operation }]);
    });
  }

  if (expected.kind === "slow") {
    it(`answers normally after ${expected.ms} ms (fake timers)`, async () => {
      const { app, journal } = shipped();
      vi.useFakeTimers();
      let settled = false;
      const pending = post(app, bundle()).finally(() => {
        settled = true;
      });

      await vi.advanceTimersByTimeAsync(expected.ms - 1);
      expect(settled).toBe(false);
      await vi.advanceTimersByTimeAsync(1);
      const reply = await pending;

      expect(reply.status).toBe(200);
      expect(responseHeader(reply.body).response?.code).toBe("ok");
      expect(journal.list()).toMatchObject([{ rule, operation }]);
    });
  }

  if (expected.kind === "reset") {
    it("resets the connection (real server: the client sees ECONNRESET)", { timeout: 10_000 }, async () => {
      const url = await serveShipped();
      const error = await rejection(postOver(url, bundle(), AbortSignal.timeout(CLIENT_TIMEOUT_MS)));
      expect(error).toBeInstanceOf(TypeError);
      expect(error.cause).toMatchObject({ code: "ECONNRESET" });
      expect(await journalOf(url, operation)).toMatchObject([{ rule, fault: "connection-reset", response: null }]);
    });
  }

  if (expected.kind === "timeout") {
    it("never answers until the client gives up (real server)", { timeout: 10_000 }, async () => {
      const url = await serveShipped();
      const error = await rejection(postOver(url, bundle(), AbortSignal.timeout(CLIENT_PATIENCE_MS)));
      expect(error.name).toBe("TimeoutError");
      // Recorded once the server notices the client left.
      expect(await journalOf(url, operation)).toMatchObject([{ rule, fault: "timeout", response: null }]);
    });
  }
});
