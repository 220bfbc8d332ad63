/** Who hears what the memory keeps and forgets (the state file). */
export interface ReplayObserver<T> {
  remembered(messageId: string, answer: T): void;
  forgotten(messageId: string): void;
}

/** What bounds the duplicate memory besides the count: a budget of characters, and how many an answer takes. */
export interface ReplayBudget<T> {
  maxChars: number;
  sizeOf(answer: T): number;
}

/**
 * Remembers the answer to each processed message by MessageHeader.id, so a
 * resent message gets the original response instead of being applied twice
 * (FHIR messaging's duplicate rule). Bounded by count and, when given a
 * budget, by the characters the answers hold (the journal may have dropped a
 * call whose answer this still keeps): oldest ids are forgotten first, the
 * newest always kept.
 */
export class ReplayCache<T> {
  readonly #answers = new Map<string, T>();
  #chars = 0;

  constructor(
    readonly limit: number,
    private readonly budget?: ReplayBudget<T>,
    private readonly observer?: ReplayObserver<T>,
  ) {}

  /** Answers a state file kept, oldest first, instead of those held (nothing said to the observer). */
  restore(answers: Iterable<[string, T]>): void {
    this.clear();
    for (const [messageId, answer] of answers) {
      this.#answers.set(messageId, answer);
      this.#chars += this.#size(answer);
    }
  }

  get(messageId: string): T | undefined {
    return this.#answers.get(messageId);
  }

  remember(messageId: string, answer: T): void {
    const earlier = this.#answers.get(messageId);
    if (earlier !== undefined) this.#chars -= this.#size(earlier);
    this.#answers.delete(messageId);
    this.#answers.set(messageId, answer);
    this.#chars += this.#size(answer);
    this.observer?.remembered(messageId, answer);
    while (
      this.#answers.size > 1 &&
      (this.#answers.size > this.limit || (this.budget !== undefined && this.#chars > this.budget.maxChars))
    ) {
      const [oldest, dropped] = this.#answers.entries().next().value as [string, T];
      this.#answers.delete(oldest);
      this.#chars -= this.#size(dropped);
      this.observer?.forgotten(oldest);
    }
  }

  /** Characters the remembered answers hold (0 without a budget). */
  get chars(): number {
    return this.#chars;
  }

  get size(): number {
    return this.#answers.size;
  }

  clear(): void {
    this.#answers.clear();
    this.#chars = 0;
  }

  #size(answer: T): number {
    return this.budget?.sizeOf(answer) ?? 0;
  }
}
