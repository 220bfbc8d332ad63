/**
 * Remembers the answer to each processed message by MessageHeader.id, so a
 * resent message gets the original response instead of being applied twice
 * (FHIR messaging's duplicate rule). Bounded: oldest ids are forgotten first.
 */
export class ReplayCache<T> {
  readonly #answers = new Map<string, T>();

  constructor(readonly limit: number) {}

  get(messageId: string): T | undefined {
    return this.#answers.get(messageId);
  }

  remember(messageId: string, answer: T): void {
    this.#answers.set(messageId, answer);
    if (this.#answers.size > this.limit) {
      const oldest = this.#answers.keys().next().value;
      if (oldest !== undefined) this.#answers.delete(oldest);
    }
  }

  clear(): void {
    this.#answers.clear();
  }
}
