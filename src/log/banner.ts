import { counted } from "../text/plural.js";
import type { Palette } from "./colours.js";

/** What the start banner says is on: one structured event (JSON), a block of lines (pretty). */
export interface BannerEvent {
  event: "listening";
  version: string;
  url: string;
  /** Each message path with the operations it serves, e.g. "POST http://…/fhir/$process-message (remove-allergy)". */
  messages: string[];
  basePath: string;
  scenarios: { source: string; files: number; rules: number; watch: boolean } | null;
  validation: string;
  emiratesIdCheck: string;
  journal: { limit: number; file: string | null };
  /** --state-file: where the state is kept, and the workspaces read back from it at this start; null: in memory. */
  state: { file: string; workspaces: number } | null;
  proxy: string | null;
  admin: string;
  adminToken: boolean;
  /** --auth oauth2: where clients get tokens, and the clients file; null when the message paths are open. */
  auth: { tokenEndpoint: string; clients: string | null } | null;
  /** --public-url, or null when pushes name the listening URL. */
  publicUrl: string | null;
  cors: { origins: string[]; admin: boolean } | null;
  /** --tls-cert: the server certificate's end of validity and the client-certificate mode; null over plain HTTP. */
  tls: { validTo: string; clientAuth: string; clientCa: string | null; workspaceFromCert: boolean } | null;
  dashboard: string;
  docs: string;
  log: { format: string; level: string; quiet: boolean };
}

/**
 * The banner as a person reads it.
 *
 * @example
 *   bannerText(event, "uae-fhir-sandbox 0.1.0 listening on http://localhost:8080", PLAIN)
 *   // "uae-fhir-sandbox 0.1.0 listening on http://localhost:8080\n  messages   POST http://…"
 */
export function bannerText(e: BannerEvent, headline: string, c: Palette): string {
  const s = e.scenarios;
  const rows: Array<[string, string]> = [
    ["messages", e.messages.join("\n             ")],
    ["base path", e.basePath === "" ? "none" : e.basePath],
    [
      "scenarios",
      s
        ? `${s.source}: ${counted(s.files, "file")}, ${counted(s.rules, "rule")}${s.watch ? ", reloaded when they change" : ""}`
        : "none",
    ],
    ["validation", `${e.validation} (Emirates IDs: ${e.emiratesIdCheck})`],
    [
      "journal",
      `in memory, the last ${e.journal.limit} calls${e.journal.file ? `; appended to ${e.journal.file}` : ""}`,
    ],
    [
      "state",
      e.state
        ? `kept in ${e.state.file} (${counted(e.state.workspaces, "workspace")} read back)`
        : "in memory only (lost when the sandbox stops; --state-file keeps it)",
    ],
    ["proxy", e.proxy ?? "off"],
    ["admin API", `${e.admin} (token ${e.adminToken ? "on" : "off"})`],
    ["auth", e.auth ? `OAuth2: tokens from POST ${e.auth.tokenEndpoint} (clients: ${e.auth.clients})` : "off"],
    ["public URL", e.publicUrl ?? `${e.url} (the listening URL)`],
    ["CORS", e.cors ? `${e.cors.origins.join(", ")}${e.cors.admin ? " (admin API too)" : ""}` : "off"],
    // Only when on: the banner of a plain-HTTP sandbox reads as it always has.
    ...(e.tls ? [["TLS", tlsText(e.tls)] as [string, string]] : []),
    ["dashboard", e.dashboard],
    ["docs", e.docs],
    ["log", `${e.log.format}, level ${e.log.level}${e.log.quiet ? ", no line per call (--quiet)" : ""}`],
  ];
  return [c.bold(headline), ...rows.map(([label, value]) => `  ${c.dim(label.padEnd(11))}${value}`)].join("\n");
}

function tlsText(tls: NonNullable<BannerEvent["tls"]>): string {
  const clients =
    tls.clientAuth === "none" || tls.clientCa === null
      ? "no client certificates asked for"
      : `client certificates ${tls.clientAuth} (CA ${tls.clientCa})${tls.workspaceFromCert ? ", their CN chooses the workspace" : ""}`;
  return `server certificate valid until ${tls.validTo.slice(0, 10)}; ${clients}`;
}
