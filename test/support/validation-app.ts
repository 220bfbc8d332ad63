import type { Bundle, Organization, Resource, Subscription, Task } from "fhir/r4.js";
import type { Hono } from "hono";
import { createApp, type SandboxApp, type SandboxDeps } from "../../src/app.js";
import type { SandboxOptions } from "../../src/config/options.js";
import { example, messageBundle } from "./messages.js";

/**
 * The options of R4 validation (CONTRACT §11) as the agreed conventions name
 * them. They are declared here so that the tests type-check before
 * createApp knows them; once SandboxOptions has them, this is the same type.
 */
export interface ValidationOptions {
  validation?: "strict" | "warn" | "off";
  emiratesIdCheck?: "error" | "warning" | "off";
}

/** A fresh sandbox with these options. */
export function sandboxWith(
  options: Partial<SandboxOptions> & ValidationOptions = {},
  deps: Partial<SandboxDeps> = {},
): SandboxApp {
  const given: Partial<SandboxOptions> = options;
  return createApp(given, deps);
}

/** Where the first resource after the MessageHeader sits in a message Bundle built by messageBundle. */
export const FOCUS = "Bundle.entry[1].resource";

/** Whether the sandbox holds a patient under this key (GET /__admin/patients/{system|value}). */
export async function patientKnown(app: Hono, system: string, value: string): Promise<boolean> {
  const res = await app.request(`/__admin/patients/${encodeURIComponent(`${system}|${value}`)}`);
  if (res.status !== 200 && res.status !== 404) throw new Error(`GET /__admin/patients answered ${res.status}`);
  return res.status === 200;
}

// --- the HL7 examples as messages of the operations they fit

export const PHARMACY_LICENCE_SYSTEM = "urn:ae:pharmacy-licence";

export const pharmacyOrganization = (licence = "PH-VALIDATION"): Organization => ({
  resourceType: "Organization",
  id: `org-${licence}`,
  identifier: [{ system: PHARMACY_LICENCE_SYSTEM, value: licence }],
  name: `Pharmacy ${licence}`,
});

/** A message from a pharmacy: `resources` are the focus, its Organization (last entry) is MessageHeader.sender. */
export function pharmacyMessage(event: string, resources: Resource[], licence = "PH-VALIDATION"): Bundle {
  const org = pharmacyOrganization(licence);
  return messageBundle(event, [...resources, org], {
    focus: resources.map((_, i) => i),
    header: { sender: { reference: `Organization/${org.id}` } },
  });
}

/** How one HL7 example becomes the focus of a message (the resource at Bundle.entry[1]). */
export interface ExampleOperation {
  file: string;
  event: string;
  /** The example as the operation needs it; the edits keep it valid R4 (documented per kind below). */
  resource: () => Resource;
  /** Wraps the (possibly mutated) resource into the message. */
  message: (resource: Resource) => Bundle;
}

const plain = (event: string) => (resource: Resource) => messageBundle(event, [resource]);

const KINDS: Array<{
  prefix: string;
  event: string;
  adapt?: (r: Resource) => Resource;
  message?: (event: string) => (r: Resource) => Bundle;
}> = [
  { prefix: "allergyintolerance-", event: "add-allergy" },
  { prefix: "condition-", event: "add-history" },
  { prefix: "procedure-", event: "add-history" },
  { prefix: "observation-", event: "add-measurement" },
  { prefix: "patient-", event: "view-patient-profile" },
  {
    // A health-program task codes its kind in Task.code and starts as draft, requested or ready (CONTRACT §3).
    prefix: "task-",
    event: "add-task",
    adapt: (r) => {
      const task = r as Task;
      return {
        ...task,
        status: "ready",
        code: {
          coding: [{ system: "urn:uae-fhir-sandbox:task-kind", code: "order" }],
          text: task.code?.text ?? "task",
        },
        performerType: task.performerType ?? [{ text: "Pharmacist" }],
      } as Task;
    },
  },
  {
    // The endpoint is moved to this machine (an https URL stays an http(s) URL: still a valid url).
    prefix: "subscription-",
    event: "subscribe-order-notifications",
    adapt: (r) => {
      const s = r as Subscription;
      return { ...s, channel: { ...s.channel, endpoint: "http://127.0.0.1:9/pharmacy/notifications" } } as Subscription;
    },
    message: (event) => (r) => pharmacyMessage(event, [r]),
  },
  {
    prefix: "medicationdispense",
    event: "send-dispense-summary",
    message: (event) => (r) => pharmacyMessage(event, [r]),
  },
];

/** Every HL7 example that is the focus of some inbound operation, with that operation. */
export function exampleOperations(files: string[]): ExampleOperation[] {
  return KINDS.flatMap((kind) =>
    files
      .filter((file) => file.startsWith(kind.prefix))
      .sort()
      .map((file) => ({
        file,
        event: kind.event,
        resource: () => (kind.adapt ?? ((r: Resource) => r))(example(file)),
        message: (kind.message ?? plain)(kind.event),
      })),
  );
}
