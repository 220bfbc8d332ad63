import type { SandboxApp } from "../app.js";
import type { BannerEvent } from "../log/banner.js";
import type { LogFormat, LogLevel } from "../log/request-log.js";
import type { RunningServer } from "../server/start-server.js";
import { VERSION } from "../version.js";

/** Operations named beside a message path when it serves only a few (the alternate path: remove-allergy). */
const NAMED_OPERATIONS = 3;

/**
 * What the start banner says is on, from the sandbox as it runs: paths,
 * scenarios loaded, journal, proxy, token, public URL, CORS, dashboard, docs.
 */
export function bannerEvent(
  sandbox: SandboxApp,
  running: RunningServer,
  log: { format: LogFormat; level: LogLevel; quiet: boolean },
  tls?: { validTo: Date; clientAuth: string; clientCaFile: string | undefined },
): BannerEvent {
  const { options, catalogue } = sandbox;
  const base = `${running.url}${options.basePath}`;
  const messages = catalogue.paths.map((path) => {
    const served = catalogue.operations.filter((op) => op.path === path).map((op) => op.id);
    const which = served.length <= NAMED_OPERATIONS ? served.join(", ") : `${served.length} operations`;
    return `POST ${base}${path} (${which})`;
  });
  const view = sandbox.scenarios.view();
  return {
    event: "listening",
    version: VERSION,
    url: running.url,
    messages,
    basePath: options.basePath,
    scenarios:
      options.scenarios === undefined
        ? null
        : { source: options.scenarios, files: view.files.length, rules: view.rules.length, watch: options.watch },
    validation: options.validation,
    emiratesIdCheck: options.emiratesIdCheck,
    journal: { limit: options.journalLimit, file: options.journalFile ?? null },
    state: options.stateFile === undefined ? null : { file: options.stateFile, workspaces: sandbox.workspaces.size },
    proxy: options.proxy ?? null,
    admin: `${running.url}/__admin`,
    adminToken: options.adminToken !== undefined,
    auth:
      options.auth === "oauth2"
        ? { tokenEndpoint: `${options.publicUrl ?? running.url}/oauth2/token`, clients: options.clientsFile ?? null }
        : null,
    publicUrl: options.publicUrl ?? null,
    cors: options.cors.length > 0 ? { origins: options.cors, admin: options.corsAdmin } : null,
    tls: tls
      ? {
          validTo: tls.validTo.toISOString(),
          clientAuth: tls.clientAuth,
          clientCa: tls.clientCaFile ?? null,
          workspaceFromCert: options.workspaceFromCert,
        }
      : null,
    dashboard: `${running.url}/__admin/ui`,
    docs: `${base}/uae-fhir/r4/metadata (CapabilityStatement); README.md; uae-fhir-sandbox --help`,
    log,
  };
}
