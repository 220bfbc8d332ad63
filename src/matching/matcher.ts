import { type CompiledPath, compilePath, test } from "../fhir/fhirpath.js";
import { compileLinearRegex } from "../text/linear-regex.js";

/** A request or a recorded call, as every matcher sees it. Expensive facts are computed on demand. */
export interface RequestFacts {
  operation: string | null;
  /** An inbound message the sandbox refuses as invalid (R4 validation or the operation's checks); absent for recorded calls. */
  invalid?: boolean;
  direction: "inbound" | "outbound";
  /** Path without the base path. */
  path: string;
  header(name: string): string | undefined;
  /** The message Bundle, when the body carried a readable one. */
  bundle(): Record<string, unknown> | undefined;
  /** Keys of the patients the message is about (see patientKeysOf). */
  patientKeys(): readonly string[];
}

export type HeaderCondition = string | { matches: string } | { absent: true };

/** What a scenario rule's `when`, or a verify query, asks of a request. Every condition must hold. */
export interface MatcherSpec {
  operation?: string | string[];
  direction?: "inbound" | "outbound";
  path?: string | string[];
  headers?: Record<string, HeaderCondition>;
  patient?: string | string[];
  fhirpath?: string | string[];
  /** true: only messages refused as invalid; false: only valid ones. */
  invalid?: boolean;
}

export interface Matcher {
  /** Operations this matcher is limited to, or undefined for any: used to index rules. */
  operations: readonly string[] | undefined;
  /** Patient keys of which the request must name one (`patient`), or undefined for any patient: used to index rules. */
  patients: readonly string[] | undefined;
  /** Whether every condition holds; stops at the first that does not. */
  matches(facts: RequestFacts): boolean;
  /** Why the request does not match; empty when it does. */
  mismatches(facts: RequestFacts): string[];
  /** The first condition that does not hold (conditions are checked in a fixed order, cheapest first), or undefined. */
  firstMismatch(facts: RequestFacts): string | undefined;
}

/** A condition that cannot be compiled, and where in the spec it is (a header pattern's own key; [] for the spec). */
export interface MatcherProblem {
  at: string[];
  message: string;
}

/** A header's value as an explanation shows it: quoted, or "absent" when the request has no such header. */
const shown = (value: string | undefined): string => (value === undefined ? "absent" : JSON.stringify(value));

const many = <T>(v: T | T[] | undefined): T[] | undefined => (v === undefined ? undefined : Array.isArray(v) ? v : [v]);

type Predicate = (facts: RequestFacts) => string | undefined;

/**
 * The one matching core: compiles a spec into pure predicates (FHIRPath and
 * regular expressions compiled once, on a linear-time engine). Returns the
 * problems of a bad spec.
 *
 * @example
 *   compileMatcher({ operation: "add-allergy", fhirpath: "Bundle.entry.resource.ofType(AllergyIntolerance).exists()" })
 */
export function compileMatcher(
  spec: MatcherSpec,
  /** What the FHIRPath condition is called where the spec came from (`where` in verify queries). */
  fhirpathName = "fhirpath",
): { ok: true; matcher: Matcher } | { ok: false; problems: MatcherProblem[] } {
  const problems: MatcherProblem[] = [];
  const predicates: Predicate[] = [];

  const operations = many(spec.operation);
  if (operations) {
    predicates.push((f) =>
      f.operation !== null && operations.includes(f.operation)
        ? undefined
        : `operation was ${f.operation ?? "not recognised"}, expected ${operations.join(" or ")}`,
    );
  }
  if (spec.direction) {
    const direction = spec.direction;
    predicates.push((f) =>
      f.direction === direction ? undefined : `direction was ${f.direction}, expected ${direction}`,
    );
  }
  if (spec.invalid !== undefined) {
    const invalid = spec.invalid;
    predicates.push((f) =>
      (f.invalid ?? false) === invalid
        ? undefined
        : `the message was ${f.invalid ? "invalid" : "valid"}, expected ${invalid ? "an invalid" : "a valid"} one`,
    );
  }
  const paths = many(spec.path);
  if (paths) {
    predicates.push((f) => (paths.includes(f.path) ? undefined : `path was ${f.path}, expected ${paths.join(" or ")}`));
  }
  for (const [name, condition] of Object.entries(spec.headers ?? {})) {
    if (typeof condition === "string") {
      predicates.push((f) => {
        const value = f.header(name);
        return value === condition ? undefined : `header ${name} was ${shown(value)}, expected "${condition}"`;
      });
    } else if ("absent" in condition) {
      predicates.push((f) =>
        f.header(name) === undefined ? undefined : `header ${name} is present, expected it absent`,
      );
    } else {
      const compiled = compileLinearRegex(condition.matches);
      if (!compiled.ok) {
        problems.push({
          at: ["headers", name, "matches"],
          message: `/${condition.matches}/ ${compiled.problem}`,
        });
        continue;
      }
      const pattern = compiled.regex;
      predicates.push((f) => {
        const value = f.header(name);
        let matched = false;
        try {
          matched = value !== undefined && pattern.test(value);
        } catch (error) {
          return `header ${name} was not tested against /${condition.matches}/: ${(error as Error).message}`;
        }
        return matched ? undefined : `header ${name} was ${shown(value)}, expected to match /${condition.matches}/`;
      });
    }
  }
  const patients = many(spec.patient);
  if (patients) {
    predicates.push((f) => {
      const keys = f.patientKeys();
      return patients.some((p) => keys.includes(p))
        ? undefined
        : `patient was ${keys.length > 0 ? keys.join(", ") : "not named"}, expected ${patients.join(" or ")}`;
    });
  }
  for (const expression of many(spec.fhirpath) ?? []) {
    const compiled = compilePath(expression);
    if (!compiled.ok) {
      problems.push({
        at: [],
        message: `${fhirpathName} "${expression}" is not a valid FHIRPath expression: ${compiled.reason}`,
      });
      continue;
    }
    const evaluate: CompiledPath = compiled.evaluate;
    predicates.push((f) => {
      const bundle = f.bundle();
      if (!bundle) return "the request carried no readable message Bundle";
      const result = test(evaluate, bundle);
      if (result.error) return `${fhirpathName} ${JSON.stringify(expression)} failed to evaluate: ${result.error}`;
      if (result.holds) return undefined;
      // What it saw: nothing at all (a path that names no element of this Bundle), or a false.
      return result.empty
        ? `${fhirpathName} ${JSON.stringify(expression)} found nothing in the request Bundle (an empty result counts as false)`
        : `${fhirpathName} ${JSON.stringify(expression)} is false for the request Bundle`;
    });
  }
  if (problems.length > 0) return { ok: false, problems };
  return {
    ok: true,
    matcher: {
      operations,
      patients,
      matches: (facts) => predicates.every((p) => p(facts) === undefined),
      mismatches: (facts) => predicates.flatMap((p) => p(facts) ?? []),
      firstMismatch: (facts) => {
        for (const p of predicates) {
          const why = p(facts);
          if (why !== undefined) return why;
        }
        return undefined;
      },
    },
  };
}
