import { durationMs } from "../scenarios/duration.js";
import type { Workspace } from "../workspace/workspace.js";
import { SessionCallWatch } from "./call-watch.js";
import { coverage } from "./coverage.js";
import { ACTION_KINDS, type PlanStep, type StepKindName, stepKind } from "./plan-schema.js";
import type { Evidence, SessionReport, StepResult, TestResult } from "./session-report.js";
import type { ConformanceSession, LoadedPlan } from "./sessions-api.js";
import type {
  ConformanceSandbox,
  ObservedCall,
  SessionFacts,
  StepContext,
  StepRun,
  StepVerdict,
} from "./step-context.js";

/** No wait of a plan, scaled, is longer than this: a session never holds a workspace for hours. */
export const MAX_WAIT_MS = 10 * 60_000;

export interface SessionInit {
  facts: SessionFacts;
  plan: LoadedPlan;
  workspace: Workspace;
  sandbox: ConformanceSandbox;
  kinds: Partial<Record<StepKindName, StepRun>>;
}

const iso = (date: Date) => date.toISOString();

/** A test's status from its steps' (those not pending): the rules every report format shows. */
export function testStatus(steps: readonly Pick<StepResult, "status">[]): TestResult["status"] {
  const ended = steps.filter((s) => s.status !== "pending" && s.status !== "running");
  if (ended.some((s) => s.status === "fail")) return "fail";
  if (ended.some((s) => s.status === "warning")) return "warning";
  if (ended.length > 0 && ended.every((s) => s.status === "skip")) return "skip";
  return ended.length === 0 ? "pending" : "pass";
}

/**
 * One conformance session: the plan's tests in order, each test's steps in order, each step by its kind's
 * implementation; the report kept as it goes (listeners hear each change). It stops on `stop` (DELETE, a reset,
 * the workspace dropped, the sandbox closing): the step running ends as skipped, the rest stay pending.
 */
export class Session implements ConformanceSession {
  readonly id: string;
  readonly workspace: string;
  readonly done: Promise<SessionReport>;
  readonly #report: SessionReport;
  readonly #init: SessionInit;
  readonly #abort = new AbortController();
  readonly #listeners = new Set<(report: SessionReport) => void>();
  readonly #watch: SessionCallWatch;
  readonly #cleanups: Array<() => void> = [];
  #finish!: (report: SessionReport) => void;
  #ended = false;

  constructor(init: SessionInit) {
    this.#init = init;
    const { facts, plan, workspace, sandbox } = init;
    this.id = facts.id;
    this.workspace = workspace.id;
    this.#watch = new SessionCallWatch(workspace);
    this.done = new Promise((resolve) => {
      this.#finish = resolve;
    });
    this.#report = {
      id: facts.id,
      role: facts.role,
      plan: { id: plan.plan.id, title: plan.plan.title, version: plan.plan.version, source: plan.source },
      workspace: workspace.id,
      state: "running",
      startedAt: iso(sandbox.now()),
      endedAt: null,
      stopReason: null,
      participants: {
        sandbox: { messageUrl: sandbox.messageUrl(workspace) },
        system: {
          operations: [...facts.operations],
          pharmacyUrl: facts.pharmacyUrl,
          pharmacyLicence: facts.pharmacyLicence,
        },
      },
      timeScale: facts.timeScale,
      tests: plan.plan.tests.map((test) => {
        const rule = plan.plan.rules[test.rule];
        return {
          id: test.id,
          title: test.title,
          description: test.description ?? null,
          rule: { id: test.rule, source: rule?.source ?? "host", ref: rule?.ref ?? "", text: rule?.text ?? test.rule },
          required: test.required,
          status: "pending",
          steps: (test.steps as PlanStep[]).map((step) => {
            const kind = stepKind(step);
            return {
              id: step.id,
              title: step.title,
              kind,
              type: ACTION_KINDS.has(kind) ? "action" : "expectation",
              required: test.required && step.required !== false,
              status: "pending",
              expected: step.title,
              message: null,
              fix: step.fix ?? null,
              evidence: [],
              startedAt: null,
              endedAt: null,
            } satisfies StepResult;
          }),
        } satisfies TestResult;
      }),
      summary: { tests: plan.plan.tests.length, passed: 0, failed: 0, warnings: 0, skipped: 0 },
      coverage: { operations: { exercised: [], notExercised: [] }, rules: { checked: [], notChecked: [] } },
    };
    this.#refresh();
  }

  /** Something to undo when the session ends (a runtime rule it added). */
  onEnd(cleanup: () => void): void {
    if (this.#ended) cleanup();
    else this.#cleanups.push(cleanup);
  }

  get running(): boolean {
    return !this.#ended;
  }

  report(): SessionReport {
    return structuredClone(this.#report);
  }

  onUpdate(listener: (report: SessionReport) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  stop(reason: string): void {
    if (this.#ended) return;
    this.#report.stopReason = reason;
    this.#abort.abort(new Error(reason));
    // Ended here and now, not when the step running notices: what the session added goes before the caller goes on
    // (a reset, the sandbox closing).
    const now = iso(this.#init.sandbox.now());
    for (const test of this.#report.tests) {
      if (test.status !== "running") continue;
      for (const step of test.steps) {
        if (step.status !== "running") continue;
        step.status = "skip";
        step.message = `not run to an end: the session was stopped (${reason})`;
        step.endedAt = now;
      }
      test.status = testStatus(test.steps);
    }
    this.#end();
  }

  #changed(): void {
    this.#refresh();
    if (this.#listeners.size === 0) return;
    const copy = this.report();
    for (const listener of [...this.#listeners]) {
      try {
        listener(copy);
      } catch {
        // A listener's failure is its own: the session goes on.
      }
    }
  }

  /** The summary and coverage, from the tests and the calls seen. */
  #refresh(): void {
    const tests = this.#report.tests;
    this.#report.summary = {
      tests: tests.length,
      passed: tests.filter((t) => t.status === "pass").length,
      failed: tests.filter((t) => t.status === "fail").length,
      warnings: tests.filter((t) => t.status === "warning").length,
      skipped: tests.filter((t) => t.status === "skip").length,
    };
    this.#report.coverage = coverage(
      this.#watch.all(),
      this.#init.sandbox.operationIds(),
      tests,
      Object.keys(this.#init.plan.plan.rules),
    );
  }

  /** Runs the plan; resolves `done` at its end. */
  async run(): Promise<void> {
    const signal = this.#abort.signal;
    const stopped = new Promise<"stopped">((resolve) => {
      if (signal.aborted) resolve("stopped");
      else signal.addEventListener("abort", () => resolve("stopped"), { once: true });
    });
    const memory: Record<string, unknown> = {};
    const ctx = this.#context(memory);
    const planTests = this.#init.plan.plan.tests;
    for (const [t, test] of this.#report.tests.entries()) {
      if (this.#ended) return;
      const planSteps = planTests[t]?.steps as PlanStep[];
      test.status = "running";
      this.#changed();
      let failed: string | undefined;
      for (const [s, step] of test.steps.entries()) {
        if (this.#ended) return;
        if (failed !== undefined) {
          step.status = "skip";
          step.message = `not run: step ${failed} failed`;
          continue;
        }
        const planStep = planSteps[s] as PlanStep;
        step.status = "running";
        step.startedAt = iso(this.#init.sandbox.now());
        this.#changed();
        const verdict = await Promise.race([this.#runStep(ctx, planStep), stopped]);
        // Stopped meanwhile: stop() ended the step and the session.
        if (verdict === "stopped" || this.#ended) return;
        step.endedAt = iso(this.#init.sandbox.now());
        step.status = verdict.status === "fail" && !step.required ? "warning" : verdict.status;
        step.message = verdict.message;
        step.evidence = verdict.evidence;
        if (step.status === "fail") failed = step.id;
        this.#changed();
      }
      test.status = testStatus(test.steps);
      this.#changed();
    }
    this.#end();
  }

  async #runStep(ctx: StepContext, step: PlanStep): Promise<StepVerdict> {
    const kind = stepKind(step);
    const run = this.#init.kinds[kind];
    if (!run) {
      return {
        status: "fail",
        message: `not implemented: this sandbox has no implementation of the step kind ${kind}`,
        evidence: [],
      };
    }
    try {
      return await run(ctx, step[kind] as never, step);
    } catch (error) {
      return {
        status: "fail",
        message: `the step could not run: ${error instanceof Error ? error.message : String(error)}`,
        evidence: [],
      };
    }
  }

  #end(): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#watch.close();
    for (const cleanup of this.#cleanups.splice(0)) {
      try {
        cleanup();
      } catch {
        // Each undoes its own part; one failing leaves the others to run.
      }
    }
    const report = this.#report;
    report.endedAt = iso(this.#init.sandbox.now());
    if (this.#abort.signal.aborted) report.state = "stopped";
    else report.state = report.tests.some((t) => t.required && t.status === "fail") ? "failed" : "passed";
    this.#changed();
    this.#listeners.clear();
    this.#finish(this.report());
  }

  #context(memory: Record<string, unknown>): StepContext {
    const { facts, workspace, sandbox } = this.#init;
    return {
      session: facts,
      workspace,
      sandbox,
      signal: this.#abort.signal,
      memory,
      calls: this.#watch,
      ms(duration, fallbackMs) {
        const base = duration === undefined ? fallbackMs : durationMs(duration);
        return Math.min(MAX_WAIT_MS, Math.round(base * facts.timeScale));
      },
      evidence: (call, note) => evidenceOf(call, note),
      onEnd: (cleanup: () => void) => this.onEnd(cleanup),
    } as StepContext;
  }
}

export function evidenceOf(call: ObservedCall, note: string): Evidence {
  const { record } = call;
  return {
    callId: record.id,
    direction: record.direction,
    operation: record.operation,
    messageId: record.messageId,
    status: record.response?.status ?? null,
    at: record.at.toISOString(),
    note,
  };
}
