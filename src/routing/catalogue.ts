import { z } from "zod";
import { formatProblem, readYamlFile } from "../config/yaml-file.js";
import { compileInvariant } from "../validation/invariants/compile-invariant.js";
import { DEFAULT_OPERATIONS } from "./default-operations.js";
import type { Operation, OperationSpec } from "./operation.js";

/**
 * The operation catalogue: lookups by event code (case-insensitive, aliases
 * included) and by id, and the set of message paths to serve.
 */
export interface Catalogue {
  readonly operations: readonly Operation[];
  byEvent(code: string): Operation | undefined;
  byId(id: string): Operation | undefined;
  /** Every event code that routes somewhere, default codes first. */
  readonly knownEvents: readonly string[];
  /** The distinct message paths, without base path. */
  readonly paths: readonly string[];
}

/** Builds a catalogue, compiling every focus check once; throws on a bad table. */
export function buildCatalogue(specs: readonly OperationSpec[] = DEFAULT_OPERATIONS): Catalogue {
  const operations = specs.map(compileOperation);
  const events = new Map<string, Operation>();
  for (const op of operations) {
    for (const code of [op.event, ...op.aliases]) {
      const key = code.toLowerCase();
      const taken = events.get(key);
      if (taken && taken !== op) {
        throw new Error(`event code "${code}" is used by both ${taken.id} and ${op.id}`);
      }
      events.set(key, op);
    }
  }
  const ids = new Map(operations.map((op) => [op.id, op]));
  return {
    operations,
    byEvent: (code) => events.get(code.toLowerCase()),
    byId: (id) => ids.get(id),
    knownEvents: [...operations.map((op) => op.event), ...operations.flatMap((op) => op.aliases)],
    paths: [...new Set(operations.map((op) => op.path))],
  };
}

function compileOperation(spec: OperationSpec): Operation {
  const compiled: Operation["focus"]["compiled"] = {};
  for (const [type, checks] of Object.entries(spec.focus.checks)) {
    compiled[type] = checks.map((check) => {
      // Run by the compiled FHIRPath of the validator: the check holds when it is exactly true. (An expression that
      // does not parse throws here, and already when `npm run build` parses the catalogue's checks.)
      const { outcome } = compileInvariant(check.fhirpath, type);
      return {
        ...check,
        holds: (resource: unknown) => outcome(resource, { resource, rootResource: resource }) === "true",
      };
    });
  }
  return { ...spec, aliases: [...spec.aliases], focus: { ...spec.focus, compiled } };
}

const messagePath = z.string().regex(/^\/[^\s?#]*\$process-message$/, "a path such as /uae-fhir/r4/$process-message");
const eventCode = z.string().regex(/^[^\s]+$/, "an event code without spaces");
/** RFC 6749 §3.3 scope-token: printable ASCII but space, `"` and `\`. */
export const scopeToken = z
  .string()
  .regex(/^[\x21\x23-\x5B\x5D-\x7E]+$/, 'a scope: printable ASCII without spaces, " or \\ (RFC 6749 §3.3)');

/** Schema of an operations file: per operation id, what to change. */
export const operationsFileSchema = z
  .object({
    operations: z.record(
      z.string(),
      z
        .object({
          event: eventCode.optional(),
          aliases: z.array(eventCode).optional(),
          path: messagePath.optional(),
          scope: scopeToken.optional(),
        })
        .strict(),
    ),
  })
  .strict();

type OperationsFile = z.infer<typeof operationsFileSchema>;

/**
 * Applies an operations file to the default table.
 *
 * @example
 *   # operations.yaml — mirror a staging environment's codes
 *   operations:
 *     add-allergy: { event: AllergyIntolerance-Create, aliases: [add-allergy] }
 *     view-patient-profile: { scope: patient.read }
 */
export function loadOperationsFile(file: string, base: readonly OperationSpec[] = DEFAULT_OPERATIONS): OperationSpec[] {
  // Unknown ids and clashing codes are checked while decoding, so the error names the file and line.
  const read = readYamlFile(
    file,
    operationsFileSchema.superRefine((value, ctx) => {
      for (const problem of tableProblems(value, base)) ctx.addIssue({ code: "custom", ...problem });
    }),
  );
  if (!read.ok) throw new Error(`invalid operations file:\n${read.problems.map(formatProblem).join("\n")}`);
  return applyChanges(read.value, base);
}

function applyChanges(value: OperationsFile, base: readonly OperationSpec[]): OperationSpec[] {
  return base.map((op) => {
    const change = value.operations[op.id];
    if (!change) return op;
    return {
      ...op,
      event: change.event ?? op.event,
      path: change.path ?? op.path,
      scope: change.scope ?? op.scope,
      aliases: [...op.aliases, ...(change.aliases ?? [])],
    };
  });
}

type Problem = { path: Array<string | number>; message: string };

/** Operation ids the table does not have, and event codes the changed table would give two operations. */
function tableProblems(value: OperationsFile, base: readonly OperationSpec[]): Problem[] {
  const known = new Set(base.map((op) => op.id));
  const problems: Problem[] = Object.keys(value.operations)
    .filter((id) => !known.has(id))
    .map((id) => ({ path: ["operations", id], message: `unknown operation "${id}"; known: ${[...known].join(", ")}` }));
  // The table's own codes first, then the file's, so that a clash is reported where the file says it.
  const claims: Array<{ code: string; id: string; path?: Problem["path"] }> = [];
  for (const op of base) {
    const change = value.operations[op.id];
    if (!change?.event) claims.push({ code: op.event, id: op.id });
    for (const code of op.aliases) claims.push({ code, id: op.id });
  }
  for (const [id, change] of Object.entries(value.operations)) {
    if (!known.has(id)) continue;
    if (change.event) claims.push({ code: change.event, id, path: ["operations", id, "event"] });
    change.aliases?.forEach((code, i) => {
      claims.push({ code, id, path: ["operations", id, "aliases", i] });
    });
  }
  const owners = new Map<string, string>();
  for (const { code, id, path } of claims) {
    const owner = owners.get(code.toLowerCase());
    if (owner === undefined) owners.set(code.toLowerCase(), id);
    else if (owner !== id && path) {
      problems.push({
        path,
        message: `event code "${code}" would route to both ${owner} and ${id}; give each its own`,
      });
    }
  }
  return problems;
}
