import type { Bundle, OperationOutcome, OperationOutcomeIssue } from "fhir/r4.js";
import fhirpath from "fhirpath";
import r4 from "fhirpath/fhir-context/r4";
import { expect } from "vitest";
import type { Reply } from "./messages.js";

/**
 * Checks on the OperationOutcomes of R4 validation (CONTRACT §5, §11): an
 * issue's `expression` is one FHIRPath that evaluates, with the fhirpath
 * library and its R4 model, to exactly the offending node of the request
 * Bundle (or, for a missing element, to its parent).
 */

/** A node found by a FHIRPath: its value and where it sits (property names and array indexes from the root). */
export interface Located {
  value: unknown;
  location: string;
}

interface Node {
  data: unknown;
  parentResNode: Node | null;
  propName: string | null;
  index: number | null;
}

/** The JSON key of a node: FHIRPath names a choice element `value`, JSON `valueQuantity`. */
function jsonKey(node: Node): string {
  const name = node.propName as string;
  const parent = node.parentResNode?.data;
  if (typeof parent !== "object" || parent === null || name in parent) return name;
  const choice = Object.keys(parent).find((k) => k.startsWith(name) && /^[A-Z]/.test(k.slice(name.length)));
  return choice ?? name;
}

function locationOf(node: Node): string {
  const steps: string[] = [];
  for (let n: Node | null = node; n; n = n.parentResNode) {
    if (n.propName === null || n.propName === undefined) continue;
    steps.push(`${jsonKey(n)}${n.index === null || n.index === undefined ? "" : `[${n.index}]`}`);
  }
  return steps.reverse().join(".");
}

/** The nodes `expression` evaluates to in `bundle` (R4 model); throws when the FHIRPath does not parse. */
export function locate(bundle: unknown, expression: string): Located[] {
  const nodes = fhirpath.evaluate(bundle as object, expression, undefined, r4, {
    resolveInternalTypes: false,
  }) as unknown[];
  const values = fhirpath.evaluate(bundle as object, expression, undefined, r4) as unknown[];
  return nodes.map((node, i) => {
    const n = node as Partial<Node>;
    const isNode = typeof node === "object" && node !== null && "parentResNode" in n;
    return { value: values[i], location: isNode ? locationOf(n as Node) : `<value ${JSON.stringify(node)}>` };
  });
}

/** What `locate` returns, or the error message when the expression does not evaluate. */
function tryLocate(bundle: unknown, expression: string): Located[] | string {
  try {
    return locate(bundle, expression);
  } catch (error) {
    return String((error as Error).message ?? error);
  }
}

export interface ExpectedIssue {
  /** FHIR IssueType code. */
  code: string;
  /** A FHIRPath to the node the issue must point at (the test's own; the sandbox may phrase it differently). */
  expression: string;
  /** The node taken from the request by hand: `expression` must evaluate to exactly this (deep-equal). */
  target?: unknown;
  /** Default "error". */
  severity?: OperationOutcomeIssue["severity"];
  /** Each must occur in the issue's diagnostics. */
  says?: RegExp[];
}

function describeIssues(outcome: OperationOutcome): string {
  return (outcome.issue ?? [])
    .map((i) => `  - ${i.severity} ${i.code} @ ${JSON.stringify(i.expression)}: ${i.diagnostics ?? ""}`)
    .join("\n");
}

/**
 * Checks a test's own expectation before it meets the sandbox: `expression`
 * finds a node of `bundle`; with `target`, exactly one, deep-equal to it.
 * Returns the nodes.
 */
export function expectNodeAt(bundle: Bundle, expected: Pick<ExpectedIssue, "expression" | "target">): Located[] {
  const wanted = locate(bundle, expected.expression);
  expect(wanted.length, `the test's FHIRPath ${expected.expression} must find the node`).toBeGreaterThan(0);
  if ("target" in expected) {
    expect(wanted, `the test's FHIRPath ${expected.expression} must find exactly one node`).toHaveLength(1);
    expect(wanted[0]?.value, `the node at ${expected.expression}`).toEqual(expected.target);
  }
  return wanted;
}

/**
 * Expects an issue of `outcome` with this code (and severity) whose single
 * `expression` evaluates on `bundle` to the same node(s) as `expected.expression`
 * — the same places in the Bundle, not merely equal values. Also checks the
 * test's own expression: it must find a node; with `target`, exactly one,
 * deep-equal to `target`.
 * Returns the matching issue.
 */
export function expectIssueAt(
  outcome: OperationOutcome,
  bundle: Bundle,
  expected: ExpectedIssue,
): OperationOutcomeIssue {
  const wanted = expectNodeAt(bundle, expected);
  const where = wanted.map((n) => n.location).join(", ");

  const severity = expected.severity ?? "error";
  const candidates = (outcome.issue ?? []).filter((i) => i.code === expected.code && i.severity === severity);
  const found = candidates.find((i) => {
    if (i.expression?.length !== 1) return false;
    const at = tryLocate(bundle, i.expression[0] as string);
    return typeof at !== "string" && at.map((n) => n.location).join(", ") === where;
  });
  expect(
    found,
    `expected a ${severity} issue "${expected.code}" at ${expected.expression} (${where}); the outcome has:\n${describeIssues(outcome)}`,
  ).toBeDefined();
  const issue = found as OperationOutcomeIssue;
  expect(issue.diagnostics, "diagnostics say what is wrong").toMatch(/\S/);
  for (const says of expected.says ?? [])
    expect(issue.diagnostics, `diagnostics of ${expected.expression}`).toMatch(says);
  return issue;
}

/** Every issue has severity, code, diagnostics and exactly one FHIRPath, which finds a node of `bundle`. */
export function expectWellFormedIssues(outcome: OperationOutcome, bundle: Bundle): void {
  for (const issue of outcome.issue ?? []) {
    expect(issue.severity).toMatch(/^(fatal|error|warning|information)$/);
    expect(issue.code).toMatch(/^[a-z-]+$/);
    expect(issue.diagnostics).toMatch(/\S/);
    expect(issue.expression, JSON.stringify(issue)).toHaveLength(1);
    const at = tryLocate(bundle, issue.expression?.[0] as string);
    expect(typeof at === "string" ? at : at.length > 0, `${issue.expression?.[0]} finds a node of the request`).toBe(
      true,
    );
  }
}

/**
 * A refusal as "not processed" (CONTRACT §5, §11): HTTP 400 with a bare
 * OperationOutcome. Returns the OperationOutcome.
 */
export function expectRefused(reply: Reply): OperationOutcome {
  expect(reply.status, `expected 400, got ${reply.status}: ${JSON.stringify(reply.body).slice(0, 400)}`).toBe(400);
  expect(reply.body?.resourceType).toBe("OperationOutcome");
  return reply.body as OperationOutcome;
}

/** The OperationOutcome an ok response message refers to from MessageHeader.response.details (warnings). */
export function detailsOutcome(reply: Reply): OperationOutcome {
  expect(reply.status, JSON.stringify(reply.body).slice(0, 400)).toBe(200);
  const bundle = reply.body as Bundle;
  const header = bundle.entry?.[0]?.resource as { response?: { code?: string; details?: { reference?: string } } };
  expect(header.response?.code).toBe("ok");
  const ref = header.response?.details?.reference;
  expect(ref, "MessageHeader.response.details").toBeDefined();
  const entry = bundle.entry?.find(
    (e) => e.fullUrl === ref || (e.resource && `${e.resource.resourceType}/${e.resource.id}` === ref),
  );
  expect(entry?.resource?.resourceType, `response.details ${ref} resolves to an entry`).toBe("OperationOutcome");
  return entry?.resource as OperationOutcome;
}
