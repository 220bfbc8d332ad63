import type { AllergyIntolerance } from "fhir/r4.js";
import pino from "pino";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { createApp, type SandboxApp } from "../../src/app.js";
import { SandboxEvents } from "../../src/events.js";
import { SimulatedNetworkFault } from "../../src/http/faults.js";
import type { CallRecord } from "../../src/journal/call-record.js";
import { callEvent } from "../../src/log/call-event.js";
import { prettyLine } from "../../src/log/pretty.js";
import { createRequestLog, type LogSettings } from "../../src/log/request-log.js";
import { oneLineJson } from "../../src/text/one-line-json.js";
import { DEFAULT_WORKSPACE } from "../../src/workspace/workspace-name.js";
import { LogOutput } from "../support/log-output.js";
import { envelope, example, messageBundle, STANDARD } from "../support/messages.js";

// The request log writes a call's line itself, no longer through pino, and takes the response code the pipeline
// passed along instead of reading it from the body. The reference here is the log as it was: the call event built
// by the code below (today's, with the regex over the body), logged by a pino logger with the log's settings,
// its output made one line by oneLineJson (json) or formatted by prettyLine (pretty). Both must write the same
// text for every kind of answer, and for strings that need escaping.

const TIME = new Date("2026-01-15T09:30:00.123Z");
const QUIET = { info: () => undefined, error: () => undefined };

// --- the reference: the log's call event and pino line as they were

const RESPONSE_CODE = /\\?"response\\?"\s*:\s*\{(?:[^{}]|\{[^{}]*\})*?\\?"code\\?"\s*:\s*\\?"([a-z-]+)\\?"/;

/** The response code as the log read it from a body. */
const bodyCode = (body: string): string | null =>
  body === "" ? null : (RESPONSE_CODE.exec(body.slice(0, 8 * 1024))?.[1] ?? null);

function firstIssue(text: string): string | undefined {
  let value: unknown;
  try {
    value = JSON.parse(text);
    const content = (value as { content?: unknown } | null)?.content;
    if (typeof content === "string") value = JSON.parse(content);
  } catch {
    return undefined;
  }
  // biome-ignore lint/suspicious/noExplicitAny: the reference reads arbitrary JSON as the log did
  const v = value as any;
  const outcome =
    v?.resourceType === "OperationOutcome"
      ? v
      : v?.resourceType === "Bundle" && Array.isArray(v.entry)
        ? // biome-ignore lint/suspicious/noExplicitAny: as above
          v.entry.find((e: any) => e?.resource?.resourceType === "OperationOutcome")?.resource
        : undefined;
  const first = outcome?.issue?.[0];
  const said = first?.diagnostics ?? first?.details?.text ?? first?.code;
  if (typeof said !== "string") return undefined;
  return said.length > 240 ? `${said.slice(0, 239)}…` : said;
}

function referenceEvent(call: CallRecord) {
  const status = call.response?.status ?? null;
  const body = call.response?.body ?? "";
  const responseCode = bodyCode(body);
  const refused = status !== null && (status >= 400 || (responseCode !== null && responseCode !== "ok"));
  const issue = refused && body.length <= 64 * 1024 ? firstIssue(body) : undefined;
  return {
    event: "call",
    callId: call.id,
    ...(call.workspace !== DEFAULT_WORKSPACE ? { workspace: call.workspace } : {}),
    direction: call.direction,
    operation: call.operation,
    method: call.request.method,
    path: call.request.path,
    status,
    responseCode,
    rule: call.rule,
    ...(call.direction === "inbound"
      ? { answeredBy: call.rule ?? (call.upstream !== undefined ? "upstream" : "built-in") }
      : {}),
    durationMs: call.durationMs,
    messageId: call.messageId,
    ...(issue !== undefined ? { issue } : {}),
    ...(call.fault !== undefined ? { fault: call.fault } : {}),
    ...(call.duplicate ? { duplicate: true as const } : {}),
    // Since a fault is said once: not the error a fault that sent nothing carries ("scripted fault: …").
    ...(call.error !== undefined && call.fault === undefined ? { error: call.error } : {}),
    ...(call.pharmacy !== undefined ? { pharmacy: call.pharmacy } : {}),
    ...(call.target !== undefined ? { target: call.target } : {}),
    ...(call.attempt !== undefined ? { attempt: call.attempt } : {}),
  };
}

function referenceSummary(e: ReturnType<typeof referenceEvent>): string {
  const what = e.operation ?? `${e.method} ${e.path}`;
  const answer =
    e.status === null
      ? (e.fault ?? e.error ?? "no answer")
      : `${e.status}${e.responseCode ? ` ${e.responseCode}` : ""}`;
  return e.direction === "inbound"
    ? `IN ${what} ${answer} (${e.answeredBy})`
    : `OUT ${what} to ${e.pharmacy ?? e.target}, attempt ${e.attempt}: ${answer}`;
}

/** The lines pino wrote for these calls, with the request log's settings and formatting. */
function referenceLog(settings: LogSettings, calls: readonly CallRecord[]): string {
  let out = "";
  const destination = {
    [Symbol.for("pino.metadata")]: true,
    lastLevel: 0,
    lastTime: "",
    lastMsg: undefined as string | undefined,
    lastObj: {} as Record<string, unknown>,
    write(json: string) {
      out +=
        settings.format === "json"
          ? `${oneLineJson(json.trimEnd())}\n`
          : prettyLine(
              {
                level: this.lastLevel,
                time: this.lastTime.replaceAll('"', ""),
                msg: this.lastMsg,
                fields: this.lastObj,
              },
              settings.colours,
            );
    },
  };
  const log = pino(
    {
      level: settings.level,
      base: undefined,
      timestamp: () => `,"time":"${new Date().toISOString()}"`,
      formatters: { level: (label) => ({ level: label }) },
    },
    destination,
  );
  for (const call of calls) {
    const event = referenceEvent(call);
    log.info(event, referenceSummary(event));
  }
  return out;
}

/** The lines the request log writes for these calls now. */
function logOf(settings: LogSettings, calls: readonly CallRecord[]): string {
  const out = new LogOutput();
  const log = createRequestLog(settings, { out, err: out });
  const events = new SandboxEvents();
  log.observe(events);
  for (const call of calls) events.emit("call:recorded", call);
  log.flush();
  return out.text;
}

// --- the calls: every kind of answer, from a sandbox

const RULES = `
rules:
  - name: down
    when: { operation: add-allergy, headers: { X-Case: down } }
    respond: { status: 503, outcome: { diagnostics: "The allergy service is down; retry in 10 seconds." } }
  - name: no-message
    when: { headers: { X-Case: none } }
    respond: { status: 409, outcome: { response: none, diagnostics: "Conflict, as an OperationOutcome." } }
  - name: refuse
    when: { headers: { X-Case: fatal } }
    respond: { outcome: { response: fatal-error, diagnostics: "Refused \\"by rule\\"" } }
  - name: raw-body
    when: { headers: { X-Case: raw } }
    respond: { status: 200, body: { resourceType: Basic, response: { note: "x", code: weird-code } } }
  - name: scripted-resources
    when: { headers: { X-Case: resources } }
    respond: { resources: [{ resourceType: Basic, code: { text: scripted } }] }
  - name: reset
    when: { headers: { X-Case: reset } }
    respond: { fault: connection-reset }
  - name: empty
    when: { headers: { X-Case: empty } }
    respond: { fault: empty-body }
  - name: malformed
    when: { headers: { X-Case: malformed } }
    respond: { fault: malformed-json }
`;

const allergyText = (id?: string) =>
  envelope(
    messageBundle("add-allergy", [example<AllergyIntolerance>("allergyintolerance-example.json")], id ? { id } : {}),
  );

async function send(app: SandboxApp["app"], path: string, body: string, headers: Record<string, string> = {}) {
  try {
    const res = await app.request(path, {
      method: "POST",
      headers: { "content-type": "application/json", ...headers },
      body,
    });
    await res.text();
  } catch (error) {
    if (!(error instanceof SimulatedNetworkFault)) throw error;
  }
}

/** Calls of every kind of answer, recorded by a sandbox with these options, by what they are. */
async function recordedCalls(options: Parameters<typeof createApp>[0]): Promise<Map<string, CallRecord>> {
  const sandbox = createApp(options, { logger: QUIET });
  const calls: CallRecord[] = [];
  sandbox.sandboxEvents.on("call:recorded", (call) => calls.push(call));
  const named = new Map<string, CallRecord>();
  const as = async (name: string, sending: Promise<unknown>) => {
    await sending;
    named.set(name, calls.at(-1) as CallRecord);
  };
  const added = await sandbox.app.request("/__admin/scenarios", {
    method: "POST",
    headers: { "content-type": "text/yaml" },
    body: RULES,
  });
  expect(added.status).toBe(201);
  const { app } = sandbox;
  const resent = allergyText("resent-1");
  await as("ok", send(app, STANDARD, resent));
  await as("duplicate", send(app, STANDARD, resent));
  await as("reused id", send(app, STANDARD, allergyText("resent-1").replace("Cashew", "Peanut")));
  await as(
    "fatal-error",
    send(
      app,
      STANDARD,
      envelope(
        messageBundle("update-allergy", [
          { ...example<AllergyIntolerance>("allergyintolerance-example.json"), id: "no-such-allergy" },
        ]),
      ),
    ),
  );
  await as("not JSON", send(app, STANDARD, "this is not JSON"));
  await as("wrong content type", send(app, STANDARD, "{}", { "content-type": "text/plain" }));
  await as("transient-error", send(app, STANDARD, allergyText(), { "X-Case": "down" }));
  await as("scripted OperationOutcome", send(app, STANDARD, allergyText(), { "X-Case": "none" }));
  await as("scripted fatal-error", send(app, STANDARD, allergyText(), { "X-Case": "fatal" }));
  await as("scripted body", send(app, STANDARD, allergyText(), { "X-Case": "raw" }));
  await as("scripted resources", send(app, STANDARD, allergyText(), { "X-Case": "resources" }));
  await as("fault: reset", send(app, STANDARD, allergyText(), { "X-Case": "reset" }));
  await as("fault: empty body", send(app, STANDARD, allergyText(), { "X-Case": "empty" }));
  await as("fault: malformed", send(app, STANDARD, allergyText(), { "X-Case": "malformed" }));
  await as("another workspace", send(app, `/w/team-a${STANDARD}`, allergyText()));
  await as("GET on a message path", (async () => (await sandbox.app.request(STANDARD)).text())());
  await as(
    "no such path",
    (async () => (await sandbox.app.request("/nowhere", { method: "POST", body: "{}" })).text())(),
  );
  sandbox.close();
  return named;
}

/** Strings the line must escape as pino did. */
const ODD = [
  'say "hi"',
  "back\\slash \\",
  "new\nline\r\n",
  "tab\there",
  "line\u2028separator",
  "paragraph\u2029separator",
  "next\u0085line",
  "café ünïcode 漢字 😀",
  "lone \ud800 high",
  "lone \udc00 low",
  "ends high \ud83d",
  "\udfff starts low",
  `${"long ".repeat(30)}"\u2028\ud800 and more`,
  `${"long ".repeat(30)}plain`,
  "control \u0001\u001f\u007f",
  "</script>&<!--",
  "",
];

/** A record like `base` with `text` in every string member the line shows, its answer an OperationOutcome saying it. */
function oddVariant(base: CallRecord, text: string, n: number): CallRecord {
  const outcome = JSON.stringify({ resourceType: "OperationOutcome", issue: [{ code: "invalid", diagnostics: text }] });
  const { responseCode: _passed, ...rest } = base;
  return {
    ...rest,
    id: `${n}${text}`,
    workspace: n % 2 === 0 ? text : base.workspace,
    operation: n % 3 === 0 ? null : text,
    messageId: text,
    rule: n % 2 === 0 ? text : null,
    fault: text,
    error: text,
    upstream: n % 3 === 1 ? text : undefined,
    durationMs: [0.25, 12.5, 1234.5678, Number.NaN][n % 4] as number,
    request: { ...base.request, method: text, path: text },
    response: n % 5 === 4 ? null : { status: 400 + (n % 3) * 50, headers: {}, body: outcome },
    ...(base.direction === "outbound" ? { pharmacy: text, target: text, attempt: n } : {}),
  } as CallRecord;
}

/** A push like `base`: the receiver's answer, whose code the log reads from its body. */
function outbound(base: CallRecord, n: number): CallRecord {
  const { responseCode: _passed, ...rest } = base;
  return {
    ...rest,
    direction: "outbound",
    rule: null,
    pharmacy: `PH-${n}`,
    target: `http://pharmacy.example/${n}`,
    attempt: n,
    ...(n % 2 === 0 ? { response: null, error: "refused" } : {}),
  } as CallRecord;
}

const SETTINGS: LogSettings[] = [
  { format: "json", level: "info", colours: false },
  { format: "pretty", level: "info", colours: false },
  { format: "pretty", level: "debug", colours: true },
];

describe("the request log's line per call, written directly", () => {
  let plain: Map<string, CallRecord>;
  let wrapped: Map<string, CallRecord>;

  beforeEach(async () => {
    plain ??= await recordedCalls({});
    wrapped ??= await recordedCalls({ responseEnvelope: true, businessErrors: "http" });
    vi.useFakeTimers({ toFake: ["Date"] });
    vi.setSystemTime(TIME);
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it("takes the response code the pipeline passed along, the one the log read from the body before", () => {
    for (const [options, calls] of [
      ["default", plain],
      ["--response-envelope --business-errors http", wrapped],
    ] as const) {
      for (const [name, call] of calls) {
        const body = call.response?.body ?? "";
        expect(callEvent(call).responseCode, `${options}: ${name}`).toBe(bodyCode(body));
      }
      // What the pipeline built, it names: the body is not read for these.
      const passed = [...calls].filter(([, call]) => call.responseCode !== undefined).map(([name]) => name);
      expect(passed, options).toEqual([
        "ok",
        "duplicate",
        "reused id",
        "fatal-error",
        "not JSON",
        "wrong content type",
        "fault: reset",
        "fault: empty body",
        "fault: malformed",
        "another workspace",
      ]);
      expect(calls.get("ok")?.responseCode).toBe("ok");
      expect(calls.get("duplicate")?.responseCode).toBe("ok");
      expect(calls.get("fatal-error")?.responseCode).toBe("fatal-error");
      expect(calls.get("not JSON")?.responseCode).toBeNull();
    }
  });

  it.each(SETTINGS)("writes what pino wrote, for every kind of answer: %o", (settings) => {
    const calls = [...plain.values(), ...wrapped.values()];
    const all = [...calls, ...calls.map(outbound)];
    expect(logOf(settings, all).split("\n")).toEqual(referenceLog(settings, all).split("\n"));
  });

  it.each(SETTINGS)("writes what pino wrote, for strings that need escaping: %o", (settings) => {
    const bases = [plain.get("ok"), plain.get("fatal-error"), outbound(plain.get("ok") as CallRecord, 3)];
    const calls = ODD.flatMap((text, i) => bases.map((base, j) => oddVariant(base as CallRecord, text, i * 3 + j)));
    const written = logOf(settings, calls);
    expect(written.split("\n")).toEqual(referenceLog(settings, calls).split("\n"));
    // One line per call, whatever the strings hold.
    if (settings.format === "json")
      expect(written.split("\n").map((l) => l !== "" && JSON.parse(l).event)).toEqual([
        ...calls.map(() => "call"),
        false,
      ]);
  });
});
