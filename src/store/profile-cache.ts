import type { GeneratedProfile } from "../generate/patient-profile.js";

/**
 * Generated patient profiles shared by every workspace's store. A profile is
 * a pure function of the seed, the patient's key and what the message gave,
 * so one copy serves every workspace that meets the patient (the store
 * freezes records when it keeps them, so sharing them is safe), and a new
 * workspace's fixture patients cost no generation. Bounded: the least
 * recently used profile is forgotten first (a store that holds it keeps it).
 *
 * @example
 *   const profile = cache.get(`${seed}|${key}`, () => generateProfile(seed, key));
 */
export class ProfileCache {
  readonly #profiles = new Map<string, GeneratedProfile>();

  constructor(readonly limit = 256) {}

  get(key: string, make: () => GeneratedProfile): GeneratedProfile {
    const known = this.#profiles.get(key);
    if (known) {
      // Most recently used last: a Map keeps insertion order.
      this.#profiles.delete(key);
      this.#profiles.set(key, known);
      return known;
    }
    const made = make();
    this.#profiles.set(key, made);
    if (this.#profiles.size > this.limit) this.#profiles.delete(this.#profiles.keys().next().value as string);
    return made;
  }
}
