import fc from "fast-check";
import type { Resource } from "fhir/r4.js";
import { beforeAll, describe, expect, it } from "vitest";
import { expectIssueAt, expectNodeAt, expectRefused } from "../support/fhir-issues.js";
import { schemaProblems } from "../support/json-schema.js";
import { example, exampleFiles, post } from "../support/messages.js";
import { MUTATION_KINDS, type Mutation, type MutationKind, mutate, mutationSites } from "../support/mutations.js";
import { type ExampleOperation, exampleOperations, FOCUS, sandboxWith } from "../support/validation-app.js";
import { r4Problems } from "../support/validator.js";

/**
 * Valid HL7 examples, made invalid one mutation at a time — a date broken
 * ("2013-13-01"), a code of a required binding swapped for one outside its
 * value set, an unknown element added at some object node, a required
 * element (min ≥ 1) dropped — with what is required or bound decided from
 * HL7's own definitions (test/support/r4-definitions.ts), not the sandbox's.
 * Each mutated example, sent through its operation, must be refused with 400
 * and an issue whose FHIRPath finds the mutated node (the parent of a
 * dropped element). Wherever an independent validator (Medplum's, HL7's JSON
 * Schema) finds an error in a resource, the sandbox must refuse it too.
 */

/** Fixed, so a failure reproduces; fast-check prints it (and the shrunk case) on failure. Override with FC_SEED. */
const SEED = Number(process.env.FC_SEED ?? 20_261_123);
const RUNS = Number(process.env.FC_RUNS ?? 200);

const corpus = exampleOperations(exampleFiles());

beforeAll(() => {
  // Indexing Medplum's definitions and compiling the schema take seconds, once.
  r4Problems(example("patient-example.json"));
  schemaProblems(example("patient-example.json"));
}, 60_000);

async function sendMutated(operation: ExampleOperation, mutation: Mutation) {
  const sandbox = sandboxWith();
  try {
    const request = operation.message(mutation.resource as unknown as Resource);
    const expression = `${FOCUS}${mutation.path}`;
    expectNodeAt(request, { expression });
    const reply = await post(sandbox.app, request);
    return { request, reply, expression };
  } finally {
    sandbox.close();
  }
}

describe("the mutation sites, from HL7's definitions", () => {
  it("every kind of mutation has sites in the corpus; every example has somewhere to add an element", () => {
    const totals: Record<MutationKind, number> = {
      "break-date": 0,
      "flip-required-code": 0,
      "unknown-element": 0,
      "drop-required": 0,
    };
    for (const operation of corpus) {
      const sites = mutationSites(operation.resource());
      expect(sites["unknown-element"], operation.file).toBeGreaterThan(0);
      for (const kind of MUTATION_KINDS) totals[kind] += sites[kind];
    }
    for (const kind of MUTATION_KINDS) expect(totals[kind], kind).toBeGreaterThan(corpus.length / 2);
  });

  it("the unmutated corpus is valid for both independent validators (so every complaint below is the mutation's)", () => {
    for (const operation of corpus) {
      const resource = operation.resource();
      expect(r4Problems(resource), operation.file).toEqual([]);
      expect(schemaProblems(resource), operation.file).toEqual([]);
    }
  });
});

describe("every mutation of a valid example is refused at the mutated node (property)", () => {
  it(`fast-check, seed ${SEED}, ${RUNS} runs`, async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...corpus.map((o) => o.file)),
        fc.constantFrom(...MUTATION_KINDS),
        fc.nat({ max: 10_000 }),
        async (file, kind, pick) => {
          const operation = corpus.find((o) => o.file === file) as ExampleOperation;
          const mutation = mutate(operation.resource(), kind, pick);
          fc.pre(mutation !== undefined);
          const m = mutation as Mutation;
          try {
            const { request, reply, expression } = await sendMutated(operation, m);
            const outcome = expectRefused(reply);
            expectIssueAt(outcome, request, { code: m.code, expression });
          } catch (error) {
            throw new Error(`${file} via ${operation.event}, ${m.description}: ${(error as Error).message}`);
          }
        },
      ),
      { seed: SEED, numRuns: RUNS },
    );
  }, 180_000);
});

/** A deterministic sample of the mutations: per example and kind, the sites picked by 0, 1 and 2. */
function sample(): Array<{ operation: ExampleOperation; mutation: Mutation }> {
  const out: Array<{ operation: ExampleOperation; mutation: Mutation }> = [];
  for (const operation of corpus) {
    const sites = mutationSites(operation.resource());
    for (const kind of MUTATION_KINDS) {
      for (let pick = 0; pick < Math.min(3, sites[kind]); pick++) {
        const mutation = mutate(operation.resource(), kind, pick);
        if (mutation) out.push({ operation, mutation });
      }
    }
  }
  return out;
}

describe("agreement with the independent validators", () => {
  it("wherever Medplum or HL7's JSON Schema finds an error in a mutated example, the sandbox refuses the message", async () => {
    const disagreements: string[] = [];
    let flagged = 0;
    for (const { operation, mutation } of sample()) {
      const resource = mutation.resource as unknown as Resource;
      const medplum = r4Problems(resource);
      const schema = schemaProblems(resource as { resourceType: string });
      if (medplum.length === 0 && schema.length === 0) continue;
      flagged++;
      const { reply } = await sendMutated(operation, mutation);
      if (reply.status !== 400) {
        disagreements.push(
          `${operation.file} (${mutation.description}): sandbox ${reply.status}; Medplum: ${medplum.join("; ") || "-"}; schema: ${schema.join("; ") || "-"}`,
        );
      }
    }
    // The validators do find errors in the mutations (else this test would prove nothing).
    expect(flagged).toBeGreaterThan(100);
    expect(disagreements, `${disagreements.length} of ${flagged} flagged mutations accepted`).toEqual([]);
  }, 180_000);

  it("the JSON Schema flags every unknown element and every broken date; Medplum every dropped required element", () => {
    const missed: string[] = [];
    for (const { operation, mutation } of sample()) {
      const resource = mutation.resource as { resourceType: string };
      if (mutation.kind === "unknown-element" || mutation.kind === "break-date") {
        if (schemaProblems(resource).length === 0) missed.push(`schema: ${operation.file} ${mutation.description}`);
      }
      if (mutation.kind === "drop-required" && r4Problems(resource as Resource).length === 0) {
        missed.push(`medplum: ${operation.file} ${mutation.description}`);
      }
    }
    expect(missed).toEqual([]);
  });
});
