import type { Logger } from "../log/logger.js";
import { durationMs } from "../scenarios/duration.js";
import type { LoadedScenario } from "../scenarios/load.js";
import type { PushSpec } from "../scenarios/schema.js";
import { toOrderSpec } from "./order-spec.js";
import type { OrderWorkflow } from "./order-workflow.js";

/**
 * Scenario `push:` entries: orders created on start (and reset) or when a
 * pharmacy subscribes, after a delay, repeated at an interval, never more
 * than `times` per run (one run per start, one per subscription).
 */
export class ScheduledPushes {
  readonly #timers = new Set<ReturnType<typeof setTimeout>>();
  #entries: PushSpec[] = [];

  constructor(
    private readonly workflow: OrderWorkflow,
    private readonly logger: Logger,
  ) {}

  /** Takes the push entries of a scenario set and runs the `on: start` ones. */
  start(scenarios: readonly LoadedScenario[]): void {
    this.stop();
    this.#entries = scenarios.flatMap((s) => s.scenario.push ?? []);
    for (const entry of this.#entries) if ((entry.on ?? "start") === "start") this.#run(entry, undefined);
  }

  /** A pharmacy subscribed: run the `on: subscribed` entries for it. */
  subscribed(licence: string): void {
    for (const entry of this.#entries) if (entry.on === "subscribed") this.#run(entry, licence);
  }

  stop(): void {
    for (const timer of this.#timers) clearTimeout(timer);
    this.#timers.clear();
  }

  #run(entry: PushSpec, licence: string | undefined): void {
    const times = entry.times ?? 1;
    // Counted per run, not per entry: "on: subscribed" fires for each pharmacy that subscribes.
    let fired = 0;
    const fire = () => {
      if (fired >= times) return;
      fired++;
      // Repeats are planned first: a failure of this push must not cancel the next ones.
      if (entry.every !== undefined && fired < times) this.#later(fire, durationMs(entry.every));
      const spec = toOrderSpec(entry.order ?? {});
      if (licence && !spec.pharmacies) spec.pharmacies = [licence];
      try {
        const created = this.workflow.create(spec);
        if (!created.ok) {
          this.logger.error(
            `scenario push ${entry.name ?? ""} made no order: ${created.issues.map((i) => i.diagnostics).join("; ")}`,
          );
        }
      } catch (error) {
        // A timer's callback: thrown on, it would end the process as an uncaught exception.
        this.logger.error(`scenario push ${entry.name ?? ""} failed`, error);
      }
    };
    this.#later(fire, entry.after === undefined ? 0 : durationMs(entry.after));
  }

  #later(fn: () => void, ms: number): void {
    const timer = setTimeout(() => {
      this.#timers.delete(timer);
      fn();
    }, ms);
    this.#timers.add(timer);
  }
}
