import { createHash } from "node:crypto";
import type { Faker } from "@faker-js/faker";
import type { DeviceRequest, MedicationDispense, MedicationRequest, Patient, Resource, Task } from "fhir/r4.js";
import type { Logger } from "../app.js";
import { emiratesId } from "../domain/emirates-id.js";
import type { SandboxEvents } from "../events.js";
import { type Issue, issue } from "../fhir/outcome.js";
import { outboundMessage } from "../fhir/response-message.js";
import { DEVICES, DRUG_SYSTEM, DRUGS } from "../generate/drugs.js";
import { englishFaker } from "../generate/faker.js";
import type { PushDispatcher, PushResult } from "../push/dispatcher.js";
import type { SandboxStore } from "../store/sandbox-store.js";
import { bestOption, readConfirmation } from "./confirmation.js";
import type { Order, OrderRequest, PharmacyRequest } from "./order.js";
import {
  allocationResources,
  deliveryOptionPart,
  fulfillmentTask,
  ORDER_SYSTEM,
  status,
  taskResources,
} from "./order-resources.js";
import type { PharmacyRegistry } from "./pharmacy-registry.js";
import type { PushMessageSpec } from "./push-messages.js";

export type AllocationPolicy = "first-confirmed" | "best-at-deadline" | "manual";

/** An order as asked for by the admin API or a scenario push; everything left out is generated. */
export interface OrderSpec {
  items?: Array<{
    medication?: { system?: string; code: string; display?: string };
    device?: { system?: string; code: string; display?: string };
    quantity?: number;
    unit?: string;
    dosage?: string;
  }>;
  /** Licences of the target pharmacies; default every pharmacy with an active subscription. */
  pharmacies?: string[];
  deadlineMs?: number;
  /** Patient key (system|value or id); default a generated patient. */
  patient?: string;
}

export interface WorkflowDeps {
  seed: string;
  emiratesIdSystem: string;
  confirmDeadlineMs: number;
  allocation: AllocationPolicy;
  now(): Date;
  newId(): string;
  store: SandboxStore;
  pharmacies: PharmacyRegistry;
  dispatcher: PushDispatcher;
  events: SandboxEvents;
  /** Where failures of background work (after a push, at a deadline) go. */
  logger: Logger;
  /** The sandbox's URL as pharmacies see it: MessageHeader.source.endpoint of pushes. */
  publicUrl(): string;
}

export type WorkflowResult<T> = { ok: true; value: T } | { ok: false; issues: Issue[] };

const fail = <T>(...issues: Issue[]): WorkflowResult<T> => ({ ok: false, issues });

/**
 * The drug-order flow (CONTRACT §8): orders fan out to pharmacies as
 * order-fulfillment-request pushes; confirmations, allocation, the
 * allocation push and the dispense summary move each order and each
 * pharmacy's request along their state machines. Refusals name the state.
 */
export class OrderWorkflow {
  readonly #orders = new Map<string, Order>();
  readonly #byTask = new Map<string, { order: Order; request: PharmacyRequest }>();
  readonly #byRequest = new Map<string, Order>();
  readonly #timers = new Map<string, ReturnType<typeof setTimeout>>();
  #sequence = 0;

  constructor(private readonly deps: WorkflowDeps) {}

  get(id: string): Order | undefined {
    return this.#orders.get(id);
  }

  list(): Order[] {
    return [...this.#orders.values()];
  }

  /** Forgets every order and stops its timers (POST /__admin/reset). */
  clear(): void {
    for (const timer of this.#timers.values()) clearTimeout(timer);
    this.#timers.clear();
    this.#orders.clear();
    this.#byTask.clear();
    this.#byRequest.clear();
    this.#sequence = 0;
  }

  #changed(order: Order, event: string): void {
    order.history.push({ at: this.deps.now(), event });
    this.deps.events.emit("order:updated", order);
  }

  /** Work nobody awaits (a push and what follows its answer): a failure is logged, never an unhandled rejection. */
  #inBackground(what: string, work: () => Promise<void>): void {
    work().catch((error: unknown) => this.deps.logger.error(`${what} failed`, error));
  }

  /** A timer's callback: a failure is logged instead of ending the process as an uncaught exception. */
  #guarded(what: string, work: () => void): () => void {
    return () => {
      try {
        work();
      } catch (error) {
        this.deps.logger.error(`${what} failed`, error);
      }
    };
  }

  /** Creates an order and pushes it to each target pharmacy; deliveries run in the background. */
  create(spec: OrderSpec = {}): WorkflowResult<Order> {
    const { deps } = this;
    const targets =
      spec.pharmacies ??
      deps.pharmacies
        .list()
        .filter((p) => p.endpoint)
        .map((p) => p.licence);
    const unknown = targets.filter((l) => !deps.pharmacies.get(l));
    if (unknown.length > 0) {
      return fail(
        issue("not-found", `Unknown pharmacy licence(s): ${unknown.join(", ")}. See GET /__admin/pharmacies.`),
      );
    }
    const silent = targets.filter((l) => !deps.pharmacies.get(l)?.endpoint);
    if (silent.length > 0) {
      return fail(issue("business-rule", `Pharmacy ${silent.join(", ")} has no active subscription to push to.`));
    }
    if (targets.length === 0) {
      return fail(
        issue(
          "business-rule",
          "No pharmacy has an active subscription: subscribe one (subscribe-order-notifications) or add one as a scenario fixture first.",
        ),
      );
    }
    const n = ++this.#sequence;
    const id = String(n);
    const faker = englishFaker();
    const digest = createHash("sha256").update(`${deps.seed}\u0000order\u0000${n}`).digest();
    faker.seed([digest.readUInt32BE(0), digest.readUInt32BE(4)]);

    const patientKey =
      spec.patient ??
      `${deps.emiratesIdSystem}|${emiratesId(faker.number.int({ min: 1950, max: 2004 }), faker.number.int({ min: 1_000_000, max: 9_999_999 }))}`;
    const patient = deps.store.ensurePatient({ keys: [patientKey], given: {} });
    const now = deps.now();
    const anonymousPatient: Patient = {
      resourceType: "Patient",
      id: deps.newId(),
      ...(patient.gender ? { gender: patient.gender } : {}),
      ...(patient.birthDate ? { birthDate: patient.birthDate.slice(0, 4) } : {}),
    };
    const requests = this.#requests(spec, faker, id, anonymousPatient, now);
    if (!requests.ok) return requests;
    const deadline = new Date(now.getTime() + (spec.deadlineMs ?? deps.confirmDeadlineMs));
    const order: Order = {
      id,
      state: "open",
      kind: requests.value[0]?.resourceType === "DeviceRequest" ? "device" : "medication",
      createdAt: now,
      deadline,
      patient,
      anonymousPatient,
      requests: requests.value,
      pharmacies: [],
      allocatedTo: null,
      allocatedAt: null,
      dispensed: [],
      history: [],
    };
    order.pharmacies = targets.map((licence) => ({
      licence,
      state: "sent",
      task: fulfillmentTask(order, licence, deps.pharmacies.get(licence)?.name, deps.newId()),
      delivery: { attempts: 0, status: null, error: null, deliveredAt: null },
      allocationDelivery: null,
      confirmation: null,
    }));
    this.#orders.set(id, order);
    for (const r of order.requests) this.#byRequest.set(r.id as string, order);
    for (const request of order.pharmacies) this.#byTask.set(request.task.id as string, { order, request });
    this.#timers.set(
      id,
      setTimeout(
        this.#guarded(`order ${id}: the confirmation deadline`, () => this.#deadline(order)),
        deadline.getTime() - now.getTime(),
      ),
    );
    this.#changed(order, `created for ${targets.join(", ")}`);
    for (const request of order.pharmacies) {
      this.#inBackground(`order ${id}: ${request.licence}: order-fulfillment-request`, async () => {
        const result = await this.#push(order, request, "order-fulfillment-request");
        request.delivery = { ...result, deliveredAt: result.delivered ? this.deps.now() : null };
        if (request.state === "sent") {
          request.state = result.delivered ? "delivered" : "delivery-failed";
          this.#changed(order, `${request.licence}: ${request.state}`);
        }
      });
    }
    return { ok: true, value: order };
  }

  #requests(
    spec: OrderSpec,
    faker: Faker,
    orderId: string,
    subject: Patient,
    now: Date,
  ): WorkflowResult<OrderRequest[]> {
    const base = {
      status: "active" as const,
      intent: "order" as const,
      groupIdentifier: { system: ORDER_SYSTEM, value: orderId },
      subject: { reference: `Patient/${subject.id}` },
      authoredOn: now.toISOString(),
    };
    const items: NonNullable<OrderSpec["items"]> =
      spec.items ??
      (faker.number.int({ min: 1, max: 5 }) === 1
        ? [{ device: faker.helpers.arrayElement(DEVICES), quantity: 1 }]
        : faker.helpers.arrayElements(DRUGS, { min: 1, max: 3 }).map((d) => ({
            medication: { system: DRUG_SYSTEM, code: d.code, display: d.display },
            quantity: faker.helpers.arrayElement(d.quantities),
            unit: d.unit,
            dosage: d.dosage,
          })));
    if (items.length === 0) return fail(issue("required", "An order needs at least one item."));
    const devices = items.filter((i) => i.device).length;
    if (devices > 0 && (devices !== items.length || items.length > 1)) {
      return fail(
        issue("business-rule", "A device order holds exactly one device; medications go in a separate order."),
      );
    }
    return {
      ok: true,
      value: items.map((item): OrderRequest => {
        if (item.device) {
          const device: DeviceRequest = {
            resourceType: "DeviceRequest",
            id: this.deps.newId(),
            ...base,
            codeCodeableConcept: {
              coding: [{ system: item.device.system ?? DEVICES[0]?.system, ...item.device }],
              text: item.device.display,
            },
          };
          return device;
        }
        const medication = item.medication as NonNullable<typeof item.medication>;
        const drug = DRUGS.find((d) => d.code === medication.code);
        const quantity = item.quantity ?? drug?.quantities[0] ?? 30;
        const unit = item.unit ?? drug?.unit ?? "tablet";
        const request: MedicationRequest = {
          resourceType: "MedicationRequest",
          id: this.deps.newId(),
          ...base,
          medicationCodeableConcept: {
            coding: [
              {
                system: medication.system ?? DRUG_SYSTEM,
                code: medication.code,
                ...(medication.display ? { display: medication.display } : {}),
              },
            ],
            ...((medication.display ?? drug?.display) ? { text: medication.display ?? drug?.display } : {}),
          },
          dosageInstruction: [{ text: item.dosage ?? drug?.dosage ?? "as directed" }],
          dispenseRequest: { quantity: { value: quantity, unit } },
        };
        return request;
      }),
    };
  }

  async #push(order: Order, request: PharmacyRequest, event: PushMessageSpec["id"]): Promise<PushResult> {
    const pharmacy = this.deps.pharmacies.get(request.licence);
    if (!pharmacy?.endpoint) return { delivered: false, attempts: 0, status: null, error: "no active subscription" };
    const { task, resources } = allocationResources(order, request);
    const publicUrl = this.deps.publicUrl();
    const bundle = outboundMessage(
      {
        event,
        source: `${publicUrl}/uae-fhir/r4/$process-message`,
        destination: {
          endpoint: pharmacy.endpoint,
          receiver: { identifier: task.owner?.identifier, display: pharmacy.name },
        },
        resources: resources as Resource[],
        focus: [task],
        fhirBase: `${publicUrl}/uae-fhir/r4`,
      },
      this.deps,
    );
    const header = bundle.entry?.[0]?.resource as { id: string };
    return this.deps.dispatcher.deliver({
      target: pharmacy.endpoint,
      headers: pharmacy.headers,
      body: JSON.stringify({ content: JSON.stringify(bundle) }),
      event,
      messageId: header.id,
    });
  }

  #touch(request: PharmacyRequest, change: Partial<Task>): void {
    const version = Number(request.task.meta?.versionId ?? "1") + 1;
    const now = this.deps.now().toISOString();
    request.task = {
      ...request.task,
      ...change,
      lastModified: now,
      meta: { versionId: String(version), lastUpdated: now },
    };
  }

  #find(
    taskId: string | undefined,
    licence: string,
    path: string,
  ): WorkflowResult<{ order: Order; request: PharmacyRequest }> {
    const found = taskId ? this.#byTask.get(taskId) : undefined;
    if (!found) {
      return fail(
        issue(
          "not-found",
          `Task/${taskId} is not a fulfillment request the sandbox sent; use the id of the Task in the order-fulfillment-request you received.`,
          `${path}.id`,
        ),
      );
    }
    if (found.request.licence !== licence) {
      return fail(
        issue(
          "business-rule",
          // Refusals name the order's state (CONTRACT §8), this one too.
          `Task/${taskId} (order ${found.order.id}, ${found.order.state}) was sent to pharmacy ${found.request.licence}, not to ${licence}.`,
          `${path}.id`,
        ),
      );
    }
    return { ok: true, value: found };
  }

  /** confirm-drugs-availability: records availability and delivery options; may allocate at once. */
  confirm(licence: string, sent: Task, path: string): WorkflowResult<{ task: Task; resources: Resource[] }> {
    const found = this.#find(sent.id, licence, path);
    if (!found.ok) return found;
    const { order, request } = found.value;
    if (order.state !== "open") {
      return fail(
        issue(
          "business-rule",
          `Order ${order.id} is ${order.state}${order.allocatedTo ? ` (allocated to ${order.allocatedTo})` : ""}: it no longer takes confirmations.`,
          `${path}.id`,
        ),
      );
    }
    if (request.state === "expired" || this.deps.now() > order.deadline) {
      return fail(
        issue(
          "business-rule",
          `The confirmation deadline of order ${order.id} passed at ${order.deadline.toISOString()}; this pharmacy's request is expired (the order is ${order.state}).`,
          `${path}.id`,
        ),
      );
    }
    if (request.confirmation) {
      return fail(
        issue(
          "duplicate",
          `Order ${order.id} (${order.state}) was already confirmed by ${licence} at ${request.confirmation.at.toISOString()} (${request.confirmation.availability}).`,
          `${path}.id`,
        ),
      );
    }
    const confirmation = readConfirmation(
      sent,
      order.requests.map((r) => r.id as string),
      this.deps.now(),
    );
    request.confirmation = confirmation;
    request.state = "confirmed";
    this.#touch(request, {
      status: confirmation.availability === "unavailable" ? "rejected" : "accepted",
      businessStatus: sent.businessStatus ?? status(confirmation.availability),
      ...(sent.output ? { output: sent.output } : {}),
      ...(sent.note ? { note: sent.note } : {}),
    });
    this.#changed(order, `${licence}: confirmed ${confirmation.availability}`);
    if (this.deps.allocation === "first-confirmed" && confirmation.availability === "available")
      this.#allocate(order, request);
    return { ok: true, value: allocationResources(order, request) };
  }

  /** Allocates an open order to a pharmacy that confirmed (manual policy: POST /__admin/orders/{id}/allocate). */
  allocate(orderId: string, licence: string): WorkflowResult<Order> {
    const order = this.#orders.get(orderId);
    if (!order) return fail(issue("not-found", `No order ${orderId}.`));
    if (order.state !== "open")
      return fail(issue("business-rule", `Order ${orderId} is ${order.state}: only an open order can be allocated.`));
    const request = order.pharmacies.find((p) => p.licence === licence);
    if (!request) return fail(issue("not-found", `Order ${orderId} was not sent to pharmacy ${licence}.`));
    if (!request.confirmation || request.confirmation.availability === "unavailable") {
      return fail(
        issue(
          "business-rule",
          `Pharmacy ${licence} has ${request.confirmation ? "nothing available" : "not confirmed"} for order ${orderId}.`,
        ),
      );
    }
    this.#allocate(order, request);
    return { ok: true, value: order };
  }

  #allocate(order: Order, chosen: PharmacyRequest): void {
    clearTimeout(this.#timers.get(order.id));
    this.#timers.delete(order.id);
    order.state = "allocated";
    order.allocatedTo = chosen.licence;
    order.allocatedAt = this.deps.now();
    chosen.state = "allocated";
    const option = bestOption(chosen.confirmation?.options ?? []);
    this.#touch(chosen, {
      status: "in-progress",
      businessStatus: status("allocated"),
      for: { reference: `Patient/${order.patient.id}` },
      input: [...(chosen.task.input ?? []), ...(option ? [deliveryOptionPart(option, "chosen-delivery")] : [])],
    });
    for (const other of order.pharmacies) {
      if (other === chosen || other.state === "expired") continue;
      other.state = "not-allocated";
      this.#touch(other, {
        status: "cancelled",
        businessStatus: status("not-allocated"),
        statusReason: { text: "The order was allocated to another pharmacy." },
      });
    }
    this.#changed(order, `allocated to ${chosen.licence}`);
    this.#inBackground(`order ${order.id}: ${chosen.licence}: order-allocation`, async () => {
      const result = await this.#push(order, chosen, "order-allocation");
      chosen.allocationDelivery = { ...result, deliveredAt: result.delivered ? this.deps.now() : null };
      this.#changed(order, `${chosen.licence}: allocation ${result.delivered ? "delivered" : "delivery failed"}`);
    });
  }

  #deadline(order: Order): void {
    this.#timers.delete(order.id);
    if (order.state !== "open") return;
    for (const request of order.pharmacies) {
      if (request.confirmation) continue;
      request.state = "expired";
      this.#touch(request, {
        status: "failed",
        businessStatus: status("expired"),
        statusReason: { text: "No confirmation before the deadline." },
      });
    }
    const usable = order.pharmacies.filter((p) => p.confirmation && p.confirmation.availability !== "unavailable");
    if (this.deps.allocation === "best-at-deadline" && usable.length > 0) {
      const best = [...usable].sort(
        (a, b) =>
          (b.confirmation?.availableItems.length ?? 0) - (a.confirmation?.availableItems.length ?? 0) ||
          (bestOption(a.confirmation?.options ?? [])?.etaMinutes ?? Number.POSITIVE_INFINITY) -
            (bestOption(b.confirmation?.options ?? [])?.etaMinutes ?? Number.POSITIVE_INFINITY) ||
          (a.confirmation?.at.getTime() ?? 0) - (b.confirmation?.at.getTime() ?? 0),
      )[0] as PharmacyRequest;
      this.#allocate(order, best);
      return;
    }
    if (this.deps.allocation === "manual" && usable.length > 0) {
      this.#changed(order, "deadline passed: waiting for manual allocation");
      return;
    }
    order.state = "expired";
    this.#changed(order, "expired at the deadline");
  }

  /** receive-allocation: the allocated pharmacy gets the allocation; others learn they were not allocated. */
  receiveAllocation(
    licence: string,
    taskId: string | undefined,
    path: string,
  ): WorkflowResult<{ task: Task; resources: Resource[] }> {
    const found = this.#find(taskId, licence, path);
    if (!found.ok) return found;
    const { order, request } = found.value;
    if (order.state === "open" || order.state === "expired" || order.state === "cancelled") {
      return fail(
        issue(
          "business-rule",
          `Order ${order.id} is ${order.state}: there is no allocation to receive${order.state === "open" ? " yet (confirm availability first)" : ""}.`,
          `${path}.id`,
        ),
      );
    }
    return { ok: true, value: allocationResources(order, request) };
  }

  /**
   * send-dispense-summary: what the allocated pharmacy handed over; the order
   * ends dispensed. `focus` is the recorded dispenses (or the completed Task),
   * `resources` adds what they reference: the requests and the patient.
   */
  dispense(
    licence: string,
    focus: Array<{ resource: Resource; path: string }>,
  ): WorkflowResult<{ focus: Resource[]; resources: Resource[] }> {
    const first = focus[0];
    if (!first)
      return fail(
        issue("required", "send-dispense-summary needs a MedicationDispense or the completed fulfillment Task."),
      );
    let order: Order | undefined;
    if (first.resource.resourceType === "Task") {
      const found = this.#find(first.resource.id, licence, first.path);
      if (!found.ok) return found;
      order = found.value.order;
      if (order.kind !== "device") {
        return fail(
          issue(
            "business-rule",
            `Order ${order.id} is a medication order: send MedicationDispense resources, not the Task.`,
            first.path,
          ),
        );
      }
    } else {
      const issues: Issue[] = [];
      for (const { resource, path } of focus) {
        const refs = (resource as MedicationDispense).authorizingPrescription ?? [];
        const orders = new Set(refs.map((r) => this.#byRequest.get((r.reference ?? "").split("/").pop() ?? "")));
        const [only] = [...orders];
        if (orders.size !== 1 || !only) {
          issues.push(
            issue(
              "not-found",
              "authorizingPrescription must reference the MedicationRequest(s) of one order the sandbox sent (MedicationRequest/{id}).",
              `${path}.authorizingPrescription`,
            ),
          );
        } else if (order && order !== only) {
          issues.push(
            issue(
              "business-rule",
              "All dispenses of one summary must belong to the same order.",
              `${path}.authorizingPrescription`,
            ),
          );
        } else order = only;
      }
      if (issues.length > 0 || !order) return fail(...issues);
    }
    if (order.state !== "allocated" || order.allocatedTo !== licence) {
      const why =
        order.state === "allocated"
          ? `it is allocated to ${order.allocatedTo}, not to ${licence}`
          : order.state === "dispensed"
            ? `it was already dispensed`
            : `it is ${order.state}${order.state === "open" ? " (not allocated yet)" : ""}`;
      return fail(
        issue(
          order.state === "dispensed" ? "duplicate" : "business-rule",
          `Order ${order.id} cannot be dispensed: ${why}.`,
          first.path,
        ),
      );
    }
    const request = order.pharmacies.find((p) => p.licence === licence) as PharmacyRequest;
    if (first.resource.resourceType !== "Task") {
      const issues = focus.flatMap(({ resource, path }) => {
        const dispense = resource as MedicationDispense;
        const ids = (dispense.authorizingPrescription ?? []).map((r) => (r.reference ?? "").split("/").pop());
        const ordered = order.requests.find((r) => ids.includes(r.id)) as MedicationRequest | undefined;
        const max = ordered?.dispenseRequest?.quantity?.value;
        const given = dispense.quantity?.value;
        return max !== undefined && given !== undefined && given > max
          ? [
              issue(
                "business-rule",
                `Dispensed quantity ${given} is above the ordered quantity ${max}; order ${order.id} stays ${order.state}.`,
                `${path}.quantity`,
              ),
            ]
          : [];
      });
      if (issues.length > 0) return fail(...issues);
    }
    const recorded =
      first.resource.resourceType === "Task"
        ? []
        : focus.map(({ resource }) => {
            const now = this.deps.now().toISOString();
            return { ...resource, id: this.deps.newId(), meta: { versionId: "1", lastUpdated: now } } as Resource;
          });
    order.state = "dispensed";
    order.dispensed = recorded;
    request.state = "dispensed";
    this.#touch(request, { status: "completed", businessStatus: status("dispensed") });
    this.#changed(order, `dispensed by ${licence}`);
    const [task, ...referenced] = taskResources(order, request);
    const shown = first.resource.resourceType === "Task" ? [task as Task] : recorded;
    return { ok: true, value: { focus: shown, resources: [...shown, ...referenced] } };
  }

  cancel(orderId: string): WorkflowResult<Order> {
    const order = this.#orders.get(orderId);
    if (!order) return fail(issue("not-found", `No order ${orderId}.`));
    if (order.state !== "open" && order.state !== "allocated") {
      return fail(issue("business-rule", `Order ${orderId} is ${order.state}: it can no longer be cancelled.`));
    }
    clearTimeout(this.#timers.get(order.id));
    this.#timers.delete(order.id);
    order.state = "cancelled";
    for (const request of order.pharmacies) {
      if (request.state === "expired" || request.state === "not-allocated") continue;
      this.#touch(request, {
        status: "cancelled",
        businessStatus: status("cancelled"),
        statusReason: { text: "The order was cancelled." },
      });
    }
    this.#changed(order, "cancelled");
    return { ok: true, value: order };
  }
}
