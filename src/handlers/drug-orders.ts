import type { Organization, Reference, Resource, Subscription, Task } from "fhir/r4.js";
import type { Message } from "../envelope/message.js";
import { PUSH_CERTIFICATE_EXTENSION } from "../fhir/extension-definitions.js";
import { type Issue, issue } from "../fhir/outcome.js";
import type { OrderWorkflow } from "../orders/order-workflow.js";
import type { PharmacyRegistry } from "../orders/pharmacy-registry.js";
import { hostAllowed, literalAddressRefusal } from "../push/push-allow.js";
import { type Handler, type HandlerTable, invalid, ok, refuse } from "./handler.js";

export interface DrugOrderDeps {
  workflow: OrderWorkflow;
  pharmacies: PharmacyRegistry;
  /** --push-allow entries (empty: any host). */
  pushAllow: readonly string[];
  /** Under --auth oauth2: an endpoint at an internal address --push-allow does not name is refused (CONTRACT §15). */
  guardAddresses: boolean;
  /** The client certificates a subscription may name (--push-client-certs); undefined: none. */
  pushCertificates?: { nameProblem(name: string): string | null } | undefined;
  /** Called after a pharmacy subscribed (scenario pushes "on: subscribed"). */
  onSubscribed(licence: string): void;
}

const HEADER = "Bundle.entry[0].resource";

function licenceOfOrganization(org: Organization | undefined): string | undefined {
  return org?.identifier?.find((i) => i.value)?.value;
}

function licenceOfReference(ref: Reference | undefined, message: Message): string | undefined {
  if (!ref) return undefined;
  const target = ref.reference ? message.resolve(ref.reference) : undefined;
  if (target?.resource.resourceType === "Organization") return licenceOfOrganization(target.resource as Organization);
  return ref.identifier?.value;
}

/**
 * The pharmacy a message comes from (CONTRACT §3): MessageHeader.sender → an
 * Organization whose identifier is the licence; else the focus Task's owner.
 */
function senderLicence(message: Message, task?: Task): string | undefined {
  return licenceOfReference(message.header.sender, message) ?? licenceOfReference(task?.owner, message);
}

const NO_SENDER = issue(
  "required",
  "Name the pharmacy: MessageHeader.sender → an Organization entry whose identifier value is the pharmacy licence (as subscribed).",
  `${HEADER}.sender`,
);

/** Resolves the sending pharmacy and checks it has an active subscription. */
function activePharmacy(
  deps: DrugOrderDeps,
  message: Message,
  task?: Task,
): { ok: true; licence: string } | { ok: false; result: ReturnType<Handler> } {
  const licence = senderLicence(message, task);
  if (!licence) return { ok: false, result: invalid(NO_SENDER) };
  if (!deps.pharmacies.isActive(licence)) {
    return {
      ok: false,
      result: refuse(
        issue(
          "business-rule",
          `Pharmacy ${licence} has no active subscription: subscribe (subscribe-order-notifications) before sending drug-order messages.`,
          `${HEADER}.sender`,
        ),
      ),
    };
  }
  return { ok: true, licence };
}

/** "Name: value" entries of Subscription.channel.header. */
function parseHeaders(sub: Subscription, path: string): { headers: Record<string, string>; issues: Issue[] } {
  const headers: Record<string, string> = {};
  const issues: Issue[] = [];
  (sub.channel?.header ?? []).forEach((line, i) => {
    const m = /^([!#$%&'*+.^_`|~0-9A-Za-z-]+):\s*(.*)$/.exec(line);
    if (!m) {
      issues.push(
        issue(
          "value",
          `Subscription.channel.header[${i}] must read "Name: value", e.g. "Authorization: Bearer abc".`,
          `${path}.channel.header[${i}]`,
        ),
      );
    } else headers[m[1] as string] = (m[2] as string).trim();
  });
  return { headers, issues };
}

/**
 * The client certificate a Subscription asks pushes to present (the push-client-certificate extension on its
 * channel): its name, or the issues that refuse it (not a string, several, a name the sandbox does not have, an
 * endpoint that is not https, where no certificate is ever presented).
 */
function certificateOf(
  sub: Subscription,
  path: string,
  deps: DrugOrderDeps,
): { name: string | undefined; issues: Issue[] } {
  const found = (sub.channel?.extension ?? []).flatMap((e, i) =>
    e.url === PUSH_CERTIFICATE_EXTENSION ? [{ e, i }] : [],
  );
  if (found.length === 0) return { name: undefined, issues: [] };
  const { e, i } = found[0] as (typeof found)[number];
  const at = `${path}.channel.extension[${i}]`;
  if (found.length > 1) {
    return { name: undefined, issues: [issue("value", "Name one push client certificate, not several.", at)] };
  }
  const name = e.valueString;
  if (typeof name !== "string" || name === "") {
    return {
      name: undefined,
      issues: [issue("value", "The push-client-certificate extension takes a valueString: a certificate's name.", at)],
    };
  }
  const problem = deps.pushCertificates
    ? deps.pushCertificates.nameProblem(name)
    : `the sandbox has no client certificate named ${JSON.stringify(name)}: it was started without --push-client-certs (a folder of NAME.crt and NAME.key files)`;
  if (problem)
    return { name, issues: [issue("value", `Cannot present that certificate: ${problem}.`, `${at}.valueString`)] };
  if (!/^https:/i.test(sub.channel.endpoint ?? "")) {
    return {
      name,
      issues: [
        issue(
          "value",
          `A client certificate is presented only over HTTPS: give an https:// endpoint, or leave the extension out.`,
          at,
        ),
      ],
    };
  }
  return { name, issues: [] };
}

export function drugOrderHandlers(deps: DrugOrderDeps): HandlerTable {
  const subscribe: Handler = ({ focus, message }, { newId, now }) => {
    const subEntry = focus.find((e) => e.resource.resourceType === "Subscription");
    const sub = subEntry?.resource as unknown as Subscription;
    const path = subEntry?.path as string;
    const org = focus.find((e) => e.resource.resourceType === "Organization")?.resource as unknown as
      | Organization
      | undefined;
    const licence = licenceOfOrganization(org) ?? senderLicence(message);
    const issues: Issue[] = [];
    if (!licence) {
      issues.push(
        issue(
          "required",
          "Name the pharmacy: add its Organization (identifier = the pharmacy licence) to the focus, or as MessageHeader.sender.",
          `${HEADER}.focus`,
        ),
      );
    }
    const { headers, issues: headerIssues } = parseHeaders(sub, path);
    issues.push(...headerIssues);
    const endpoint = sub.channel.endpoint as string;
    const off = sub.status === "off";
    const certificate = off ? { name: undefined, issues: [] } : certificateOf(sub, path, deps);
    issues.push(...certificate.issues);
    if (!URL.canParse(endpoint)) {
      issues.push(
        issue("value", `Subscription.channel.endpoint "${endpoint}" is not a valid URL.`, `${path}.channel.endpoint`),
      );
    } else if (!off && !hostAllowed(endpoint, deps.pushAllow)) {
      issues.push(
        issue(
          "value",
          `The sandbox may not push to ${new URL(endpoint).host}: allowed hosts are ${deps.pushAllow.join(", ")} (--push-allow).`,
          `${path}.channel.endpoint`,
        ),
      );
    }
    if (issues.length > 0 || !licence) return invalid(...issues);
    // The push would be refused at the address anyway: say so now, to the integrator who can change it.
    const internal = !off && deps.guardAddresses ? literalAddressRefusal(endpoint, deps.pushAllow) : null;
    if (internal) {
      return refuse(
        issue("business-rule", `The sandbox will not push to ${endpoint}: ${internal}.`, `${path}.channel.endpoint`),
      );
    }
    // Processed and refused (CONTRACT §5), as the exchange refuses what its rules do not allow: a new licence past
    // --max-pharmacies. Re-subscribing a licence already held (an update, or status off) is always accepted.
    const full = deps.pharmacies.noRoomFor([licence]);
    if (full) return refuse(issue("business-rule", `Pharmacy ${licence} cannot subscribe. ${full.diagnostics}`, path));
    const existing = deps.pharmacies.get(licence);
    const version = Number(existing?.subscription?.meta?.versionId ?? "0") + 1;
    const stored: Subscription = {
      ...sub,
      id: existing?.subscription?.id ?? newId(),
      status: off ? "off" : "active",
      meta: { versionId: String(version), lastUpdated: now().toISOString() },
    };
    deps.pharmacies.put({
      licence,
      name: org?.name ?? existing?.name,
      endpoint: off ? undefined : endpoint,
      headers: off ? {} : headers,
      ...(certificate.name !== undefined ? { clientCertificate: certificate.name } : {}),
      source: "subscription",
      subscription: stored,
    });
    if (!off) deps.onSubscribed(licence);
    return ok([stored as Resource]);
  };

  const confirm: Handler = ({ focus, message }) => {
    const [entry] = focus;
    const task = entry?.resource as unknown as Task;
    const who = activePharmacy(deps, message, task);
    if (!who.ok) return who.result;
    const result = deps.workflow.confirm(who.licence, task, entry?.path as string);
    return result.ok ? ok(result.value.resources, [result.value.task as Resource]) : refuse(...result.issues);
  };

  const receiveAllocation: Handler = ({ focus, message }) => {
    const [entry] = focus;
    const task = entry?.resource as unknown as Task;
    const who = activePharmacy(deps, message, task);
    if (!who.ok) return who.result;
    const result = deps.workflow.receiveAllocation(who.licence, task.id, entry?.path as string);
    return result.ok ? ok(result.value.resources, [result.value.task as Resource]) : refuse(...result.issues);
  };

  const dispense: Handler = ({ focus, message }) => {
    const task = focus.find((e) => e.resource.resourceType === "Task")?.resource as unknown as Task | undefined;
    const who = activePharmacy(deps, message, task);
    if (!who.ok) return who.result;
    const result = deps.workflow.dispense(
      who.licence,
      focus.map((e) => ({ resource: e.resource as Resource, path: e.path })),
    );
    return result.ok ? ok(result.value.resources, result.value.focus) : refuse(...result.issues);
  };

  return {
    "subscribe-order-notifications": subscribe,
    "confirm-drugs-availability": confirm,
    "receive-allocation": receiveAllocation,
    "send-dispense-summary": dispense,
  };
}
