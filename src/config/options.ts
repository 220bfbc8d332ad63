/** What the sandbox app is configured with (the server's port and host live in the CLI). */
export interface SandboxOptions {
  /** Prefix of every message path, e.g. "/sandbox"; "" for none. */
  basePath: string;
  /** Largest request body accepted, in bytes (CONTRACT §2: 1 MiB). */
  maxBody: number;
  /** Seed of generated data: the same seed and patient key give the same data. */
  seed: string;
  /** When set, the admin API (but /health) needs `Authorization: Bearer <token>`. */
  adminToken: string | undefined;
  /** Also accept a bare Bundle or a Parameters resource as the body. */
  lenientEnvelope: boolean;
  /** Wrap response messages as {"content": "<bundle string>"}. */
  responseEnvelope: boolean;
  /** Business refusals as a 200 response message, or as 422 ("http"). */
  businessErrors: "message" | "http";
  /** Most calls each workspace's journal keeps; the oldest are dropped first. */
  journalLimit: number;
  /** Most body bytes (UTF-8) each workspace's journal keeps; the oldest calls are dropped first. */
  journalMaxBytes: number;
  /**
   * Patients each workspace's store keeps besides fixtures and patients scenario rules name; the least recently
   * used goes first.
   */
  maxPatients: number;
  /** Records kept per patient; the oldest goes first. */
  maxRecordsPerPatient: number;
  /** Rules each workspace may add at run time (POST /__admin/scenarios), in all (CONTRACT §15). */
  maxRuntimeRules: number;
  /** UTF-8 bytes of the scenario documents each workspace may add at run time, in all. */
  maxRuntimeScenarioBytes: number;
  /** UTF-8 bytes of FHIRPath in the rules each workspace adds at run time, in all (the costliest part of a rule). */
  maxRuntimeFhirpathBytes: number;
  /** Orders each workspace holds; a new one past it replaces the oldest finished one, or is refused. */
  maxOrders: number;
  /** Pharmacies each workspace holds (subscribed, or fixtures of runtime scenarios; the files' fixtures count too). */
  maxPharmacies: number;
  /**
   * Asynchronous answers ($process-message?async=true) each workspace holds not yet delivered (waiting for their
   * delay, queued, in flight); a message past it is refused 429 and not processed.
   */
  maxAsyncAnswers: number;
  /** Workspaces held at once, the default one included (CONTRACT §13). */
  maxWorkspaces: number;
  /** A workspace without a request for this long is dropped with its state, unless it is named. */
  workspaceTtlMs: number;
  /** open: a workspace is made on first use; fixed: only default and the named ones exist. */
  workspaces: "open" | "fixed";
  /** Workspaces named at start (--workspaces fixed:a,b), besides those of the clients file: kept however idle. */
  workspaceNames: string[];
  /** An operations file that renames event codes, adds aliases or moves paths. */
  operationsFile: string | undefined;
  /** Identifier system of Emirates IDs: given to generated patients, checked in messages. */
  emiratesIdSystem: string;
  /** R4 validation of inbound messages: errors refuse (strict), come back as warnings (warn), or are not looked for (off). */
  validation: "strict" | "warn" | "off";
  /** Emirates IDs that break the format or the Luhn check digit: an error, a warning, or unchecked. */
  emiratesIdCheck: "error" | "warning" | "off";
  /** Folder (or file) of scenario YAML files; undefined for none. */
  scenarios: string | undefined;
  /** Largest scenario file, bytes: a larger one is refused (the YAML alias and tag protections apply at any size). */
  maxScenarioFile: number;
  /** Reload scenarios when their files change. */
  watch: boolean;
  /** Folder (or file) of a host's own conformance plans, besides the shipped ones; undefined: the shipped ones alone. */
  conformance: string | undefined;
  /** Time a pharmacy has to confirm an order. */
  confirmDeadlineMs: number;
  /** Which confirming pharmacy gets the order. */
  allocation: "first-confirmed" | "best-at-deadline" | "manual";
  /** Per-attempt timeout of a push. */
  pushTimeoutMs: number;
  /** Attempts per push, the first included. */
  pushAttempts: number;
  /** Pushes in flight at once. */
  pushConcurrency: number;
  /** First retry backoff; doubles per retry, with jitter. */
  pushBackoffMs: number;
  /** Hosts pushes may go to (exact, *.domain, or *); empty allows any. */
  pushAllow: string[];
  /** PEM client certificate every HTTPS push presents (with pushClientKey); undefined: none. */
  pushClientCert: string | undefined;
  /** PEM private key of pushClientCert. */
  pushClientKey: string | undefined;
  /** Folder of NAME.crt + NAME.key client certificates a subscription may choose by NAME; undefined: none. */
  pushClientCerts: string | undefined;
  /** PEM CA certificates receivers of HTTPS pushes are verified against, besides the system's; undefined: system only. */
  pushCa: string | undefined;
  /** Upstream base URL: messages no scenario rule answers are forwarded there and recorded. */
  proxy: string | undefined;
  /** Append every recorded call to this NDJSON file as it completes. */
  journalFile: string | undefined;
  /** Keep every workspace's state in this SQLite file (node:sqlite), read back at start; undefined: in memory only. */
  stateFile: string | undefined;
  /** The state file may not grow past this (bytes): a write past it is refused as on a full disk. */
  maxStateFile: number;
  /** The sandbox's URL as pharmacies see it (source of pushes); default the listening URL. */
  publicUrl: string | undefined;
  /** Header names whose values the journal redacts, besides the defaults (Authorization, Cookie, X-Api-Key, …). */
  redactHeaders: string[];
  /** Browser origins allowed to call the message and capability paths (CORS); ["*"] for any; empty for none. */
  cors: string[];
  /** The admin API answers those origins too; needs an admin token. */
  corsAdmin: boolean;
  /**
   * Host header names served (exact, case-insensitive, port ignored), besides --public-url's and loopback ones;
   * another is refused 421. Undefined: any, but a browser reaches the admin API only by a loopback name, an IP
   * address or --public-url's host (DNS rebinding).
   */
  allowedHosts: string[] | undefined;
  /**
   * Under mutual TLS without OAuth2: a verified client certificate's CN is the workspace of its messages and reads
   * (a prefix or header naming another is refused 403), as a token's client is under OAuth2.
   */
  /**
   * The server asks clients for certificates (the CLI's --tls-client-ca): under OAuth2, discovery offers RFC 8705's
   * tls_client_auth and certificate-bound tokens at an HTTPS token endpoint (its own, or as mtls_endpoint_aliases
   * when read over plain HTTP). In-process no request has a certificate.
   */
  mutualTls: boolean;
  /**
   * The server certificate's file (the CLI's --tls-cert): a certificate of pushClientCerts equal to it is never
   * offered, so no subscription can make a push prove possession of the HTTPS server's key.
   */
  tlsCertFile: string | undefined;
  workspaceFromCert: boolean;
  /** Simulated OAuth2 on the message paths (CONTRACT §13), or none. */
  auth: "off" | "oauth2";
  /** The OAuth2 clients (YAML); required with auth oauth2. */
  clientsFile: string | undefined;
  /** Lifetime of access tokens. */
  tokenTtlMs: number;
  /** PEM private key that signs access tokens; undefined: a fresh key at each start. */
  tokenKeyFile: string | undefined;
}

export const DEFAULT_OPTIONS: SandboxOptions = {
  basePath: "",
  maxBody: 1024 * 1024,
  seed: "uae-fhir-sandbox",
  adminToken: undefined,
  lenientEnvelope: false,
  responseEnvelope: false,
  businessErrors: "message",
  journalLimit: 10_000,
  journalMaxBytes: 96 * 1024 * 1024,
  maxPatients: 1_000,
  maxRecordsPerPatient: 50,
  // A team's test runs: hundreds of rules (the shipped ones average 90 bytes of FHIRPath, 900 of text), four
  // documents of --max-body, a day's orders, the pharmacies its tests subscribe. Heap at these (memory-estimate.ts):
  // runtime scenarios at most about 30 MiB, 1,000 orders 6.3 MiB (to one pharmacy each; 200 MiB to 100 each), 100
  // pharmacies 0.1 MiB.
  maxRuntimeRules: 500,
  maxRuntimeScenarioBytes: 4 * 1024 * 1024,
  maxRuntimeFhirpathBytes: 128 * 1024,
  maxOrders: 1_000,
  maxPharmacies: 100,
  // A test suite's asynchronous messages waiting for their answers at once; each holds a response message's body.
  maxAsyncAnswers: 50,
  maxWorkspaces: 1_000,
  workspaceTtlMs: 24 * 60 * 60_000,
  workspaces: "open",
  workspaceNames: [],
  operationsFile: undefined,
  emiratesIdSystem: "urn:ae:emirates-id",
  validation: "strict",
  emiratesIdCheck: "error",
  scenarios: undefined,
  // Room for a 10,000-rule file (2.6 MB) or a large recorded export.
  maxScenarioFile: 16 * 1024 * 1024,
  watch: false,
  conformance: undefined,
  confirmDeadlineMs: 60_000,
  allocation: "first-confirmed",
  pushTimeoutMs: 5_000,
  pushAttempts: 3,
  pushConcurrency: 32,
  pushBackoffMs: 500,
  pushAllow: [],
  pushClientCert: undefined,
  pushClientKey: undefined,
  pushClientCerts: undefined,
  pushCa: undefined,
  publicUrl: undefined,
  journalFile: undefined,
  stateFile: undefined,
  maxStateFile: 4 * 1024 * 1024 * 1024,
  proxy: undefined,
  redactHeaders: [],
  cors: [],
  corsAdmin: false,
  allowedHosts: undefined,
  mutualTls: false,
  tlsCertFile: undefined,
  workspaceFromCert: false,
  auth: "off",
  clientsFile: undefined,
  tokenTtlMs: 5 * 60_000,
  tokenKeyFile: undefined,
};

/** Normalises a base path: leading slash, no trailing slash, "" for none. */
export function normaliseBasePath(path: string): string {
  const trimmed = path.trim().replace(/\/+$/, "");
  if (trimmed === "") return "";
  return trimmed.startsWith("/") ? trimmed : `/${trimmed}`;
}
