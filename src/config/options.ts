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
  /** Most calls the journal keeps; the oldest are dropped first. */
  journalLimit: number;
  /** An operations file that renames event codes, adds aliases or moves paths. */
  operationsFile: string | undefined;
  /** Identifier system of the Emirates IDs given to generated patients. */
  emiratesIdSystem: string;
  /** Folder (or file) of scenario YAML files; undefined for none. */
  scenarios: string | undefined;
  /** Reload scenarios when their files change. */
  watch: boolean;
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
  operationsFile: undefined,
  emiratesIdSystem: "urn:ae:emirates-id",
  scenarios: undefined,
  watch: false,
};

/** Normalises a base path: leading slash, no trailing slash, "" for none. */
export function normaliseBasePath(path: string): string {
  const trimmed = path.trim().replace(/\/+$/, "");
  if (trimmed === "") return "";
  return trimmed.startsWith("/") ? trimmed : `/${trimmed}`;
}
