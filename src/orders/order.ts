import type { DeviceRequest, MedicationRequest, Patient, Resource, Task } from "fhir/r4.js";

export type OrderState = "open" | "allocated" | "dispensed" | "expired" | "cancelled";

/** Where one pharmacy stands with one order (docs/pharmacy-guide.md has the diagram). */
export type PharmacyRequestState =
  | "sent"
  | "delivered"
  | "delivery-failed"
  | "confirmed"
  | "expired"
  | "allocated"
  | "not-allocated"
  | "dispensed";

export type Availability = "available" | "partial" | "unavailable";

/** A delivery option a pharmacy offers when it confirms. */
export interface DeliveryOption {
  method: "home-delivery" | "pickup";
  /** Estimated time to the patient, in minutes. */
  etaMinutes: number | undefined;
  /** Price in AED. */
  price: number | undefined;
}

export interface Confirmation {
  availability: Availability;
  /** Ids of the requests the pharmacy can supply. */
  availableItems: string[];
  options: DeliveryOption[];
  at: Date;
}

export interface PharmacyRequest {
  licence: string;
  state: PharmacyRequestState;
  /** This pharmacy's fulfillment Task, as the sandbox holds it now. */
  task: Task;
  delivery: { attempts: number; status: number | null; error: string | null; deliveredAt: Date | null };
  allocationDelivery: {
    attempts: number;
    status: number | null;
    error: string | null;
    deliveredAt: Date | null;
  } | null;
  confirmation: Confirmation | null;
}

export type OrderRequest = MedicationRequest | DeviceRequest;

export interface Order {
  id: string;
  state: OrderState;
  kind: "medication" | "device";
  createdAt: Date;
  deadline: Date;
  /** The patient, known to the exchange; pharmacies see it only once allocated. */
  patient: Patient;
  /** What pharmacies see before allocation: gender and birth year only. */
  anonymousPatient: Patient;
  /** The MedicationRequests / DeviceRequest, referring to the anonymous patient. */
  requests: OrderRequest[];
  pharmacies: PharmacyRequest[];
  allocatedTo: string | null;
  /** When the order was allocated: the requests' second version (about the identified patient) dates from then. */
  allocatedAt: Date | null;
  /** What the allocated pharmacy reported as handed over. */
  dispensed: Resource[];
  history: Array<{ at: Date; event: string }>;
}
