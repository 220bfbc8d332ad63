import type { Context } from "hono";
import { Hono } from "hono";
import { z } from "zod";
import type { ClientsReload } from "../auth/auth.js";
import type { FailureLimit } from "../auth/failure-limit.js";
import type { ServerLimits } from "../config/server-limits.js";
import { formatProblem, type YamlProblem } from "../config/yaml-file.js";
import type { ConformanceSessions } from "../conformance/sessions-api.js";
import { parseJson } from "../envelope/json.js";
import { issue, moreIssues } from "../fhir/outcome.js";
import type { EdgeEnv } from "../http/edge-env.js";
import { jsonResponse, outcomeOnly } from "../http/fhir-response.js";
import { type BodyRead, incompleteBody, readBody } from "../http/read-body.js";
import { fromThisMachine, remoteAddress } from "../http/remote-address.js";
import { withReusableBody } from "../http/reusable-body.js";
import { issuesOfCall } from "../journal/call-issues.js";
import { callSearch } from "../journal/call-search.js";
import { callSummary } from "../journal/call-summary.js";
import { callView } from "../journal/call-view.js";
import { type CallsListing, type CallText, jsonListing, ndjsonListing } from "../journal/calls-stream.js";
import { explainCall } from "../journal/explain-call.js";
import type { Journal } from "../journal/journal.js";
import type { JournalFileStatus } from "../journal/journal-file.js";
import { REDACTED, type Redaction } from "../journal/redact.js";
import type { RefusedLog } from "../journal/refused-log.js";
import { compileExpectation, expectationSchema } from "../journal/verify.js";
import { waitUntil } from "../journal/wait.js";
import type { AllocationPolicy } from "../orders/order-book.js";
import { PUSH_MESSAGES } from "../orders/push-messages.js";
import type { PushStats } from "../push/dispatcher.js";
import type { AsyncAnswerStats } from "../push/response-delivery.js";
import { ScenarioExporter } from "../record/export-scenario.js";
import type { Catalogue } from "../routing/catalogue.js";
import { operationNames } from "../routing/operation-names.js";
import type { ScenarioFolder } from "../scenarios/scenario-folder.js";
import type { StateFile, StateFileStatus } from "../state/state-file.js";
import type { PatientSummary } from "../store/sandbox-store.js";
import { jsonText } from "../text/json-text.js";
import { oneLineJson } from "../text/one-line-json.js";
import { uiRoutes } from "../ui/ui-routes.js";
import { DEFAULT_WORKSPACE } from "../workspace/workspace-name.js";
import type { Workspaces } from "../workspace/workspaces.js";
import { type AdminScope, type AdminTokens, adminAuth, mayRead } from "./auth.js";
import { mountConformanceRoutes } from "./conformance-routes.js";
import type { LiveEvents } from "./live-events.js";
import { mountOrderRoutes } from "./order-routes.js";
import { resendRequest } from "./resend.js";
import { stateRoutes } from "./state-routes.js";
import { mountWorkspaceRoutes, workspaceHealth } from "./workspace-routes.js";

export interface AdminDeps {
  catalogue: Catalogue;
  /** The workspaces: each admin call acts on the one its request chose (CONTRACT §13), but a few on them all. */
  workspaces: Workspaces;
  /** The shared scenario files (POST /__admin/scenarios/reload reloads them for every workspace). */
  folder: ScenarioFolder;
  basePath: string;
  maxBody: number;
  /** The admin tokens (--admin-token, the workspaces' own): the same the workspace choice checks. */
  tokens: AdminTokens;
  /** Reads the clients file again (--auth oauth2): POST /__admin/clients/reload. */
  reloadClients?(): ClientsReload;
  /** Failed admin-token attempts per address: past the limit, 429. */
  tokenFailures?: FailureLimit;
  version: string;
  startedAt: Date;
  now(): Date;
  newId(): string;
  /** The event streams (GET /__admin/events), each of one workspace's events. */
  live: LiveEvents;
  /** Sends a request through the sandbox, as if it came in (POST /__admin/calls/{id}/resend). */
  resend(request: Request): Promise<Response>;
  /** Push deliveries under way, and the asynchronous answers not yet delivered (GET /__admin/health). */
  pushes(): PushStats & { asyncAnswers?: AsyncAnswerStats };
  allocation: AllocationPolicy;
  /** --business-errors: what status a scripted refusal gets by default, as the scenarios view says. */
  businessErrors?: "message" | "http";
  /** Which header values are credentials (the journal's --redact-header list): a rule's header condition on one is
   * shown `[redacted]`, as the journal shows the header. */
  redaction?: Redaction;
  /** What health shows besides the counts: the server's limits (null in-process) and the journal file's state. */
  health(): { server: ServerLimits | null; journalFile: JournalFileStatus | null; stateFile: StateFileStatus | null };
  /** The state file (--state-file), for its backup; undefined: the sandbox is in memory only. */
  stateFile?: StateFile;
  /** The calls that belong to no workspace (GET /__admin/refused). */
  refused: RefusedLog;
  /** The conformance sessions (/__admin/conformance/…); none: the routes are not served. */
  conformance?: ConformanceSessions;
}

/** The endpoints that act on the whole sandbox rather than the request's workspace. */
const sandboxWide = (path: string) =>
  path === "/__admin/workspaces" ||
  path.startsWith("/__admin/workspaces/") ||
  path === "/__admin/scenarios/reload" ||
  path === "/__admin/state/backup" ||
  path === "/__admin/clients/reload";

/**
 * What health shows a caller who may not read the workspace it asked in (CONTRACT §15): the sandbox-wide facts a
 * container health check or a monitor needs, no workspace's figures. A list of what is shown, so that a figure
 * added later stays hidden until it is put here.
 */
const OPEN_HEALTH = ["status", "version", "uptimeSeconds", "workspaces", "memory", "pushes", "liveClients", "server"];

function problem(
  status: 400 | 404 | 408 | 413,
  diagnostics: string,
  code: "invalid" | "not-found" | "too-long" | "timeout" = "invalid",
): Response {
  return outcomeOnly(status, [issue(code, diagnostics)]);
}

/** The answer to a body that was too large, or did not arrive in full. */
/** A scenario document's problem as an issue; the last of a capped list counts the rest (as the outcome's cap does). */
const problemIssue = (p: YamlProblem) =>
  p.more === undefined ? issue("invalid", formatProblem(p)) : moreIssues(p.more, "error");

const unreadBody = (read: Exclude<BodyRead, { ok: true }>): Response =>
  read.tooLarge
    ? problem(413, `The body is larger than ${read.limit} bytes (--max-body).`, "too-long")
    : problem(408, incompleteBody(read.error), "timeout");

const callQuery = z
  .object({
    operation: z.string().min(1).optional(),
    direction: z.enum(["inbound", "outbound"]).optional(),
    messageId: z.string().min(1).optional(),
    since: z
      .string()
      .refine((s) => !Number.isNaN(Date.parse(s)), "an ISO 8601 date-time, e.g. 2026-01-31T10:00:00Z")
      .transform((s) => new Date(s))
      .optional(),
    limit: z.coerce.number().int().min(1).optional(),
    order: z.enum(["asc", "desc"]).optional(),
    cursor: z
      .string()
      .regex(/^\d{1,15}$/, "a cursor is the `next` of an earlier page (0 starts at the oldest call)")
      .transform(Number)
      .optional(),
    status: z
      .string()
      .regex(/^([1-5]\d\d|[1-5]xx)$/i, "an HTTP status (404) or a class of them (4xx)")
      .optional(),
    code: z.enum(["ok", "transient-error", "fatal-error"]).optional(),
    patient: z.string().min(1).optional(),
    q: z.string().optional(),
    view: z.enum(["full", "summary"]).optional(),
    format: z.enum(["json", "ndjson"]).optional(),
  })
  .strict();

/** A listing of calls as a 200 answer: a web stream, that a Node server may write with buffers it reuses. */
const listingAnswer = (c: Context<EdgeEnv>, listing: CallsListing, headers: Record<string, string>): Response =>
  withReusableBody(c.body(listing.stream(), 200, headers), listing);

/** One line whatever the call holds (a rule name, an error with U+2028): summaries are NDJSON lines too. */
const summaryJson: CallText = (call) => oneLineJson(jsonText(callSummary(call)));

async function jsonBody(
  c: Context<EdgeEnv>,
  maxBody: number,
): Promise<{ ok: true; value: unknown } | { ok: false; response: Response }> {
  const read = await readBody(c.req.raw, maxBody);
  if (!read.ok) return { ok: false, response: unreadBody(read) };
  const parsed = parseJson(read.text === "" ? "{}" : read.text);
  if (!parsed.ok) return { ok: false, response: problem(400, `The body is not valid JSON: ${parsed.reason}.`) };
  return { ok: true, value: parsed.value };
}

const describeZod = (error: z.ZodError): string =>
  error.issues.map((i) => (i.path.length ? `${i.path.join(".")}: ${i.message}` : i.message)).join("; ");

const patientQuery = z
  .object({ q: z.string().optional(), limit: z.coerce.number().int().min(1).max(10_000).optional() })
  .strict();

const unknownCall = (id: string) =>
  problem(404, `No recorded call with id ${id}; list them with GET /__admin/calls.`, "not-found");

const resendOptions = z
  .object({
    newMessageId: z.boolean().optional().describe("give the MessageHeader a new id, so the message is processed again"),
  })
  .strict();

/** The push a pharmacy got last at `endpoint`, and how it went. */
function lastDelivery(journal: Journal, endpoint: string) {
  const [call] = journal.page({
    direction: "outbound",
    order: "desc",
    limit: 1,
    where: (c) => c.target === endpoint,
  }).calls;
  if (!call) return null;
  return {
    callId: call.id,
    at: call.at.toISOString(),
    operation: call.operation,
    attempt: call.attempt ?? null,
    status: call.response?.status ?? null,
    error: call.error ?? null,
  };
}

/**
 * The admin API (CONTRACT §9), acting on the workspace each request chose
 * (CONTRACT §13); the workspaces and the shared scenario files are
 * sandbox-wide. Admin calls are not recorded in the journal.
 */
export function adminRoutes(deps: AdminDeps): Hono<EdgeEnv> {
  const admin = new Hono<EdgeEnv>();
  // Before the token check: the dashboard's pages and assets hold no data; what they fetch needs the token.
  const tokenRequired = (c: Context<EdgeEnv>) =>
    deps.tokens.global !== undefined || deps.tokens.workspace?.(c.get("workspace").id) !== undefined;
  const workspace = (c: Context<EdgeEnv>) => {
    const { id, prefix } = c.get("workspace");
    return prefix === "" ? undefined : id;
  };
  admin.route("/ui", uiRoutes({ tokenRequired, workspace, version: deps.version }));
  // Queries name operations as rules do, and pushes too (outbound calls carry their event code).
  const names = operationNames(deps.catalogue, { pushes: true });
  const scopeOf = (c: Context): AdminScope => {
    const { id } = (c as Context<EdgeEnv>).get("workspace");
    // The refused log asked for outside any workspace is the whole sandbox's; in one, only what named it.
    const wide = sandboxWide(c.req.path) || (c.req.path === "/__admin/refused" && id === DEFAULT_WORKSPACE);
    return wide ? "sandbox" : { workspace: id };
  };
  const { tokens } = deps;
  admin.use("*", adminAuth(tokens, scopeOf, deps.tokenFailures));

  admin.route("/state", stateRoutes(deps.stateFile));

  admin.get("/health", (c) => {
    const memory = process.memoryUsage();
    const { journal, store, id } = c.get("workspace");
    const authorization = c.req.header("authorization");
    // Health answers more to a right token than to a wrong one, so it counts wrong tokens as the admin API does: an
    // address past the limit reads the open figures only, whatever it sends.
    const address = remoteAddress(c);
    const throttled = (deps.tokenFailures?.retryAfterMs(address) ?? 0) > 0;
    const local = fromThisMachine(c);
    const reads = (scope: AdminScope) => !throttled && mayRead(tokens, scope, { authorization, local });
    const wide = reads("sandbox");
    const own = reads({ workspace: id });
    if (!own && !throttled && /^Bearer\s/i.test(authorization ?? "")) deps.tokenFailures?.fail(address);
    const figures = {
      status: "ok",
      version: deps.version,
      uptimeSeconds: Math.round((deps.now().getTime() - deps.startedAt.getTime()) / 1000),
      calls: journal.size,
      // What is held against its limits, so that a long-running shared sandbox can be watched.
      journal: {
        calls: journal.size,
        maxCalls: journal.limits.maxCalls,
        bodyBytes: journal.bytes,
        maxBodyBytes: journal.limits.maxBytes,
      },
      store: store.counts(),
      ...workspaceHealth(c.get("workspace"), deps.workspaces),
      memory: {
        rssBytes: memory.rss,
        heapUsedBytes: memory.heapUsed,
        heapTotalBytes: memory.heapTotal,
        externalBytes: memory.external,
      },
      pushes: deps.pushes(),
      liveClients: deps.live.open,
      ...deps.health(),
      refused: wide ? deps.refused.counts() : { kept: deps.refused.list(id).length },
    };
    // Health needs no token; a workspace's figures need what its admin API needs.
    if (own) return jsonResponse(figures);
    return jsonResponse(Object.fromEntries(Object.entries(figures).filter(([key]) => OPEN_HEALTH.includes(key))));
  });

  // Calls that belong to no workspace (CONTRACT §15): the whole log for the sandbox's admin, else what named this one.
  admin.get("/refused", (c) => {
    const { id } = c.get("workspace");
    const wide = scopeOf(c) === "sandbox";
    const only = wide ? c.req.query("workspace") : id;
    return jsonResponse({ ...deps.refused.counts(), calls: deps.refused.list(only) });
  });

  admin.get("/operations", () =>
    jsonResponse({
      operations: deps.catalogue.operations.map((op) => ({
        id: op.id,
        area: op.area,
        scope: op.scope,
        method: "POST",
        path: `${deps.basePath}${op.path}`,
        event: op.event,
        aliases: op.aliases,
        focus: op.focus.types,
      })),
      // The messages the sandbox sends: the `operation` of outbound calls in the journal.
      pushes: PUSH_MESSAGES.map((p) => ({ id: p.id, focus: p.focus })),
    }),
  );

  admin.get("/calls", (c) => {
    const query = callQuery.safeParse(c.req.query());
    if (!query.success) return problem(400, `Bad call filter: ${describeZod(query.error)}.`);
    const { format, status, code, patient, q, view, ...pageQuery } = query.data;
    if (pageQuery.operation !== undefined) {
      const resolved = names.resolve(pageQuery.operation);
      if (!resolved.ok) return problem(400, `Bad call filter: operation: ${resolved.problem}`);
      pageQuery.operation = resolved.id;
    }
    const where = callSearch({ status, code, patient, text: q });
    const page = c.get("workspace").journal.page({ ...pageQuery, ...(where ? { where } : {}) });
    const next = page.next === null ? null : String(page.next);
    // Whole calls go in as callJson writes them, their packed bodies as bytes (CallsListing).
    const serialize = view === "summary" ? summaryJson : undefined;
    if (format === "ndjson") {
      return listingAnswer(c, ndjsonListing(page.calls, serialize), {
        "content-type": "application/x-ndjson; charset=utf-8",
        ...(next === null ? {} : { "x-sandbox-next-cursor": next }),
      });
    }
    // The same JSON as c.json would make, streamed, with bodies spliced in as serialized (callJson).
    const close = `],"next":${jsonText(next)}}`;
    return listingAnswer(c, jsonListing(page.calls, close, serialize), { "content-type": "application/json" });
  });

  // Server-sent events for the dashboard: the workspace's calls and orders, and scenario reloads, as they happen.
  admin.get("/events", (c) =>
    c.body(deps.live.stream(c.get("workspace").events), 200, {
      "content-type": "text/event-stream; charset=utf-8",
      "cache-control": "no-store",
      // Proxies such as nginx would otherwise hold events back in their buffers.
      "x-accel-buffering": "no",
    }),
  );

  admin.get("/calls/export", (c) => {
    const { journal } = c.get("workspace");
    const format = c.req.query("format") ?? "ndjson";
    const id = c.req.query("id");
    const one = id === undefined ? undefined : journal.get(id);
    if (id !== undefined && !one) return unknownCall(id);
    if (format === "scenario") {
      // The in-memory journal (or one call of it) as a scenario file, as `uae-fhir-sandbox export` makes of a journal file.
      const exporter = new ScenarioExporter();
      for (const call of one ? [one] : journal.list()) exporter.add(callView(call));
      const what = one ? `call ${one.id} of the in-memory journal` : "the in-memory journal";
      const from = `${what} of ${new URL(c.req.url).origin} (GET /__admin/calls/export?format=scenario${one ? `&id=${one.id}` : ""})`;
      return c.body(exporter.toYaml({ from, at: deps.now() }), 200, {
        "content-type": "application/yaml; charset=utf-8",
      });
    }
    if (format !== "ndjson") return problem(400, `Unknown export format ${format}: use ndjson (default) or scenario.`);
    return listingAnswer(c, ndjsonListing(one ? [one] : journal.list()), {
      "content-type": "application/x-ndjson; charset=utf-8",
    });
  });

  admin.delete("/calls", (c) => {
    const { journal, events, id } = c.get("workspace");
    const cleared = journal.size;
    journal.clear();
    events.emit("sandbox:changed", { change: "calls-cleared", workspace: id, calls: cleared });
    return jsonResponse({ cleared });
  });

  const expectation = async (c: Context<EdgeEnv>) => {
    const body = await jsonBody(c, deps.maxBody);
    if (!body.ok) return body;
    const parsed = expectationSchema.safeParse(body.value);
    if (!parsed.success)
      return { ok: false as const, response: problem(400, `Bad expectation: ${describeZod(parsed.error)}.`) };
    const compiled = compileExpectation(parsed.data, names);
    if (!compiled.ok) return { ok: false as const, response: problem(400, compiled.reason) };
    return { ok: true as const, expectation: compiled.verify, timeoutMs: parsed.data.timeoutMs };
  };

  admin.post("/calls/verify", async (c) => {
    const e = await expectation(c);
    if (!e.ok) return e.response;
    return jsonResponse(e.expectation.verify(c.get("workspace").journal.list()));
  });

  admin.post("/calls/wait", async (c) => {
    const e = await expectation(c);
    if (!e.ok) return e.response;
    // The workspace's own events and journal: calls of other workspaces never count.
    const { events, journal } = c.get("workspace");
    const calls = () => journal.list();
    const result = await waitUntil(events, e.expectation, calls, e.timeoutMs ?? 5000, c.req.raw.signal);
    return jsonResponse(result);
  });

  admin.get("/calls/:id", (c) => {
    const call = c.get("workspace").journal.get(c.req.param("id"));
    if (!call) return unknownCall(c.req.param("id"));
    // The explanation and the issues' places only here, computed when asked: listing calls stays cheap, and the
    // request path records only a trace.
    return jsonResponse({
      ...callView(call),
      explanation: explainCall(call, deps.basePath),
      issues: issuesOfCall(call),
    });
  });

  admin.post("/calls/:id/resend", async (c) => {
    const call = c.get("workspace").journal.get(c.req.param("id"));
    if (!call) return unknownCall(c.req.param("id"));
    if (call.direction !== "inbound")
      return problem(400, `Call ${call.id} is a push the sandbox sent; only inbound calls can be sent again.`);
    const body = await jsonBody(c, deps.maxBody);
    if (!body.ok) return body.response;
    const options = resendOptions.safeParse(body.value);
    if (!options.success) return problem(400, `Bad resend options: ${describeZod(options.error)}.`);
    const answer = await deps.resend(resendRequest(call, options.data.newMessageId ? deps.newId() : undefined));
    const callId = answer.headers.get("x-sandbox-call-id");
    return jsonResponse({ callId, status: answer.status }, 201);
  });

  admin.get("/patients", (c) => {
    const query = patientQuery.safeParse(c.req.query());
    if (!query.success) return problem(400, `Bad patient query: ${describeZod(query.error)}.`);
    const { q, limit = 100 } = query.data;
    const needle = q?.toLowerCase();
    // Most recently met first: the ones a person is looking at are usually the ones just used.
    const all = c.get("workspace").store.patients().reverse();
    const haystack = (p: PatientSummary) =>
      JSON.stringify([p.id, p.identifier.map((i) => i.value), p.name, p.birthDate]).toLowerCase();
    const found = needle ? all.filter((p) => haystack(p).includes(needle)) : all;
    return jsonResponse({ patients: found.slice(0, limit), total: found.length });
  });

  admin.get("/patients/:key", (c) => {
    const key = c.req.param("key");
    const state = c.get("workspace").store.state(key);
    if (!state) {
      return problem(
        404,
        `No patient with key ${key} in the sandbox yet. Keys are system|value of an identifier (URL-encoded) or an id; an unknown patient is generated on first use by a message.`,
        "not-found",
      );
    }
    return jsonResponse(state);
  });

  admin.get("/scenarios", (c) => jsonResponse(c.get("workspace").scenarios.view(deps.businessErrors, deps.redaction)));

  // The files are shared: a reload serves every workspace (and starts their counts of the files' rules afresh).
  admin.post("/scenarios/reload", (c) => {
    const result = deps.folder.reload();
    if (!result.ok) {
      return outcomeOnly(
        400,
        result.problems.map((p) =>
          p.more === undefined
            ? issue("invalid", `${formatProblem(p)} — the previous scenarios keep serving`)
            : problemIssue(p),
        ),
      );
    }
    return jsonResponse(c.get("workspace").scenarios.view(deps.businessErrors, deps.redaction));
  });

  // The clients file is the sandbox's, as the scenario files are: the global token only (sandboxWide).
  admin.post("/clients/reload", () => {
    if (!deps.reloadClients) {
      return problem(
        404,
        "There is no clients file to reload: the sandbox runs without --auth oauth2 (AUTH), so it has no clients.",
        "not-found",
      );
    }
    const result = deps.reloadClients();
    if (!result.ok) {
      return outcomeOnly(400, [issue("invalid", `${result.problem} — the previous clients file keeps serving`)]);
    }
    return jsonResponse({ reloaded: true, clients: result.clients });
  });

  admin.post("/scenarios", async (c) => {
    const workspace = c.get("workspace");
    const read = await readBody(c.req.raw, deps.maxBody);
    if (!read.ok) return unreadBody(read);
    const added = workspace.addScenario(read.text);
    // 409: the document may be fine; the workspace has no room for it (CONTRACT §15).
    if (added.refused) return outcomeOnly(409, [issue("too-costly", added.refused.diagnostics)]);
    if (!added.ok) return outcomeOnly(400, added.problems.map(problemIssue));
    return jsonResponse({ source: added.scenario.source, rules: added.scenario.rules.map((r) => r.id) }, 201);
  });

  admin.delete("/scenarios", (c) => {
    const { scenarios, events, id } = c.get("workspace");
    const removed = scenarios.clearRuntime();
    events.emit("sandbox:changed", { change: "rules-removed", workspace: id, rules: removed });
    return jsonResponse({ removed });
  });

  // Scenario states (`scenario`, `requiredState`, `newState` in rules): each scenario's state per key, this workspace's.
  admin.get("/scenarios/states", (c) => jsonResponse({ states: c.get("workspace").scenarios.states() }));

  admin.delete("/scenarios/states", (c) => {
    const scenario = c.req.query("scenario");
    const key = c.req.query("key");
    const { scenarios, events, id } = c.get("workspace");
    const removed = scenarios.resetStates({
      ...(scenario !== undefined ? { scenario } : {}),
      ...(key !== undefined ? { key } : {}),
    });
    // Said in the log and to the dashboard's live stream, as other changes by hand are.
    events.emit("sandbox:changed", {
      change: "states-reset",
      workspace: id,
      states: removed,
      scenario: scenario ?? null,
      key: key ?? null,
    });
    return jsonResponse({ reset: removed });
  });

  admin.get("/pharmacies", (c) => {
    const { pharmacies, journal } = c.get("workspace");
    return jsonResponse({
      pharmacies: pharmacies.list().map((p) => ({
        licence: p.licence,
        name: p.name ?? null,
        active: p.endpoint !== undefined,
        endpoint: p.endpoint ?? null,
        // Subscription.channel.header values are the pharmacy's credentials: names shown, values never.
        headers: Object.fromEntries(Object.keys(p.headers).map((name) => [name.toLowerCase(), REDACTED])),
        // Only when its subscription chose one: the name, never the key.
        ...(p.clientCertificate !== undefined ? { clientCertificate: p.clientCertificate } : {}),
        source: p.source,
        subscriptionId: p.subscription?.id ?? null,
        lastDelivery: p.endpoint === undefined ? null : lastDelivery(journal, p.endpoint),
      })),
    });
  });

  mountOrderRoutes(admin, { maxBody: deps.maxBody, allocation: deps.allocation });
  if (deps.conformance) mountConformanceRoutes(admin, { sessions: deps.conformance, maxBody: deps.maxBody });
  mountWorkspaceRoutes(admin, { workspaces: deps.workspaces, now: deps.now });

  admin.post("/reset", (c) => {
    c.get("workspace").reset();
    return jsonResponse({ status: "reset" });
  });

  admin.notFound((c) =>
    problem(404, `No admin endpoint ${c.req.method} ${c.req.path}. See the README's admin API table.`, "not-found"),
  );
  return admin;
}
