import { type IncomingMessage, type ServerResponse, STATUS_CODES } from "node:http";
import type { Socket } from "node:net";
import { type Issue, operationOutcome } from "../fhir/outcome.js";
import { headerRecord } from "../journal/redact.js";
import type { Fault } from "../scenarios/schema.js";
import { jsonText } from "../text/json-text.js";
import { peerCertificateOf } from "../tls/peer-certificate.js";
import { RETRY_AFTER_S, unsavedIssue } from "../workspace/unsaved-answer.js";
import { ANSWER_HEADERS, putAnswerHeaders } from "./answer-headers.js";
import type { HostCheck } from "./browser-guard.js";
import type { CallState } from "./call-state.js";
import { newCallState } from "./call-state.js";
import { type CorsPolicy, corsAnswer } from "./cors.js";
import { type Dribble, dribbleOut } from "./dribble.js";
import { faultBody, TIMEOUT_FAULT_CAP_MS, waitUnlessGone } from "./faults.js";
import { type AnswerHeaders, FHIR_JSON, fhirAnswer } from "./fhir-response.js";
import { answerHeaders, answerText, bodyRefusal, inboundMessage, noteAnswer } from "./message-routes.js";
import { drainAfterAnswer, readIncoming } from "./node-body.js";
import { nodeHeaders, RawHeaders, rawHeader } from "./raw-headers.js";
import { announceCall, type CallOwner, callDraft, type RecorderDeps, stampCall, unsavedCall } from "./record-calls.js";
import { decideWorkspace, unknownWorkspace, unprefixedPath, type WorkspaceChoiceDeps } from "./workspace-choice.js";

// The message paths on plain node:http: the same edge as the Hono app's (host check, CORS, recorder, workspace
// choice, message route), called as functions on the Node request, without building a web Request, a Hono context
// or a web Response for each message. Hono answers everything else, and the rare requests this path declines.

export interface NodeMessageParts {
  basePath: string;
  /** The catalogue's paths under the base path (Hono's routes), each with its catalogue path. */
  paths: ReadonlyMap<string, string>;
  maxBody: number;
  responseEnvelope: boolean;
  hostCheck: HostCheck;
  /** With --cors. */
  cors: CorsPolicy | undefined;
  recorder: RecorderDeps;
  workspaceChoice: WorkspaceChoiceDeps;
  /** What the Hono app's error handler does with an error no one expected (logs it); the answer is its 500. */
  unexpected(method: string, path: string, error: unknown): Issue[];
}

export interface NodeMessages {
  /**
   * Answers a POST on a message path and returns true; returns false, having read nothing, for anything else and
   * for the rare requests it declines (then the Hono app answers as it always has).
   */
  take(incoming: IncomingMessage, outgoing: ServerResponse): boolean;
}

/**
 * A request target the Node adapter keeps as written, and Hono routes as written: no percent escapes, query,
 * fragment or dot segment (the adapter's own test, narrowed). Others are normalised through URL by the adapter:
 * declined. So is every query: `$process-message?async=true` (asynchronous messaging) is the Hono route's.
 */
const PLAIN_TARGET = /^\/[!$&-;=@-[\]_a-z~]*$/;
const DOT_SEGMENT = /\/\.\.?(?:\/|$)/;
/** A Host the adapter puts into the request URL as written (its own test): others are declined. */
const PLAIN_HOST = /^[a-z0-9._-]+(?::(?:[1-5]\d{3,4}|[6-9]\d{3}))?$/;

/** The routed path (Hono's, without a /w/{workspace} prefix) and catalogue path of a message path, else undefined. */
function messageTarget(url: string, paths: ReadonlyMap<string, string>): { routed: string; path: string } | undefined {
  const routed = unprefixedPath(url);
  const path = paths.get(routed);
  return path === undefined ? undefined : { routed, path };
}

/** The first value of a header in a raw list, as Node keeps Host (a repeated Host is dropped). */
function firstHeader(raw: readonly string[], lower: string): string | undefined {
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i] as string;
    if (name.length === lower.length && name.toLowerCase() === lower) return raw[i + 1];
  }
  return undefined;
}

/** An answer as the edge finished it, ready to be written and recorded. */
type Outgoing =
  /** An answer fhirAnswer built: its headers are known as plain objects. */
  | {
      kind: "fhir";
      status: number;
      text: string;
      headers: AnswerHeaders;
      dribble?: Dribble | undefined;
      /** The text as UTF-8, encoded once for the socket, the Content-Length and the journal. */
      bytes?: Buffer | undefined;
    }
  /**
   * An answer Hono's recorder, CORS and answerHeaders finish on a web `Headers` (a fault's, or one whose rule
   * headers fhirAnswer left alone); `headers` undefined when `Headers` refused them.
   */
  | { kind: "web"; status: number; body: string | null; headers: Headers | undefined }
  /** A fault that sends nothing: the connection is reset, or held until the client gives up, then closed. */
  | { kind: "silent"; fault: "connection-reset" | "timeout" };

export function nodeMessages(parts: NodeMessageParts): NodeMessages {
  const { recorder } = parts;

  /** An answer fhirResponse would build, else (headers it leaves alone) the one Hono's recorder finishes. */
  const fhir = (call: CallState, status: number, text: string, headers: Record<string, string>): Outgoing => {
    const plain = { "content-type": FHIR_JSON, ...headers };
    const built = fhirAnswer(call, text, plain);
    if (built) return { kind: "fhir", status, text, headers: built };
    return { kind: "web", status, body: text, headers: stamped(call, plain, true) };
  };
  const outcome = (call: CallState, status: number, issues: Issue[], headers: Record<string, string> = {}) =>
    fhir(call, status, jsonText(operationOutcome(issues)), headers);

  /** A fault staged as stageFault stages it. */
  const fault = (call: CallState, staged: Fault, status: number, headers: Record<string, string>): Outgoing => {
    call.fault = staged;
    if (staged === "connection-reset" || staged === "timeout") return { kind: "silent", fault: staged };
    const body = faultBody(staged);
    if (body !== null) call.responseText = body;
    return { kind: "web", status, body, headers: stamped(call, { "content-type": FHIR_JSON, ...headers }, false) };
  };

  async function serve(
    incoming: IncomingMessage,
    outgoing: ServerResponse,
    target: { url: string; routed: string; path: string; origin: string },
    header: (name: string) => string | undefined,
  ): Promise<void> {
    // The recorder's start: the same clock readings and call id, in the same order.
    const at = recorder.now();
    const started = recorder.monotonic();
    const call = newCallState(recorder.reserveId(), at, new RawHeaders(incoming.rawHeaders));
    const owner: CallOwner = { workspace: undefined, anonymous: false, namedWorkspace: null, events: recorder.events };
    let out: Outgoing;
    let bodyRead = false;
    try {
      const decided = decideWorkspace(parts.workspaceChoice, {
        urlPath: target.url,
        routedPath: target.routed,
        header,
        certificate: peerCertificateOf(incoming.socket),
      });
      const decision = decided instanceof Promise ? await decided : decided;
      owner.namedWorkspace = decision.namedWorkspace;
      owner.anonymous = decision.anonymous;
      if (decision.kind === "refused") {
        out = outcome(call, decision.status, decision.issues, decision.headers);
      } else if (decision.kind === "unknown") {
        out = outcome(call, 404, unknownWorkspace(decision.named));
      } else {
        owner.workspace = decision.workspace;
        const read = await readIncoming(incoming, parts.maxBody, call.headers.get("content-length"));
        bodyRead = read.ok;
        if (!read.ok) {
          const refused = bodyRefusal(read);
          out = outcome(call, refused.status, refused.issues);
        } else {
          const base = `${target.origin}${decision.prefix}${parts.basePath}`;
          const pending = decision.workspace.processMessage(
            inboundMessage(target.path, base, read.text, call, decision.access),
          );
          const answer = noteAnswer(call, pending instanceof Promise ? await pending : pending);
          if (answer.delayMs > 0) await untilGone(outgoing, answer.delayMs);
          out = answer.fault
            ? fault(call, answer.fault, answer.status, answer.headers)
            : fhir(
                call,
                answer.status,
                answerText(call, answer, parts.responseEnvelope),
                answerHeaders(answer, parts.responseEnvelope),
              );
          if (answer.dribble && out.kind === "fhir") out.dribble = answer.dribble;
        }
      }
    } catch (error) {
      out = outcome(call, 500, parts.unexpected("POST", target.routed, error));
    }
    if (!bodyRead) drainAfterAnswer(incoming, outgoing);
    if (out.kind === "silent") {
      if (out.fault === "timeout") await untilGone(outgoing, TIMEOUT_FAULT_CAP_MS);
      const socket = incoming.socket as Socket;
      // RST instead of FIN for a reset: the client sees ECONNRESET, as with a crashed peer.
      if (out.fault === "connection-reset") socket.resetAndDestroy();
      else socket.destroy();
    }
    if (out.kind === "fhir" && !out.dribble && out.text === call.responseText) {
      // Encoded once: a string answer is measured for Content-Length, joined to the head and encoded for the
      // socket, then measured and encoded again by the journal.
      out.bytes = Buffer.from(out.text, "utf8");
      call.responseBytes = out.bytes;
    }
    const durationMs = Math.round((recorder.monotonic() - started) * 1000) / 1000;
    const request = { method: "POST", url: `${target.origin}${target.url}`, path: target.url };
    try {
      const answered = out;
      const unsaved = announceCall(
        callDraft(call, durationMs, request, () => ({ status: statusOf(answered), headers: recordedOf(answered) })),
        owner,
      );
      if (unsaved) {
        // Its message could not be saved: the 503 goes out instead (a silent fault's connection is gone already).
        if (unsavedCall(call)) {
          out = outcome(call, 503, [unsavedIssue(unsaved)], { "Retry-After": String(RETRY_AFTER_S) });
        }
        const instead = out;
        announceCall(
          callDraft(call, durationMs, request, () => ({ status: statusOf(instead), headers: recordedOf(instead) })),
          owner,
        );
      }
    } catch (error) {
      // As in the Hono app: an answer whose headers `Headers` refused leaves no record, and is answered 500; what the
      // message changed is written all the same.
      owner.workspace?.unjournaled(call.id);
      out = outcome(call, 500, parts.unexpected("POST", target.routed, error));
    }
    if (out.kind === "silent") return;
    const grant = parts.cors?.takesPart(target.routed) ? grantOf(parts.cors, header) : undefined;
    write(outgoing, out, grant);
  }

  return {
    take(incoming, outgoing) {
      if (incoming.method !== "POST") return false;
      const url = incoming.url ?? "";
      if (!PLAIN_TARGET.test(url) || DOT_SEGMENT.test(url)) return false;
      const found = messageTarget(url, parts.paths);
      if (!found) return false;
      const raw = incoming.rawHeaders;
      const host = firstHeader(raw, "host");
      if (host === undefined || !PLAIN_HOST.test(host)) return false;
      // The adapter's scheme: https on a TLS socket.
      const origin = `${(incoming.socket as { encrypted?: boolean }).encrypted ? "https" : "http"}://${host}`;
      const header = (name: string) => rawHeader(raw, name);
      // A Host --allowed-hosts refuses: Hono answers the 421 (before anything is recorded).
      if (parts.hostCheck(found.routed, header, () => `${origin}${url}`) !== undefined) return false;
      // serve() answers its own errors; one past that (a bug) is logged, never an unhandled rejection.
      serve(incoming, outgoing, { url, ...found, origin }, header).catch((error: unknown) => {
        parts.unexpected("POST", found.routed, error);
        if (!outgoing.headersSent) outgoing.destroy();
      });
      return true;
    },
  };
}

/** The CORS grant of a request CORS takes part in: the allowed origin, or none (Vary only). */
function grantOf(cors: CorsPolicy, header: (name: string) => string | undefined): { origin: string | undefined } {
  const origin = header("origin");
  return { origin: cors.grants(origin) ? origin : undefined };
}

function statusOf(out: Outgoing): number {
  return out.kind === "silent" ? 0 : out.status;
}

/** The answer's headers as the journal keeps them (thrown as Hono's recorder throws when `Headers` refused them). */
function recordedOf(out: Outgoing): Record<string, string> {
  if (out.kind === "fhir") return out.headers.recorded;
  if (out.kind === "web" && out.headers) return headerRecord(out.headers);
  // Hono's recorder reads the answer's headers again, and `Headers` refuses them again.
  throw new TypeError("Headers refused the answer's headers");
}

/**
 * A web `Headers` of an answer fhirResponse did not finish, once Hono's recorder stamped it (X-Sandbox-Call-Id and
 * -Rule); undefined when `Headers` refuses it. `edge`: the answer carries ANSWER_HEADERS already.
 */
function stamped(call: CallState, init: Record<string, string>, edge: boolean): Headers | undefined {
  let headers: Headers | undefined;
  try {
    headers = new Headers(edge ? { ...init, ...ANSWER_HEADERS } : init);
    stampCall(headers, call);
  } catch {
    // As the recorder: what could not be stamped stays as it is.
  }
  return headers;
}

/**
 * Waits `ms`, or less if the client goes away first (its answer closes): the edge's delay, as the adapter's abort
 * signal ends it. A pipelined answer has no socket until those before it are sent: it waits all the same.
 */
function untilGone(outgoing: ServerResponse, ms: number): Promise<void> {
  if (outgoing.destroyed) return Promise.resolve();
  return waitUnlessGone(ms, (done) => {
    outgoing.once("close", done);
    return () => outgoing.off("close", done);
  });
}

/**
 * Writes an answer as the Node adapter writes the web Response Hono would have returned, header order included: a
 * FHIR answer's plain headers with Node's own Content-Length after Date and Connection; a web `Headers` (CORS'
 * Vary, a fault) in name order with Content-Length after them.
 */
function write(
  outgoing: ServerResponse,
  out: Exclude<Outgoing, { kind: "silent" }>,
  grant: { origin: string | undefined } | undefined,
): void {
  try {
    if (out.kind === "fhir" && out.dribble) {
      const headers = new Headers(out.headers.sent);
      if (grant) corsAnswer(headers, grant.origin);
      writeDribbled(outgoing, out.status, headers, out.text, out.dribble);
      return;
    }
    if (out.kind === "fhir" && grant === undefined) {
      writePlain(outgoing, out.status, out.headers.sent, out.bytes ?? out.text);
      return;
    }
    const headers = out.kind === "fhir" ? new Headers(out.headers.sent) : (out.headers as Headers);
    if (grant) corsAnswer(headers, grant.origin);
    if (out.kind === "web") putAnswerHeaders(headers);
    writeHeaders(outgoing, out.status, headers, out.kind === "fhir" ? (out.bytes ?? out.text) : out.body);
  } catch (error) {
    failedWrite(outgoing, out.status, error as Error);
  }
}

/**
 * A plain header record and a body (text, or its UTF-8): Node adds Content-Length itself where the adapter lets it.
 * Given to end() with the head, either goes out in one write (end corks the socket).
 */
function writePlain(
  outgoing: ServerResponse,
  status: number,
  headers: Record<string, string>,
  text: string | Buffer,
): void {
  let implicitLength = outgoing.useChunkedEncodingByDefault && status >= 200 && status !== 204 && status !== 304;
  let hasLength = false;
  for (const name in headers) {
    const lower = name.toLowerCase();
    if (lower === "content-length") hasLength = true;
    else if (lower === "transfer-encoding" || lower === "trailer") implicitLength = false;
  }
  if (hasLength || !implicitLength) {
    outgoing.writeHead(status, hasLength ? headers : { ...headers, "Content-Length": byteLength(text) });
    outgoing.end(text);
    return;
  }
  // Headers set one by one and the body given to end(): Node writes them with its Content-Length in one write.
  outgoing.statusCode = status;
  for (const name in headers) outgoing.setHeader(name, headers[name] as string);
  outgoing.end(text);
}

/**
 * A rule's dribbled answer: the headers (with the whole body's Content-Length) at once, then the body in pieces over
 * the rule's time, each its own write; stops when the client goes away.
 */
function writeDribbled(
  outgoing: ServerResponse,
  status: number,
  headers: Headers,
  text: string,
  dribble: Dribble,
): void {
  const out: Record<string, string | number> = {};
  for (const [name, value] of headers) out[name] = value;
  out["Content-Length"] = Buffer.byteLength(text);
  outgoing.writeHead(status, out);
  // Sent now, not with the first piece: the client sees the status as soon as the answer starts.
  outgoing.flushHeaders();
  dribbleOut(text, dribble, {
    write: (piece) => outgoing.write(piece),
    end: () => outgoing.end(),
    gone: (stop) => outgoing.once("close", stop),
  });
}

/** A web `Headers` as the adapter writes it: entries in name order (Set-Cookie last), then Content-Length. */
function writeHeaders(outgoing: ServerResponse, status: number, headers: Headers, body: string | Buffer | null): void {
  const out = nodeHeaders(headers);
  if (body !== null && !headers.has("content-length")) out["Content-Length"] = byteLength(body);
  outgoing.writeHead(status, out);
  if (body === null) outgoing.end();
  else outgoing.end(body);
}

const byteLength = (body: string | Buffer) => (typeof body === "string" ? Buffer.byteLength(body) : body.length);

/**
 * The adapter's answer when Node refuses to write an answer's headers: logged, 500 in plain text, connection closed.
 * Its status line keeps the reason phrase of the status it failed to write (Node's writeHead had set it).
 */
function failedWrite(outgoing: ServerResponse, status: number, error: Error): void {
  console.error(error);
  if (!outgoing.headersSent) {
    for (const name of outgoing.getHeaderNames()) outgoing.removeHeader(name);
    outgoing.statusMessage ||= STATUS_CODES[status] ?? "unknown";
    outgoing.writeHead(500, { "Content-Type": "text/plain" });
  }
  outgoing.end(`Error: ${error.message}`);
  outgoing.destroy(error);
}
