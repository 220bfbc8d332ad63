import { type Issue, issue } from "../../fhir/outcome.js";
import { hostAllowed, literalAddressRefusal, pushableScheme } from "../../push/push-allow.js";
import type { StepContext } from "../step-context.js";
import { DEFAULT_PHARMACY_LICENCE } from "./receiver-state.js";

/** What registering needs: the session's facts, its workspace, and where to leave what undoes it at the session's end. */
export type RegisterContext = Pick<StepContext, "session" | "workspace" | "onEnd">;

/** Where the sandbox may push: --push-allow (empty: any host), and whether internal addresses are refused (--auth oauth2). */
export interface PushPolicy {
  allow: readonly string[];
  guardAddresses: boolean;
}

/**
 * Why the sandbox would not push to `url`, checked as a Subscription endpoint is (the subscribe handler): an http(s)
 * URL, a host --push-allow allows, and under --auth oauth2 no internal address it does not name. Null: it may.
 */
export function pharmacyUrlProblem(url: string, policy: PushPolicy): Issue | null {
  const at = "pharmacyUrl";
  if (!URL.canParse(url)) return issue("value", `pharmacyUrl "${url}" is not a valid URL.`, at);
  if (!pushableScheme(url)) {
    return issue("value", "pharmacyUrl must be an http:// or https:// URL; other schemes are refused.", at);
  }
  if (!hostAllowed(url, policy.allow)) {
    return issue(
      "value",
      `The sandbox may not push to ${new URL(url).host}: allowed hosts are ${policy.allow.join(", ")} (--push-allow).`,
      at,
    );
  }
  const internal = policy.guardAddresses ? literalAddressRefusal(url, policy.allow) : null;
  return internal ? issue("business-rule", `The sandbox will not push to ${url}: ${internal}.`, at) : null;
}

/**
 * Registers the pharmacy under test for a receiver session started with a pharmacyUrl: its endpoint, under the
 * session's licence (default PH-CONFORMANCE-0001), in the session's workspace, after the checks a subscription's
 * endpoint gets (`policy`: the sandbox's). For the session only: never in the state file, and what `ctx.onEnd` is
 * given (run when the session ends, however it ends) puts back what the licence held before, so that no order pushes
 * to the tested URL afterwards and no --max-pharmacies place stays taken. A licence the workspace holds an active
 * subscription of is refused, unless pharmacyUrl is that subscription's endpoint (then the subscription is used as
 * it is, its headers and client certificate with it). Returns the issue that refuses it (the session should not
 * start), or null. Without a pharmacyUrl it does nothing: the session waits for the pharmacy to subscribe
 * (expectSubscription).
 */
export function registerPharmacy(ctx: RegisterContext, policy: PushPolicy): Issue | null {
  const url = ctx.session.pharmacyUrl;
  if (url === null) return null;
  const problem = pharmacyUrlProblem(url, policy);
  if (problem) return problem;
  const licence = ctx.session.pharmacyLicence ?? DEFAULT_PHARMACY_LICENCE;
  const { pharmacies } = ctx.workspace;
  const existing = pharmacies.get(licence);
  if (existing?.source === "subscription" && existing.endpoint !== undefined) {
    if (existing.endpoint === url) return null;
    return issue(
      "business-rule",
      `pharmacyLicence ${licence} has an active subscription in this workspace, with another endpoint (${existing.endpoint}): the session would take its pushes. Name another pharmacyLicence, or give that endpoint as pharmacyUrl.`,
      "pharmacyLicence",
    );
  }
  const full = pharmacies.noRoomFor([licence]);
  if (full)
    return issue("business-rule", `Pharmacy ${licence} cannot be registered. ${full.diagnostics}`, "pharmacyUrl");
  const release = pharmacies.hold({
    licence,
    name: existing?.name ?? "Pharmacy under test (conformance session)",
    endpoint: url,
    headers: {},
    source: "conformance",
  });
  ctx.onEnd?.(release);
  return null;
}
