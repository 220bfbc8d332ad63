import type { Subscription } from "fhir/r4.js";

/** A pharmacy the sandbox can push order fulfillment requests to. */
export interface Pharmacy {
  /** Its licence: the identifier value of its Organization. */
  licence: string;
  name: string | undefined;
  /** rest-hook endpoint; undefined once it unsubscribed. */
  endpoint: string | undefined;
  /** Headers sent with every push (from Subscription.channel.header). */
  headers: Record<string, string>;
  /** Where it came from. */
  source: "fixture" | "subscription";
  /** The Subscription as the sandbox holds it (subscriptions only). */
  subscription?: Subscription;
}

/** The pharmacies the sandbox knows, by licence. */
export class PharmacyRegistry {
  readonly #pharmacies = new Map<string, Pharmacy>();

  put(pharmacy: Pharmacy): void {
    this.#pharmacies.set(pharmacy.licence, structuredClone(pharmacy));
  }

  get(licence: string): Pharmacy | undefined {
    const p = this.#pharmacies.get(licence);
    return p ? structuredClone(p) : undefined;
  }

  /** Active: it has an endpoint to push to. */
  isActive(licence: string): boolean {
    return this.#pharmacies.get(licence)?.endpoint !== undefined;
  }

  list(): Pharmacy[] {
    return [...this.#pharmacies.values()].map((p) => structuredClone(p));
  }

  get size(): number {
    return this.#pharmacies.size;
  }

  clear(): void {
    this.#pharmacies.clear();
  }
}
