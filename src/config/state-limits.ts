/**
 * The most one workspace may hold of the state its users add besides calls and patients (CONTRACT §15): runtime
 * scenarios, orders, pharmacies and asynchronous answers not yet delivered. Each has a serve flag; past it the
 * request is refused and nothing changes.
 */
export interface StateLimits {
  /** Rules added at run time (POST /__admin/scenarios). */
  runtimeRules: number;
  /** UTF-8 bytes of the scenario documents added at run time. */
  runtimeScenarioBytes: number;
  /** UTF-8 bytes of the FHIRPath expressions in them (`when.fhirpath`, `{{ fhirpath('…') }}`): the costliest part. */
  runtimeFhirpathBytes: number;
  /** Orders held; when full, the oldest finished one (dispensed, expired, cancelled) makes room. */
  orders: number;
  /** Pharmacies held, subscribed or fixtures. */
  pharmacies: number;
  /** Asynchronous answers not yet delivered (waiting for their delay, queued, in flight). */
  asyncAnswers: number;
}

export type StateLimit = keyof StateLimits;

/** The serve flag of each limit: every refusal names it. */
export const LIMIT_FLAGS: Readonly<Record<StateLimit, string>> = {
  runtimeRules: "--max-runtime-rules",
  runtimeScenarioBytes: "--max-runtime-scenario-bytes",
  runtimeFhirpathBytes: "--max-runtime-fhirpath-bytes",
  orders: "--max-orders",
  pharmacies: "--max-pharmacies",
  asyncAnswers: "--max-async-answers",
};

export const UNLIMITED: StateLimits = {
  runtimeRules: Number.POSITIVE_INFINITY,
  runtimeScenarioBytes: Number.POSITIVE_INFINITY,
  runtimeFhirpathBytes: Number.POSITIVE_INFINITY,
  orders: Number.POSITIVE_INFINITY,
  pharmacies: Number.POSITIVE_INFINITY,
  asyncAnswers: Number.POSITIVE_INFINITY,
};

/** A request refused because it would take a workspace past one of its limits. */
export interface LimitRefusal {
  limit: StateLimit;
  flag: string;
  diagnostics: string;
}

/**
 * The refusal of adding `adding` of something to `held`, past `max`: what is held, what was asked, the limit and
 * its flag, and how to make room (`free`).
 */
export function overLimit(
  limit: StateLimit,
  what: { held: number; adding: number; max: number; unit: string },
  free: string,
): LimitRefusal {
  const flag = LIMIT_FLAGS[limit];
  return {
    limit,
    flag,
    diagnostics: `This workspace holds ${what.held} ${what.unit} and this would add ${what.adding}, past its most of ${what.max} (${flag}); nothing was changed. ${free} The operator can raise ${flag}.`,
  };
}
