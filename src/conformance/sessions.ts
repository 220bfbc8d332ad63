import type { SandboxChange, SandboxEvents } from "../events.js";
import { type Issue, issue } from "../fhir/outcome.js";
import { hostAllowed, literalAddressRefusal, pushableScheme } from "../push/push-allow.js";
import type { Workspace } from "../workspace/workspace.js";
import { registerPharmacy } from "./kinds/receiver.js";
import type { StepKindName } from "./plan-schema.js";
import { Session } from "./session.js";
import type { ConformanceSessions, LoadedPlan, SessionRequest, StartResult } from "./sessions-api.js";
import type { ConformanceSandbox, StepRun } from "./step-context.js";

/** The receiver role's licence when the request names none. */
export const DEFAULT_PHARMACY_LICENCE = "PH-CONFORMANCE-0001";
/** Finished sessions kept per workspace, for their reports. */
const KEPT_PER_WORKSPACE = 5;
export const TIME_SCALE = { min: 0.01, max: 10 } as const;

export interface SessionsDeps {
  /** The plans a session may run (shipped, and a host's own). */
  plans(): readonly LoadedPlan[];
  sandbox: ConformanceSandbox;
  kinds: Partial<Record<StepKindName, StepRun>>;
  /** The sandbox-wide bus: a reset or a dropped workspace stops its session. */
  events: SandboxEvents;
  /** --push-allow, and whether internal addresses are refused (--auth oauth2): a pharmacyUrl is checked as a Subscription endpoint is. */
  pushAllow: readonly string[];
  guardAddresses: boolean;
}

const bad = (field: string, message: string): StartResult => ({
  ok: false,
  status: 400,
  issues: [issue("value", `${field}: ${message}`)],
});

/** Why a session stops when its workspace changes by hand; undefined: it goes on. */
function stopReason(change: SandboxChange): string | undefined {
  if (change.change === "reset") return "the workspace was reset";
  if (change.change === "workspace-deleted") return "the workspace was deleted";
  if (change.change === "workspace-dropped") return "the workspace was dropped for idleness";
  return undefined;
}

/**
 * The conformance sessions of a sandbox: at most one running per workspace, each stopped by a reset or the drop
 * of its workspace, and all by `close`. Costs nothing per message while none runs: a session's watch listens only
 * while it runs.
 */
export function createConformanceSessions(deps: SessionsDeps): ConformanceSessions {
  /** Each workspace's sessions, newest first. */
  const byWorkspace = new Map<string, Session[]>();
  const running = new Map<string, Session>();
  deps.events.on("sandbox:changed", (change) => {
    const reason = stopReason(change);
    if (!reason) return;
    running.get(change.workspace)?.stop(reason);
    if (change.change !== "reset") byWorkspace.delete(change.workspace);
  });

  const check = (request: SessionRequest): { issues: Issue[]; plan?: LoadedPlan } | StartResult => {
    if (request.role !== "sender" && request.role !== "receiver") {
      return bad("role", `${JSON.stringify(request.role ?? null)} is not a role: give "sender" or "receiver"`);
    }
    if (request.timeScale !== undefined) {
      const scale = request.timeScale;
      if (typeof scale !== "number" || !Number.isFinite(scale) || scale < TIME_SCALE.min || scale > TIME_SCALE.max) {
        return bad(
          "timeScale",
          `${String(scale)} is out of range: give a number from ${TIME_SCALE.min} to ${TIME_SCALE.max}`,
        );
      }
    }
    if (request.operations !== undefined) {
      const known = new Set(deps.sandbox.operationIds());
      for (const [i, op] of request.operations.entries()) {
        if (!known.has(op))
          return bad(
            `operations[${i}]`,
            `${JSON.stringify(op)} is not an operation of this sandbox (GET /__admin/operations lists them)`,
          );
      }
    }
    if (request.pharmacyUrl !== undefined) {
      const url = request.pharmacyUrl;
      if (!pushableScheme(url)) return bad("pharmacyUrl", `${JSON.stringify(url)} is not an http:// or https:// URL`);
      if (!hostAllowed(url, deps.pushAllow)) {
        return bad(
          "pharmacyUrl",
          `the sandbox may not push to ${new URL(url).host}: allowed hosts are ${deps.pushAllow.join(", ")} (--push-allow)`,
        );
      }
      const internal = deps.guardAddresses ? literalAddressRefusal(url, deps.pushAllow) : null;
      if (internal) return bad("pharmacyUrl", `the sandbox will not push to ${url}: ${internal}`);
    }
    if (
      request.pharmacyLicence !== undefined &&
      (typeof request.pharmacyLicence !== "string" || request.pharmacyLicence.trim() === "")
    ) {
      return bad("pharmacyLicence", "give the pharmacy's licence, a non-empty string");
    }
    const plans = deps.plans();
    let plan: LoadedPlan | undefined;
    if (request.plan !== undefined) {
      plan = plans.find((p) => p.plan.id === request.plan);
      if (!plan) {
        return bad(
          "plan",
          `no plan ${JSON.stringify(request.plan)}; the plans are ${plans.map((p) => p.plan.id).join(", ") || "none"}`,
        );
      }
      if (plan.plan.role !== request.role) {
        return bad("plan", `plan ${plan.plan.id} is a ${plan.plan.role} plan, not one for the ${request.role} role`);
      }
    } else {
      const ofRole = plans.filter((p) => p.plan.role === request.role);
      plan = ofRole.find((p) => p.plan.id === request.role) ?? ofRole[0];
      if (!plan) return bad("plan", `no plan for the ${request.role} role is loaded`);
    }
    return { issues: [], plan };
  };

  return {
    plans: () => deps.plans(),
    start(workspace: Workspace, request: SessionRequest): StartResult {
      const checked = check(request);
      if ("ok" in checked) return checked;
      const plan = checked.plan as LoadedPlan;
      const busy = running.get(workspace.id);
      if (busy) {
        return {
          ok: false,
          status: 409,
          issues: [
            issue(
              "conflict",
              `A conformance session (${busy.id}) runs in this workspace already: wait for its end, or stop it with DELETE ${workspace.prefix}/__admin/conformance/sessions/${busy.id}.`,
            ),
          ],
        };
      }
      const receiver = request.role === "receiver";
      const facts = {
        id: deps.sandbox.newId(),
        role: request.role,
        // Each once: a list that names one a thousand times costs no more than one that names it once.
        operations: request.role === "sender" ? [...new Set(request.operations ?? [])] : [],
        pharmacyUrl: receiver ? (request.pharmacyUrl ?? null) : null,
        // Without a URL the pharmacy subscribes itself, and its licence is the one it subscribes with.
        pharmacyLicence: receiver
          ? (request.pharmacyLicence ?? (request.pharmacyUrl !== undefined ? DEFAULT_PHARMACY_LICENCE : null))
          : null,
        timeScale: request.timeScale ?? 1,
      };
      // The pharmacy's endpoint is registered in the workspace (as a subscription would make it) before the run.
      const releases: Array<() => void> = [];
      const refused = registerPharmacy(
        { session: facts, workspace, onEnd: (release) => releases.push(release) },
        { allow: deps.pushAllow, guardAddresses: deps.guardAddresses },
      );
      if (refused) return { ok: false, status: 400, issues: [refused] };
      const session = new Session({
        facts,
        plan,
        workspace,
        sandbox: deps.sandbox,
        kinds: deps.kinds,
      });
      // The pharmacy registered for the session goes when it ends, however it ends.
      for (const release of releases) session.onEnd(release);
      running.set(workspace.id, session);
      const list = byWorkspace.get(workspace.id) ?? [];
      list.unshift(session);
      // Finished ones beyond the few kept go; a running one is never among them (it is the newest).
      if (list.length > KEPT_PER_WORKSPACE) list.length = KEPT_PER_WORKSPACE;
      byWorkspace.set(workspace.id, list);
      void session.done.then(() => {
        if (running.get(workspace.id) === session) running.delete(workspace.id);
      });
      void session.run();
      return { ok: true, session };
    },
    get: (workspace, id) => byWorkspace.get(workspace)?.find((s) => s.id === id),
    list: (workspace) => [...(byWorkspace.get(workspace) ?? [])],
    close() {
      for (const session of running.values()) session.stop("the sandbox closed");
    },
  };
}
