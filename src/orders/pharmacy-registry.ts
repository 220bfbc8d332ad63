import type { Subscription } from "fhir/r4.js";
import { type LimitRefusal, overLimit } from "../config/state-limits.js";
import { NO_STATE, type StateSink } from "../state/state-sink.js";

/** A pharmacy the sandbox can push order fulfillment requests to. */
export interface Pharmacy {
  /** Its licence: the identifier value of its Organization. */
  licence: string;
  name: string | undefined;
  /** rest-hook endpoint; undefined once it unsubscribed. */
  endpoint: string | undefined;
  /** Headers sent with every push (from Subscription.channel.header). */
  headers: Record<string, string>;
  /** The client certificate its pushes present, by --push-client-certs name (its subscription's extension). */
  clientCertificate?: string;
  /** Where it came from: a scenario fixture, a subscription, or a receiver conformance session (its pharmacy under test). */
  source: "fixture" | "subscription" | "conformance";
  /** The Subscription as the sandbox holds it (subscriptions only). */
  subscription?: Subscription;
}

/**
 * The pharmacies the sandbox knows, by licence; at most `max` of them. The
 * limit is checked by whoever adds one on a caller's behalf (a subscription,
 * a runtime scenario's fixtures), never for the scenario files' fixtures.
 */
export class PharmacyRegistry {
  readonly #pharmacies = new Map<string, Pharmacy>();

  constructor(
    readonly max: number = Number.POSITIVE_INFINITY,
    private readonly sink: StateSink = NO_STATE,
  ) {}

  /** The pharmacies a state file kept, instead of those held (nothing said back to the file). */
  restore(pharmacies: readonly Pharmacy[]): void {
    this.#pharmacies.clear();
    for (const pharmacy of pharmacies) this.#pharmacies.set(pharmacy.licence, pharmacy);
  }

  /** Why the pharmacies of these licences cannot all be kept, if they cannot (those already held take no room). */
  noRoomFor(licences: Iterable<string>): LimitRefusal | undefined {
    const adding = new Set([...licences].filter((l) => !this.#pharmacies.has(l))).size;
    if (adding === 0 || this.#pharmacies.size + adding <= this.max) return undefined;
    return overLimit(
      "pharmacies",
      { held: this.#pharmacies.size, adding, max: this.max, unit: "pharmacies" },
      "A subscription of a licence already held (an update, or status off) takes no room; a reset of the workspace (POST /__admin/reset) forgets every subscribed pharmacy.",
    );
  }

  put(pharmacy: Pharmacy): void {
    const kept = structuredClone(pharmacy);
    this.#pharmacies.set(pharmacy.licence, kept);
    if (this.sink.active) this.sink.put("pharmacy", pharmacy.licence, () => kept);
  }

  /**
   * Holds `pharmacy` for a while only (a receiver conformance session's pharmacy under test): in memory, never in
   * the state file, so that neither a restart nor a crash keeps it. `release` puts back what the licence held before
   * (or nothing), unless something replaced it meanwhile (the pharmacy subscribed, the workspace was reset).
   */
  hold(pharmacy: Pharmacy): () => void {
    const before = this.#pharmacies.get(pharmacy.licence);
    const held = structuredClone(pharmacy);
    this.#pharmacies.set(pharmacy.licence, held);
    return () => {
      if (this.#pharmacies.get(pharmacy.licence) !== held) return;
      if (before) this.#pharmacies.set(pharmacy.licence, before);
      else this.#pharmacies.delete(pharmacy.licence);
    };
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
    this.sink.removeAll("pharmacy");
  }
}
