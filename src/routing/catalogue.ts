import { z } from "zod";
import { formatProblem, readYamlFile } from "../config/yaml-file.js";
import { compilePath } from "../fhir/fhirpath.js";
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
      const result = compilePath(check.fhirpath);
      if (!result.ok) throw new Error(`${spec.id}: focus check "${check.fhirpath}" does not compile: ${result.reason}`);
      return { ...check, evaluate: result.evaluate };
    });
  }
  return { ...spec, aliases: [...spec.aliases], focus: { ...spec.focus, compiled } };
}

const messagePath = z.string().regex(/^\/[^\s?#]*\$process-message$/, "a path such as /uae-fhir/r4/$process-message");
const eventCode = z.string().regex(/^[^\s]+$/, "an event code without spaces");

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
        })
        .strict(),
    ),
  })
  .strict();

/**
 * Applies an operations file to the default table.
 *
 * @example
 *   # operations.yaml — mirror a staging environment's codes
 *   operations:
 *     add-allergy: { event: AllergyIntolerance-Create, aliases: [add-allergy] }
 */
export function loadOperationsFile(file: string, base: readonly OperationSpec[] = DEFAULT_OPERATIONS): OperationSpec[] {
  const read = readYamlFile(file, operationsFileSchema);
  if (!read.ok) throw new Error(`invalid operations file:\n${read.problems.map(formatProblem).join("\n")}`);
  const byId = new Map(base.map((op) => [op.id, op]));
  for (const id of Object.keys(read.value.operations)) {
    if (!byId.has(id)) {
      throw new Error(`${file}: unknown operation "${id}"; known: ${[...byId.keys()].join(", ")}`);
    }
  }
  return base.map((op) => {
    const change = read.value.operations[op.id];
    if (!change) return op;
    return {
      ...op,
      event: change.event ?? op.event,
      path: change.path ?? op.path,
      aliases: [...op.aliases, ...(change.aliases ?? [])],
    };
  });
}
