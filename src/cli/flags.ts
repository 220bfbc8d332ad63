import { existsSync, readFileSync } from "node:fs";
import { DEFAULT_OPTIONS, type SandboxOptions } from "../config/options.js";
import { DEFAULT_SERVER_LIMITS, type ServerLimits } from "../config/server-limits.js";
import { LOG_FORMATS, LOG_LEVELS, LOG_TIMES, type LogFormat, type LogLevel, type LogTime } from "../log/request-log.js";
import { shippedScenarios } from "../scenarios/shipped.js";
import { HEADER_NAME } from "../text/http-field.js";
import type { ClientAuth, TlsFiles } from "../tls/server-tls.js";
import { isWorkspaceName, WORKSPACE_NAME_RULE } from "../workspace/workspace-name.js";

/** How a flag's text becomes a value. */
type Kind =
  | "string"
  | "port"
  | "integer"
  | "size"
  | "duration"
  | "url"
  | "list"
  | "header-names"
  | "origins"
  | "boolean"
  | "workspaces"
  | { oneOf: readonly string[] };

export interface Flag {
  name: string;
  /** Environment variable: the flag in upper case with underscores (CONTRACT §10). */
  env: string;
  kind: Kind;
  default: string | undefined;
  help: string;
  /** One-letter form, e.g. -p for --port. */
  short?: string;
}

const flag = (name: string, kind: Kind, def: string | undefined, help: string, short?: string): Flag => ({
  name,
  env: name.toUpperCase().replaceAll("-", "_"),
  kind,
  default: def,
  help,
  ...(short !== undefined ? { short } : {}),
});

/** A default duration in whole seconds, as --help shows it ("5s"). */
const seconds = (ms: number) => `${ms / 1000}s`;

/** The serve command's flags, as one table: parsing, env vars and --help all come from it. */
export const SERVE_FLAGS: readonly Flag[] = [
  flag("port", "port", "8080", "TCP port to listen on; 0 picks a free port", "p"),
  flag("host", "string", undefined, "interface to bind, e.g. 127.0.0.1 (default: all interfaces)"),
  flag(
    "tls-cert",
    "string",
    undefined,
    "PEM certificate (then any intermediates): serve HTTPS, TLS 1.2 and later; needs --tls-key (uae-fhir-sandbox certs makes local ones)",
  ),
  flag("tls-key", "string", undefined, "PEM private key of --tls-cert (unencrypted)"),
  flag(
    "tls-port",
    "port",
    undefined,
    "serve HTTPS on this port and plain HTTP on --port, both at once (default: --port serves HTTPS alone)",
  ),
  flag(
    "tls-client-ca",
    "string",
    undefined,
    "PEM CA certificate(s) that client certificates are verified against: mutual TLS (see --tls-client-auth)",
  ),
  flag(
    "tls-client-auth",
    { oneOf: ["none", "optional", "required"] },
    undefined,
    "with --tls-client-ca: required refuses a client without a certificate the CA signed, optional lets one without a certificate in (not one with a bad certificate), none asks for none; default required",
  ),
  flag(
    "workspace-from-cert",
    "boolean",
    "false",
    "under mutual TLS without --auth oauth2: a client certificate's CN is the workspace of its messages and reads; a prefix or header naming another is refused (403)",
  ),
  flag("base-path", "string", "", "prefix for the message paths, e.g. /sandbox"),
  flag("max-body", "size", "1mb", "largest request body, in bytes or with a kb/mb unit"),
  flag(
    "headers-timeout",
    "duration",
    seconds(DEFAULT_SERVER_LIMITS.headersTimeoutMs),
    "longest a client may take to send a request's headers; then 408 and the connection closes",
  ),
  flag(
    "request-timeout",
    "duration",
    seconds(DEFAULT_SERVER_LIMITS.requestTimeoutMs),
    "longest a client may take to send a whole request, body included (not the time to answer it); then 408",
  ),
  flag(
    "keep-alive-timeout",
    "duration",
    seconds(DEFAULT_SERVER_LIMITS.keepAliveTimeoutMs),
    "an idle keep-alive connection is closed after this (Node adds about 1 s)",
  ),
  flag(
    "max-connections",
    "integer",
    String(DEFAULT_SERVER_LIMITS.maxConnections),
    "connections open at once; further ones are closed as they arrive until one ends",
  ),
  flag(
    "shutdown-grace",
    "duration",
    seconds(DEFAULT_SERVER_LIMITS.shutdownGraceMs),
    "on SIGTERM/SIGINT, how long calls in flight may take to finish before they are cut off",
  ),
  flag(
    "seed",
    "string",
    DEFAULT_OPTIONS.seed,
    "seed for generated patients and orders: the same seed gives the same data",
  ),
  flag(
    "admin-token",
    "string",
    undefined,
    "require Authorization: Bearer <token> on /__admin (but /health); visible to anyone who can run ps: prefer ADMIN_TOKEN or --admin-token-file",
  ),
  flag(
    "admin-token-file",
    "string",
    undefined,
    "read the admin token from this file (a trailing newline trimmed), e.g. a Docker or Kubernetes secret; not with --admin-token",
  ),
  flag("lenient-envelope", "boolean", "false", "also accept a bare Bundle or a Parameters resource as the body"),
  flag("response-envelope", "boolean", "false", 'wrap response messages as {"content": "<bundle string>"}'),
  flag(
    "business-errors",
    { oneOf: ["message", "http"] },
    "message",
    "business refusals as 200 fatal-error messages, or 422 (http)",
  ),
  flag(
    "journal-limit",
    "integer",
    String(DEFAULT_OPTIONS.journalLimit),
    "most calls each workspace's journal keeps; oldest dropped first",
  ),
  flag(
    "journal-max-bytes",
    "size",
    "96mb",
    "most request and response body bytes each workspace's journal keeps; oldest calls dropped first",
  ),
  flag(
    "max-patients",
    "integer",
    String(DEFAULT_OPTIONS.maxPatients),
    "patients each workspace keeps (fixtures and patients rules name are extra); the least recently used is forgotten first",
  ),
  flag(
    "max-records-per-patient",
    "integer",
    String(DEFAULT_OPTIONS.maxRecordsPerPatient),
    "records kept per patient, removed ones included; the oldest is forgotten first",
  ),
  flag(
    "max-runtime-rules",
    "integer",
    String(DEFAULT_OPTIONS.maxRuntimeRules),
    "rules each workspace may add at run time (POST /__admin/scenarios), in all; past it the document is refused (409)",
  ),
  flag(
    "max-runtime-scenario-bytes",
    "size",
    "4mb",
    "bytes of the scenario documents each workspace may add at run time, in all; past it the document is refused (409)",
  ),
  flag(
    "max-runtime-fhirpath-bytes",
    "size",
    "128kb",
    "bytes of FHIRPath (when.fhirpath, {{ fhirpath('…') }}) in the rules each workspace adds at run time, in all; past it the document is refused (409)",
  ),
  flag(
    "max-orders",
    "integer",
    String(DEFAULT_OPTIONS.maxOrders),
    "orders each workspace holds; a new one replaces the oldest finished (dispensed, expired, cancelled) one, or is refused (409) while all are open or allocated",
  ),
  flag(
    "max-pharmacies",
    "integer",
    String(DEFAULT_OPTIONS.maxPharmacies),
    "pharmacies each workspace holds; a subscription of a new licence past it is refused (a fatal-error response message)",
  ),
  flag(
    "max-async-answers",
    "integer",
    String(DEFAULT_OPTIONS.maxAsyncAnswers),
    "asynchronous answers ($process-message?async=true) each workspace holds not yet delivered (waiting for their delay, queued, in flight); a message past it is refused (429) and not processed",
  ),
  flag(
    "max-workspaces",
    "integer",
    String(DEFAULT_OPTIONS.maxWorkspaces),
    "workspaces held at once, default included; a request for a new one past it gets 503",
  ),
  flag(
    "workspace-ttl",
    "duration",
    "24h",
    "a workspace without a request for this long is dropped with its state (not default or named ones)",
  ),
  flag(
    "workspaces",
    "workspaces",
    "open",
    "open: a workspace is made on first use; fixed: only default, the clients file's and those named as fixed:a,b (open:a,b names ones kept however idle)",
  ),
  flag("operations", "string", undefined, "YAML operations file: rename event codes, add aliases, move paths"),
  flag(
    "emirates-id-system",
    "string",
    DEFAULT_OPTIONS.emiratesIdSystem,
    "identifier system of Emirates IDs (generated patients; checked in messages)",
  ),
  flag(
    "validation",
    { oneOf: ["strict", "warn", "off"] },
    DEFAULT_OPTIONS.validation,
    "R4 validation of inbound messages: strict refuses errors (400), warn answers them as warnings, off skips it",
  ),
  flag(
    "emirates-id-check",
    { oneOf: ["error", "warning", "off"] },
    DEFAULT_OPTIONS.emiratesIdCheck,
    "Emirates IDs (784-YYYY-NNNNNNN-C, Luhn check digit) under --emirates-id-system: an error, a warning, or unchecked",
  ),
  flag(
    "scenarios",
    "string",
    "./scenarios",
    "folder (or file) of scenario YAML files; without ./scenarios, the scenarios the package ships; a path that does not exist is an error",
    "s",
  ),
  flag(
    "max-scenario-file",
    "size",
    "16mb",
    "largest scenario file: a larger one is refused (YAML aliases and tags stay refused at any size)",
  ),
  flag(
    "watch",
    "boolean",
    "true",
    "reload scenarios, and the clients file of --auth oauth2, when their files change (--no-watch to turn off)",
  ),
  flag(
    "conformance",
    "string",
    undefined,
    "folder (or file) of the host's own conformance plans (YAML), besides the shipped ones; checked at start as validate --conformance checks them; a path that does not exist is an error",
  ),
  flag("confirm-deadline", "duration", "60s", "time a pharmacy has to confirm an order: ms, or with s/m"),
  flag(
    "allocation",
    { oneOf: ["first-confirmed", "best-at-deadline", "manual"] },
    "first-confirmed",
    "who gets an order: the first full confirmation, the best one at the deadline, or POST /__admin/orders/{id}/allocate",
  ),
  flag("push-timeout", "duration", "5s", "per-attempt timeout of a push to a pharmacy"),
  flag("push-attempts", "integer", "3", "attempts per push, the first included (retries on errors, timeouts, 5xx)"),
  flag("push-concurrency", "integer", "32", "pushes in flight at once, across all pharmacies"),
  flag(
    "push-allow",
    "list",
    undefined,
    "comma-separated hosts pushes may go to (exact, *.domain, *, IP, CIDR); default any host, and with --auth oauth2 no internal address it does not name",
  ),
  // Pushes over HTTPS: the client certificate they present and the CAs their receivers are verified against.
  flag(
    "push-client-cert",
    "string",
    undefined,
    "PEM client certificate every HTTPS push presents (with --push-client-key)",
  ),
  flag("push-client-key", "string", undefined, "PEM private key of --push-client-cert"),
  flag(
    "push-client-certs",
    "string",
    undefined,
    "folder of NAME.crt + NAME.key client certificates a pharmacy's subscription may choose by NAME (instead of --push-client-cert)",
  ),
  flag(
    "push-ca",
    "string",
    undefined,
    "PEM CA certificates receivers of HTTPS pushes are verified against, besides the system's",
  ),
  flag(
    "public-url",
    "url",
    undefined,
    "the sandbox's URL as pharmacies and OAuth2 clients see it: pushes' source, token issuer (default: the listening URL)",
  ),
  // Read by resolveServeConfig below but missing from the table, so --journal-file / --proxy were refused.
  flag(
    "journal-file",
    "string",
    undefined,
    "append every recorded call to this NDJSON file as it completes; numbering continues across restarts",
  ),
  flag(
    "state-file",
    "string",
    undefined,
    "keep every workspace's state in this SQLite file (patients, orders, pharmacies, rules, the journal, …) and start from it: nothing lost on a restart or a crash; off: in memory only",
  ),
  flag(
    "max-state-file",
    "size",
    "4096mb",
    "largest the state file may grow: a message that would take it past is answered 503, as on a full disk",
  ),
  flag(
    "proxy",
    "url",
    undefined,
    "upstream URL: messages no scenario rule answers are forwarded there and its answers recorded",
  ),
  flag(
    "log-format",
    { oneOf: LOG_FORMATS },
    undefined,
    "the request log: pretty (a line per call, coloured on a terminal) or json (one object per line, for log shippers); default pretty on a terminal, json otherwise",
  ),
  flag(
    "log-level",
    { oneOf: LOG_LEVELS },
    "info",
    "least severe messages shown: debug, info (a line per call and per admin action), warn (failed pushes, refused reloads, journal-file trouble), error, or silent",
  ),
  flag(
    "log-time",
    { oneOf: LOG_TIMES },
    "clock",
    "the time of the pretty lines: clock (local HH:MM:SS.mmm) or iso (ISO 8601 with the date and the UTC offset); JSON's time is always ISO 8601 in UTC",
  ),
  flag("quiet", "boolean", "false", "no line per call; the banner, admin actions, warnings and errors still", "q"),
  flag(
    "cors",
    "origins",
    undefined,
    "browser origins allowed to call the message and capability paths, comma-separated (e.g. http://localhost:3000), or * for any; off by default",
  ),
  flag("cors-admin", "boolean", "false", "the admin API answers the --cors origins too; needs --admin-token"),
  flag(
    "allowed-hosts",
    "list",
    undefined,
    "comma-separated Host names served (besides --public-url's and loopback); others get 421. Default any, but browsers reach the admin API and dashboard only by loopback, IP or --public-url (DNS rebinding)",
  ),
  flag(
    "redact-header",
    "header-names",
    undefined,
    "comma-separated header names whose values are recorded as [redacted], besides Authorization, Proxy-Authorization, Cookie, Set-Cookie, X-Api-Key and the other defaults",
  ),
  flag(
    "auth",
    { oneOf: ["off", "oauth2"] },
    "off",
    "oauth2: message paths need a bearer token from POST /oauth2/token",
  ),
  flag("clients", "string", undefined, "YAML clients file of --auth oauth2: ids, secrets or keys, scopes, workspaces"),
  flag("token-ttl", "duration", "5m", "lifetime of access tokens (--auth oauth2), rounded up to whole seconds"),
  flag(
    "token-key",
    "string",
    undefined,
    "PEM private key (RSA: RS256, P-256: ES256) that signs access tokens; default a new one per start",
  ),
];

export interface ServeConfig {
  port: number;
  host: string | undefined;
  /** HTTPS: the files to read and check at start (undefined: plain HTTP only). */
  tls: TlsFiles | undefined;
  limits: ServerLimits;
  sandbox: SandboxOptions;
  log: { format: LogFormat | undefined; level: LogLevel; time: LogTime; quiet: boolean };
}

export class UsageError extends Error {}

const SIZE = /^(\d+)\s*(b|kb|kib|mb|mib)?$/i;
const UNIT: Record<string, number> = { b: 1, kb: 1024, kib: 1024, mb: 1024 * 1024, mib: 1024 * 1024 };
/** The longest delay Node's timers take (2^31 - 1 ms, about 24.8 days): a longer one fires at once. */
const MAX_DURATION_MS = 2 ** 31 - 1;

/** Where a value came from: the flag, its environment variable, or its default. */
type Source = { flag: Flag; via: "flag" | "env" | "default" };

function convert(text: string, { flag: f, via }: Source): string | number | boolean {
  // The flag is named in every message, and the variable too when the value came from the environment.
  const from =
    via === "flag"
      ? `--${f.name} ${JSON.stringify(text)}`
      : via === "env"
        ? `${f.env} ${JSON.stringify(text)} (--${f.name})`
        : `the default of --${f.name} ${JSON.stringify(text)}`;
  const bad = (expected: string) => new UsageError(`${from}: expected ${expected}`);
  const { kind } = f;
  if (kind === "string") return text;
  if (kind === "url") {
    // Empty means none, as for the other optional flags (PUBLIC_URL= in a compose file).
    if (text === "") return "";
    let url: URL | undefined;
    try {
      url = new URL(text);
    } catch {}
    if (!url || (url.protocol !== "http:" && url.protocol !== "https:") || text.trim() !== text) {
      throw bad("an http:// or https:// URL, e.g. https://sandbox.example.ae");
    }
    // Paths are appended to it: "https://host/" and "https://host" are the same base.
    return text.replace(/\/+$/, "");
  }
  if (kind === "boolean") {
    if (/^(true|1|yes|on)$/i.test(text)) return true;
    if (/^(false|0|no|off|)$/i.test(text)) return false;
    throw bad("true or false (also 1/0, yes/no, on/off)");
  }
  if (kind === "port" || kind === "integer") {
    const n = Number(text);
    const max = kind === "port" ? 65535 : Number.MAX_SAFE_INTEGER;
    const min = kind === "port" ? 0 : 1;
    if (!/^\d+$/.test(text) || n < min || n > max)
      throw bad(kind === "port" ? "a port from 0 to 65535" : "a positive integer");
    return n;
  }
  if (kind === "list" || kind === "header-names") {
    const items = text
      .split(",")
      .map((s) => s.trim())
      .filter(Boolean);
    const badName = kind === "header-names" ? items.find((name) => !HEADER_NAME.test(name)) : undefined;
    if (badName !== undefined)
      throw bad(`header names separated by commas, e.g. X-Clinic-Key,X-Tenant (not ${JSON.stringify(badName)})`);
    return items.join(",");
  }
  if (kind === "origins") {
    if (text.trim() === "*") return "*";
    const items = text
      .split(",")
      .map((s) => s.trim().replace(/\/+$/, ""))
      .filter(Boolean);
    // An origin is scheme://host[:port], exactly as a browser sends it in the Origin header: no path.
    const badOrigin = items.find((item) => {
      try {
        const url = new URL(item);
        return (url.protocol !== "http:" && url.protocol !== "https:") || url.origin !== item;
      } catch {
        return true;
      }
    });
    if (badOrigin !== undefined || items.length === 0) {
      throw bad(
        `* or origins separated by commas, e.g. http://localhost:3000,https://ehr.example.ae${badOrigin !== undefined ? ` (not ${JSON.stringify(badOrigin)}: an origin is scheme://host[:port], no path)` : ""}`,
      );
    }
    return items.join(",");
  }
  if (kind === "duration") {
    const m = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/.exec(text.trim());
    if (!m) throw bad("a duration such as 60s, 1.5m, 24h or 500 (milliseconds)");
    const unit = (m[2] ?? "ms") as "ms" | "s" | "m" | "h";
    const n = Math.round(Number(m[1]) * ({ ms: 1, s: 1000, m: 60_000, h: 3_600_000 } as const)[unit]);
    if (n < 1) throw bad("a duration of at least 1 ms");
    if (n > MAX_DURATION_MS) throw bad(`a duration of at most ${MAX_DURATION_MS} ms (about 24 days)`);
    return n;
  }
  if (kind === "size") {
    const m = SIZE.exec(text.trim());
    if (!m) throw bad("a size such as 1048576, 512kb or 1mb");
    const n = Number(m[1]) * (UNIT[(m[2] ?? "b").toLowerCase()] ?? 1);
    if (n < 1) throw bad("a size of at least 1 byte");
    if (!Number.isSafeInteger(n)) throw bad(`a size of at most ${Number.MAX_SAFE_INTEGER} bytes`);
    return n;
  }
  if (kind === "workspaces") {
    const m = /^(open|fixed)(?::(.*))?$/.exec(text.trim());
    if (!m) throw bad("open or fixed, optionally with workspace names: fixed:team-a,team-b");
    const names = (m[2] ?? "")
      .split(",")
      .map((s) => s.trim())
      .filter(Boolean);
    const badName = names.find((name) => !isWorkspaceName(name));
    if (badName !== undefined) throw bad(`${WORKSPACE_NAME_RULE} after the colon, not ${JSON.stringify(badName)}`);
    return names.length > 0 ? `${m[1]}:${names.join(",")}` : (m[1] as string);
  }
  if (!kind.oneOf.includes(text)) throw bad(`one of ${kind.oneOf.join(", ")}`);
  return text;
}

/** One flag's value: the flag over its environment variable over its default. Throws UsageError naming it. */
export function resolveFlag(
  name: string,
  values: Record<string, string | boolean | undefined>,
  env: NodeJS.ProcessEnv,
): string | number | boolean | undefined {
  const f = SERVE_FLAGS.find((flag) => flag.name === name);
  if (!f) throw new Error(`no serve flag --${name}`);
  const given = values[f.name];
  if (given !== undefined) return convert(String(given), { flag: f, via: "flag" });
  if (env[f.env] !== undefined) return convert(env[f.env] as string, { flag: f, via: "env" });
  return f.default === undefined ? undefined : convert(f.default, { flag: f, via: "default" });
}

/**
 * Flag values (from util.parseArgs) over environment variables over defaults.
 * Throws UsageError naming the flag or variable that is wrong.
 */
export function resolveServeConfig(
  values: Record<string, string | boolean | undefined>,
  env: NodeJS.ProcessEnv,
): ServeConfig {
  const v: Record<string, string | number | boolean | undefined> = {};
  for (const f of SERVE_FLAGS) v[f.name] = resolveFlag(f.name, values, env);
  const limits: ServerLimits = {
    headersTimeoutMs: v["headers-timeout"] as number,
    requestTimeoutMs: v["request-timeout"] as number,
    keepAliveTimeoutMs: v["keep-alive-timeout"] as number,
    maxConnections: v["max-connections"] as number,
    shutdownGraceMs: v["shutdown-grace"] as number,
  };
  // Node refuses a server whose headers may take longer than the whole request.
  if (limits.headersTimeoutMs > limits.requestTimeoutMs) {
    throw new UsageError(
      `--headers-timeout (${limits.headersTimeoutMs} ms) must not be longer than --request-timeout (${limits.requestTimeoutMs} ms)`,
    );
  }
  const adminToken = adminTokenOf(
    (v["admin-token"] as string | undefined) || undefined,
    (v["admin-token-file"] as string | undefined) || undefined,
  );
  const cors = ((v.cors as string | undefined) ?? "").split(",").filter(Boolean);
  if (v["cors-admin"] === true && cors.length === 0) {
    throw new UsageError("--cors-admin needs --cors <origins>: the origins the admin API answers");
  }
  // A browser page of an allowed origin could otherwise read and reset the journal without credentials.
  if (v["cors-admin"] === true && adminToken === undefined) {
    throw new UsageError("--cors-admin needs --admin-token: the admin API is opened to browsers only behind a token");
  }
  if ((v.auth === "oauth2") !== (v.clients !== undefined && v.clients !== "")) {
    throw new UsageError(
      v.auth === "oauth2"
        ? "--auth oauth2 needs --clients FILE (CLIENTS)"
        : "--clients is read only with --auth oauth2 (AUTH)",
    );
  }
  const tls = tlsFilesOf(v);
  if (v["workspace-from-cert"] === true && (tls?.clientCaFile === undefined || tls.clientAuth === "none")) {
    throw new UsageError(
      "--workspace-from-cert needs mutual TLS: --tls-cert, --tls-key and --tls-client-ca (the CA of the client certificates)",
    );
  }
  if (v["workspace-from-cert"] === true && v.auth === "oauth2") {
    throw new UsageError(
      "--workspace-from-cert is not for --auth oauth2: there a token's client chooses the workspace (docs/auth.md)",
    );
  }
  const [workspaceMode, workspaceList = ""] = (v.workspaces as string).split(":");
  const allowedHosts = ((v["allowed-hosts"] as string | undefined) ?? "")
    .split(",")
    .map((h) => h.trim())
    .filter(Boolean);
  return {
    port: v.port as number,
    host: (v.host as string | undefined) || undefined,
    tls,
    limits,
    sandbox: {
      basePath: v["base-path"] as string,
      maxBody: v["max-body"] as number,
      seed: v.seed as string,
      adminToken,
      lenientEnvelope: v["lenient-envelope"] as boolean,
      responseEnvelope: v["response-envelope"] as boolean,
      businessErrors: v["business-errors"] as "message" | "http",
      journalLimit: v["journal-limit"] as number,
      journalMaxBytes: v["journal-max-bytes"] as number,
      maxPatients: v["max-patients"] as number,
      maxRecordsPerPatient: v["max-records-per-patient"] as number,
      maxRuntimeRules: v["max-runtime-rules"] as number,
      maxRuntimeScenarioBytes: v["max-runtime-scenario-bytes"] as number,
      maxRuntimeFhirpathBytes: v["max-runtime-fhirpath-bytes"] as number,
      maxOrders: v["max-orders"] as number,
      maxPharmacies: v["max-pharmacies"] as number,
      maxAsyncAnswers: v["max-async-answers"] as number,
      maxWorkspaces: v["max-workspaces"] as number,
      workspaceTtlMs: v["workspace-ttl"] as number,
      workspaces: workspaceMode as SandboxOptions["workspaces"],
      workspaceNames: workspaceList.split(",").filter(Boolean),
      operationsFile: (v.operations as string | undefined) || undefined,
      emiratesIdSystem: v["emirates-id-system"] as string,
      validation: v.validation as SandboxOptions["validation"],
      emiratesIdCheck: v["emirates-id-check"] as SandboxOptions["emiratesIdCheck"],
      scenarios: scenariosOf(values, env),
      maxScenarioFile: v["max-scenario-file"] as number,
      conformance: conformanceOf(v.conformance as string | undefined, values),
      watch: v.watch as boolean,
      confirmDeadlineMs: v["confirm-deadline"] as number,
      allocation: v.allocation as SandboxOptions["allocation"],
      pushTimeoutMs: v["push-timeout"] as number,
      pushAttempts: v["push-attempts"] as number,
      pushConcurrency: v["push-concurrency"] as number,
      pushBackoffMs: DEFAULT_OPTIONS.pushBackoffMs,
      pushAllow: ((v["push-allow"] as string | undefined) ?? "").split(",").filter(Boolean),
      pushClientCert: (v["push-client-cert"] as string | undefined) || undefined,
      pushClientKey: (v["push-client-key"] as string | undefined) || undefined,
      pushClientCerts: (v["push-client-certs"] as string | undefined) || undefined,
      pushCa: (v["push-ca"] as string | undefined) || undefined,
      publicUrl: (v["public-url"] as string | undefined) || undefined,
      journalFile: (v["journal-file"] as string | undefined) || undefined,
      stateFile: (v["state-file"] as string | undefined) || undefined,
      maxStateFile: v["max-state-file"] as number,
      proxy: (v.proxy as string | undefined) || undefined,
      redactHeaders: ((v["redact-header"] as string | undefined) ?? "").split(",").filter(Boolean),
      auth: v.auth as SandboxOptions["auth"],
      clientsFile: (v.clients as string | undefined) || undefined,
      tokenTtlMs: v["token-ttl"] as number,
      tokenKeyFile: (v["token-key"] as string | undefined) || undefined,
      cors,
      corsAdmin: v["cors-admin"] as boolean,
      allowedHosts: allowedHosts.length > 0 ? allowedHosts : undefined,
      mutualTls: tls?.clientCaFile !== undefined && tls.clientAuth !== "none",
      tlsCertFile: tls?.certFile,
      workspaceFromCert: v["workspace-from-cert"] as boolean,
    },
    log: {
      format: v["log-format"] as LogFormat | undefined,
      level: v["log-level"] as LogLevel,
      time: v["log-time"] as LogTime,
      quiet: v.quiet as boolean,
    },
  };
}

/**
 * The TLS flags, checked together: a key without a certificate (or the reverse), a client CA or a TLS port without
 * HTTPS, a client-auth mode without a CA, are mistakes, not settings to ignore. An empty value means not given.
 */
function tlsFilesOf(v: Record<string, string | number | boolean | undefined>): TlsFiles | undefined {
  const text = (name: string) => (v[name] as string | undefined) || undefined;
  const certFile = text("tls-cert");
  const keyFile = text("tls-key");
  const clientCaFile = text("tls-client-ca");
  const clientAuth = text("tls-client-auth") as ClientAuth | undefined;
  const port = v["tls-port"] as number | undefined;
  if (certFile === undefined || keyFile === undefined) {
    const given = certFile !== undefined ? "--tls-cert" : keyFile !== undefined ? "--tls-key" : undefined;
    if (given !== undefined) {
      throw new UsageError(
        `${given} needs ${given === "--tls-cert" ? "--tls-key" : "--tls-cert"} too: HTTPS takes a certificate and its key (uae-fhir-sandbox certs makes both)`,
      );
    }
    const without =
      clientCaFile !== undefined
        ? "--tls-client-ca"
        : clientAuth !== undefined
          ? "--tls-client-auth"
          : port !== undefined
            ? "--tls-port"
            : undefined;
    if (without !== undefined) throw new UsageError(`${without} needs HTTPS: --tls-cert and --tls-key`);
    return undefined;
  }
  if (clientCaFile === undefined && (clientAuth === "optional" || clientAuth === "required")) {
    throw new UsageError(
      `--tls-client-auth ${clientAuth} needs --tls-client-ca: the CA that client certificates are verified against`,
    );
  }
  if (port !== undefined && port !== 0 && port === v.port) {
    throw new UsageError(
      `--tls-port ${port} is --port too: give HTTPS its own port, or leave --tls-port out to serve HTTPS alone on --port`,
    );
  }
  return {
    certFile,
    keyFile,
    clientCaFile,
    clientAuth: clientAuth ?? (clientCaFile !== undefined ? "required" : "none"),
    port,
  };
}

/**
 * The scenarios to serve. Given (--scenarios, SCENARIOS), the path must exist: a mistyped one would serve no rules
 * in silence; empty means none. Not given: ./scenarios when the working folder has one (a clone), else the
 * scenarios the package ships (installed as a dependency, run with npx: no ./scenarios there).
 */
function scenariosOf(values: Record<string, string | boolean | undefined>, env: NodeJS.ProcessEnv): string | undefined {
  const f = SERVE_FLAGS.find((flag) => flag.name === "scenarios") as Flag;
  const fromFlag = values[f.name];
  const given = fromFlag !== undefined ? String(fromFlag) : env[f.env];
  if (given !== undefined) {
    if (given === "" || existsSync(given)) return given || undefined;
    const from =
      fromFlag !== undefined
        ? `--${f.name} ${JSON.stringify(given)}`
        : `${f.env} ${JSON.stringify(given)} (--${f.name})`;
    throw new UsageError(
      `${from}: no such folder or file; give a folder (or file) of scenario YAML files, or leave --${f.name} out for ./scenarios or the scenarios the package ships`,
    );
  }
  const local = f.default as string;
  return existsSync(local) ? local : (shippedScenarios() ?? local);
}

/**
 * The host's conformance plans (--conformance, CONFORMANCE): a given path must exist, as for --scenarios (a mistyped
 * one would serve the shipped plans alone, in silence); empty means none.
 */
function conformanceOf(
  given: string | undefined,
  values: Record<string, string | boolean | undefined>,
): string | undefined {
  if (given === undefined || given === "") return undefined;
  if (existsSync(given)) return given;
  const from =
    values.conformance !== undefined
      ? `--conformance ${JSON.stringify(given)}`
      : `CONFORMANCE ${JSON.stringify(given)} (--conformance)`;
  throw new UsageError(
    `${from}: no such folder or file; give a folder (or file) of conformance plan YAML files, or leave --conformance out for the shipped plans alone`,
  );
}

/**
 * The admin token, given itself (--admin-token, ADMIN_TOKEN) or in a file (--admin-token-file, ADMIN_TOKEN_FILE):
 * a command line is visible to every user of the machine (ps), a file's content is not. Throws UsageError for both,
 * or a file that cannot be read or holds no token: a sandbox meant to be closed must not start open.
 */
function adminTokenOf(given: string | undefined, file: string | undefined): string | undefined {
  if (file === undefined) return given;
  if (given !== undefined) {
    throw new UsageError(
      "--admin-token (ADMIN_TOKEN) and --admin-token-file (ADMIN_TOKEN_FILE) are both given: give the token one way",
    );
  }
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (error) {
    throw new UsageError(
      `--admin-token-file ${JSON.stringify(file)}: cannot read it (${(error as NodeJS.ErrnoException).code ?? (error as Error).message}); give a readable file holding the admin token`,
    );
  }
  const token = text.replace(/\r?\n$/, "");
  if (token.trim() === "") {
    throw new UsageError(
      `--admin-token-file ${JSON.stringify(file)} is empty: write the admin token in it (one line), e.g. openssl rand -hex 32 > ${file}`,
    );
  }
  if (/[\r\n]/.test(token)) {
    throw new UsageError(
      `--admin-token-file ${JSON.stringify(file)} holds more than one line: the admin token is its one line (a trailing newline is trimmed)`,
    );
  }
  return token;
}

/** parseArgs option declarations for the serve flags. */
export function parseArgsOptions() {
  return Object.fromEntries(
    SERVE_FLAGS.map((f) => [
      f.name,
      {
        type: f.kind === "boolean" ? ("boolean" as const) : ("string" as const),
        ...(f.short !== undefined ? { short: f.short } : {}),
      },
    ]),
  );
}

export function flagsHelp(leaveOut: readonly string[] = []): string {
  const rows = SERVE_FLAGS.filter((f) => !leaveOut.includes(f.name)).map((f) => {
    const value = f.kind === "boolean" ? "" : " <value>";
    const short = f.short !== undefined ? `-${f.short}, ` : "";
    const def = f.default !== undefined && f.default !== "" ? ` (default: ${f.default})` : "";
    return [`  ${short}--${f.name}${value}`, `${f.help}${def}. Env: ${f.env}`] as const;
  });
  const width = Math.max(...rows.map(([l]) => l.length)) + 2;
  return rows.map(([l, r]) => l.padEnd(width) + r).join("\n");
}
