import type { Hono } from "hono";
import { issue } from "../fhir/outcome.js";
import type { EdgeEnv } from "../http/edge-env.js";
import { jsonResponse, outcomeOnly } from "../http/fhir-response.js";
import type { Workspace } from "../workspace/workspace.js";
import type { Workspaces } from "../workspace/workspaces.js";

const seconds = (ms: number) => Math.round(ms / 1000);

/** One workspace as GET /__admin/workspaces lists it. */
function workspaceView(workspace: Workspace, workspaces: Workspaces, now: Date) {
  const named = workspaces.isNamed(workspace.id);
  const idle = now.getTime() - workspace.lastUsedAt.getTime();
  return {
    id: workspace.id,
    named,
    createdAt: workspace.createdAt.toISOString(),
    lastUsedAt: workspace.lastUsedAt.toISOString(),
    idleSeconds: seconds(idle),
    // Named workspaces stay however idle.
    dropAt: named ? null : new Date(workspace.lastUsedAt.getTime() + workspaces.settings.ttlMs).toISOString(),
    ...workspace.counts(),
    memoryEstimateBytes: workspace.memoryEstimate(),
    // What it holds against each per-workspace limit (CONTRACT §15), with the flag that sets it.
    limits: workspace.limits(),
  };
}

/** The limits that apply to the workspaces, as health and the workspaces list show them. */
const limitsOf = (workspaces: Workspaces) => ({
  max: workspaces.settings.max,
  mode: workspaces.settings.mode,
  ttlSeconds: seconds(workspaces.settings.ttlMs),
});

/**
 * What GET /__admin/health adds about workspaces: the one the request acts
 * in, and counts over all of them (never their names: health needs no token).
 */
export function workspaceHealth(workspace: Workspace, workspaces: Workspaces) {
  const all = workspaces.list();
  return {
    workspace: {
      id: workspace.id,
      createdAt: workspace.createdAt.toISOString(),
      lastUsedAt: workspace.lastUsedAt.toISOString(),
      memoryEstimateBytes: workspace.memoryEstimate(),
      limits: workspace.limits(),
    },
    workspaces: {
      count: all.length,
      ...limitsOf(workspaces),
      dropped: workspaces.dropped,
      memoryEstimateBytes: all.reduce((sum, w) => sum + w.memoryEstimate(), 0),
    },
  };
}

/**
 * GET /__admin/workspaces and DELETE /__admin/workspaces/{id} (CONTRACT
 * §13): sandbox-wide, so they take the global admin token only (admin/auth.ts).
 */
export function mountWorkspaceRoutes(admin: Hono<EdgeEnv>, deps: { workspaces: Workspaces; now(): Date }): void {
  const { workspaces } = deps;

  admin.get("/workspaces", () => {
    const now = deps.now();
    const list = workspaces.list().map((w) => workspaceView(w, workspaces, now));
    return jsonResponse({
      workspaces: list,
      count: list.length,
      memoryEstimateBytes: list.reduce((sum, w) => sum + w.memoryEstimateBytes, 0),
      limits: { ...limitsOf(workspaces), named: workspaces.named },
    });
  });

  admin.delete("/workspaces/:id", (c) => {
    const id = c.req.param("id");
    const result = workspaces.delete(id);
    if (result === "deleted") return jsonResponse({ deleted: id });
    const [status, diagnostics] =
      result === "default"
        ? ([409, "The default workspace is never dropped; clear its state with POST /__admin/reset."] as const)
        : ([404, `No workspace ${id} is held now; GET /__admin/workspaces lists them.`] as const);
    return outcomeOnly(status, [issue(result === "default" ? "business-rule" : "not-found", diagnostics)]);
  });
}
