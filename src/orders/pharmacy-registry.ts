/** A pharmacy the sandbox can push order fulfillment requests to. */
export interface Pharmacy {
  /** Its licence: the identifier value of its Organization. */
  licence: string;
  name: string | undefined;
  /** rest-hook endpoint; undefined while it has no active subscription. */
  endpoint: string | undefined;
  /** Headers sent with every push (from Subscription.channel.header). */
  headers: Record<string, string>;
  /** Where it came from. */
  source: "fixture" | "subscription";
}

/** The pharmacies the sandbox knows, by licence. */
export class PharmacyRegistry {
  readonly #pharmacies = new Map<string, Pharmacy>();

  put(pharmacy: Pharmacy): void {
    this.#pharmacies.set(pharmacy.licence, { ...pharmacy, headers: { ...pharmacy.headers } });
  }

  get(licence: string): Pharmacy | undefined {
    const p = this.#pharmacies.get(licence);
    return p ? { ...p, headers: { ...p.headers } } : undefined;
  }

  list(): Pharmacy[] {
    return [...this.#pharmacies.values()].map((p) => ({ ...p, headers: { ...p.headers } }));
  }

  clear(): void {
    this.#pharmacies.clear();
  }
}
