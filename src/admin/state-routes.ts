import { randomUUID } from "node:crypto";
import { createReadStream, rmSync } from "node:fs";
import { Readable } from "node:stream";
import { Hono } from "hono";
import { issue } from "../fhir/outcome.js";
import type { EdgeEnv } from "../http/edge-env.js";
import { outcomeOnly } from "../http/fhir-response.js";
import type { StateFile } from "../state/state-file.js";

/**
 * GET /__admin/state/backup: a consistent copy of the state file (VACUUM INTO a file beside it, sent, then removed),
 * taken while the sandbox serves. Sandbox-wide (the file holds every workspace): the global admin token only.
 */
export function stateRoutes(state: StateFile | undefined): Hono<EdgeEnv> {
  const routes = new Hono<EdgeEnv>();
  routes.get("/backup", (c) => {
    if (!state) {
      return outcomeOnly(404, [
        issue(
          "not-found",
          "This sandbox keeps its state in memory only: there is no state file to copy. Start it with --state-file PATH (STATE_FILE) to keep state across restarts.",
        ),
      ]);
    }
    // Beside the state file: on its disk, which has room for a copy of it (a container's /tmp may not).
    const copy = `${state.path}.backup-${randomUUID()}`;
    try {
      state.backup(copy);
    } catch (error) {
      rmSync(copy, { force: true });
      return outcomeOnly(503, [issue("transient", `The state file could not be copied: ${(error as Error).message}.`)]);
    }
    const stream = createReadStream(copy);
    stream.once("close", () => rmSync(copy, { force: true }));
    const name = `sandbox-state-${new Date().toISOString().replace(/[:.]/g, "-")}.db`;
    return c.body(Readable.toWeb(stream) as ReadableStream, 200, {
      "content-type": "application/vnd.sqlite3",
      "content-disposition": `attachment; filename="${name}"`,
      "cache-control": "no-store",
    });
  });
  return routes;
}
