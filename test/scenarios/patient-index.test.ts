import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { AllergyIntolerance, Bundle } from "fhir/r4.js";
import { afterEach, describe, expect, it, vi } from "vitest";
import { createApp, type SandboxApp, type SandboxDeps } from "../../src/app.js";
import type { RequestFacts } from "../../src/matching/matcher.js";
import type { RuleTrace } from "../../src/scenarios/rule-trace.js";
import type { CompiledRule } from "../../src/scenarios/rules.js";
import { ScenarioFolder } from "../../src/scenarios/scenario-folder.js";
import { Scenarios } from "../../src/scenarios/scenarios.js";
import { admin } from "../admin/admin-client.js";
import { example, messageBundle, post } from "../support/messages.js";

// Rules indexed by patient key (and operation): the indexed decision must be the one a plain loop over every rule's
// matcher gives, for any mix of rules and messages, with rules added and removed at run time and files reloaded; and
// a message must not run the matchers of rules that name other patients.

const EID = "urn:ae:emirates-id";
const K1 = `${EID}|784-1900-0000422-7`;
const K2 = `${EID}|784-1900-0000500-0`;
const K3 = `${EID}|784-1900-0000503-4`;
const NORMAL = `${EID}|784-1990-1234567-6`;
const ID = "pat-1";

/** A rule as written in a scenario document (JSON is YAML). */
interface RuleDoc {
  name: string;
  when?: {
    operation?: string | string[];
    patient?: string | string[];
    headers?: Record<string, string>;
    invalid?: boolean;
  };
  times?: number;
  respond?: object;
  sequence?: object[];
  afterSequence?: "repeat-last" | "fall-through";
}

const answer = (diagnostics: string) => ({ outcome: { diagnostics } });

/** The scenario files' rules: patient rules of every shape, mixed with operation and header rules. */
const FOLDER: RuleDoc[] = [
  { name: "f-first", when: { headers: { "X-S": "first" } }, respond: answer("0") },
  { name: "f-allergy-k1-once", when: { operation: "add-allergy", patient: K1 }, times: 1, respond: answer("1") },
  { name: "f-k1", when: { patient: K1 }, respond: answer("2") },
  { name: "f-k2-k3-twice", when: { patient: [K2, K3] }, times: 2, respond: answer("3") },
  { name: "f-allergy-header", when: { operation: "add-allergy", headers: { "X-S": "a" } }, respond: answer("4") },
  { name: "f-invalid-k2", when: { patient: K2, invalid: true }, respond: answer("5") },
  {
    name: "f-normal-twice-named",
    when: { patient: [NORMAL, NORMAL, ID], headers: { "X-S": "dup" } },
    sequence: [answer("6a"), answer("6b")],
    afterSequence: "fall-through",
  },
  {
    name: "f-view-or-allergy-k3",
    when: { operation: ["view-patient-profile", "add-allergy"], patient: K3 },
    times: 1,
    respond: answer("7"),
  },
  { name: "f-invalid-any", when: { invalid: true }, times: 3, respond: answer("8") },
  { name: "f-id", when: { patient: ID, headers: { "X-S": "id" } }, respond: answer("9") },
];

/** The files after an edit (--watch): rules moved, one gone, one new. */
const FOLDER_EDITED: RuleDoc[] = [
  { name: "f-k1", when: { patient: K1 }, times: 2, respond: answer("2") },
  ...FOLDER.filter((r) => !["f-k1", "f-invalid-any", "f-allergy-k1-once"].includes(r.name)),
  { name: "f-task-normal", when: { operation: "add-task", patient: NORMAL }, respond: answer("11") },
];

const RUNTIME_1: RuleDoc[] = [
  { name: "r-task-k2", when: { operation: "add-task", patient: K2 }, respond: answer("r1") },
  { name: "r-header-once", when: { headers: { "X-S": "r" } }, times: 1, respond: answer("r2") },
];
const RUNTIME_2: RuleDoc[] = [
  {
    name: "r-k1-sequence",
    when: { patient: [K1, K2] },
    sequence: [answer("r3a"), answer("r3b")],
    afterSequence: "fall-through",
  },
];

/** Every message the table sends: each operation, each set of patient keys, each header, valid and invalid. */
function messages(): RequestFacts[] {
  const operations = ["add-allergy", "view-patient-profile", "add-task", null];
  // null: reading the patient keys throws, as it does for a message whose Patient.identifier is no list.
  const keySets = [[], [NORMAL], [K1], [K2], [K3], [K1, K2], [K3, K1], [ID, NORMAL], [NORMAL, ID, K3], null];
  const headers = [undefined, "a", "dup", "r", "id", "first"];
  return operations.flatMap((operation) =>
    keySets.flatMap((keys) =>
      headers.flatMap((header) =>
        [false, true].map(
          (invalid): RequestFacts => ({
            operation,
            invalid,
            direction: "inbound",
            path: "/uae-fhir/r4/$process-message",
            header: (name) => (name.toLowerCase() === "x-s" ? header : undefined),
            bundle: () => undefined,
            patientKeys: () => {
              if (keys === null) throw new TypeError("patient.identifier.flatMap is not a function");
              return keys;
            },
          }),
        ),
      ),
    ),
  );
}

/**
 * The reference: every rule's matcher, in order, with the counting rules written out (times, sequences and
 * afterSequence), no index.
 */
class BruteForce {
  counters = new Map<CompiledRule, { matched: number; answered: number }>();

  decide(rules: readonly CompiledRule[], facts: RequestFacts) {
    const passedOver: string[] = [];
    for (const rule of rules) {
      if (!rule.matcher.matches(facts)) continue;
      const c = this.counters.get(rule) ?? { matched: 0, answered: 0 };
      this.counters.set(rule, c);
      c.matched++;
      if (rule.times !== undefined && c.answered >= rule.times) {
        passedOver.push(`${rule.name}: times after ${c.answered}`);
        continue;
      }
      let turn = c.answered;
      if (turn >= rule.responses.length) {
        if (rule.afterSequence === "fall-through") {
          passedOver.push(`${rule.name}: sequence after ${c.answered}`);
          continue;
        }
        turn = rule.responses.length - 1;
      }
      c.answered++;
      return { rule: rule.name, turn, hit: c.answered, passedOver };
    }
    return { rule: null, passedOver };
  }

  counts(rules: readonly CompiledRule[]) {
    return rules.map((r) => ({ name: r.name, ...(this.counters.get(r) ?? { matched: 0, answered: 0 }) }));
  }
}

/** What a decision came to, or the error it threw (the pipeline answers 500 then). */
function outcome<T>(decide: () => T): T | { threw: string } {
  try {
    return decide();
  } catch (error) {
    return { threw: (error as Error).message };
  }
}

/** What the indexed Scenarios decided, in the reference's terms. */
function indexed(scenarios: Scenarios, facts: RequestFacts) {
  const trace: RuleTrace = scenarios.newTrace();
  const scripted = scenarios.decide(facts, trace);
  const passedOver = trace.passedOver.map((p) => `${p.rule.name}: ${p.why} after ${p.answered}`);
  expect(trace.answered?.name ?? null).toBe(scripted?.rule.name ?? null);
  if (!scripted) return { rule: null, passedOver };
  const turn = scripted.rule.responses.indexOf(scripted.response);
  return { rule: scripted.rule.name, turn, hit: scripted.hit, passedOver };
}

const document = (rules: RuleDoc[]) => JSON.stringify({ rules });

const dirs: string[] = [];
const open: SandboxApp[] = [];
afterEach(() => {
  vi.restoreAllMocks();
  for (const s of open.splice(0)) s.close();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function folderOf(rules: RuleDoc[]) {
  const dir = mkdtempSync(join(tmpdir(), "patient-index-"));
  dirs.push(dir);
  writeFileSync(join(dir, "rules.yaml"), document(rules));
  const folder = new ScenarioFolder(dir, { now: () => new Date() });
  const edit = (edited: RuleDoc[]) => {
    writeFileSync(join(dir, "rules.yaml"), document(edited));
    const loaded = folder.reload();
    expect(loaded.problems).toEqual([]);
  };
  edit(rules);
  return { folder, edit };
}

describe("the indexed decision equals a loop over every matcher", () => {
  // Budget: 3.9 s alone at a load average of 14, 5.3 s in a serial run at 12 (2026-11-27).
  it("for every message of the table, through runtime additions, removals, counter resets and a reload", () => {
    const { folder, edit } = folderOf(FOLDER);
    // Two workspaces over the same files: each with its own runtime rules and counters.
    const workspaces = [new Scenarios(folder), new Scenarios(folder)].map((scenarios) => ({
      scenarios,
      reference: new BruteForce(),
    }));
    const all = messages();
    const steps: Array<[string, (w: (typeof workspaces)[number], index: number) => void]> = [
      ["the files' rules only", () => undefined],
      [
        "a runtime document in the first workspace",
        (w, i) => i === 0 && expect(w.scenarios.add(document(RUNTIME_1)).ok).toBe(true),
      ],
      ["a second one in both", (w) => expect(w.scenarios.add(document(RUNTIME_2)).ok).toBe(true)],
      [
        "counters reset",
        (w) => {
          w.scenarios.resetCounters();
          w.reference.counters.clear();
        },
      ],
      ["the files edited and reloaded", (_w, i) => i === 0 && edit(FOLDER_EDITED)],
      ["runtime rules removed", (w) => w.scenarios.clearRuntime()],
      [
        "runtime rules added again after the removal",
        (w) => expect(w.scenarios.add(document(RUNTIME_1)).ok).toBe(true),
      ],
    ];
    let decisions = 0;
    let answered = 0;
    let threw = 0;
    let answeredUnread = 0;
    for (const [step, change] of steps) {
      workspaces.forEach(change);
      for (const { scenarios, reference } of workspaces) {
        // The order rules are tried in: runtime documents first, in the order added, then the files'.
        const rules = scenarios.scenarios.flatMap((s) => s.rules);
        // Twice over: `times` and sequences run out in the second pass.
        for (const facts of [...all, ...all]) {
          const expected = outcome(() => reference.decide(rules, facts));
          const keys = outcome(() => facts.patientKeys().join(","));
          const label = `${step}: ${facts.operation} ${JSON.stringify(keys)} ${facts.header("X-S")} invalid=${facts.invalid}`;
          expect(
            outcome(() => indexed(scenarios, facts)),
            label,
          ).toEqual(expected);
          decisions++;
          if ("rule" in expected && expected.rule) answered++;
          if ("threw" in expected) threw++;
          else if (typeof keys !== "string") answeredUnread++;
        }
        expect(
          scenarios.view().rules.map((r) => ({ name: r.name, matched: r.matched, answered: r.answered })),
          step,
        ).toEqual(reference.counts(rules));
      }
    }
    // The table exercises both sides: many messages answered by a rule, many by none.
    expect(answered).toBeGreaterThan(decisions / 10);
    expect(decisions - answered).toBeGreaterThan(decisions / 10);
    // And messages whose patients cannot be read: a throw where the loop throws, an answer where it answers.
    expect(threw).toBeGreaterThan(0);
    expect(answeredUnread).toBeGreaterThan(0);
  }, 15_000);

  it("the index leaves out only rules whose matcher says no, and keeps the candidates' order", () => {
    const { folder } = folderOf(FOLDER);
    const scenarios = new Scenarios(folder);
    expect(scenarios.add(document([...RUNTIME_1, ...RUNTIME_2])).ok).toBe(true);
    const set = scenarios.newTrace().rules;
    for (const facts of messages()) {
      if ("threw" in outcome(() => facts.patientKeys())) continue;
      const candidates = [...set.candidates(facts.operation)];
      const applicable = [...set.applicable(facts)];
      // In the candidates' order, each at most once.
      expect(applicable).toEqual(candidates.filter((r) => applicable.includes(r)));
      for (const rule of candidates.filter((r) => !applicable.includes(r))) {
        expect(rule.matcher.matches(facts), `${rule.name} left out for ${facts.patientKeys()}`).toBe(false);
      }
    }
  });
});

describe("a message does not run the matchers of rules for other patients", () => {
  /** Which rules' matchers ran for one decision. */
  function ran(scenarios: Scenarios, facts: RequestFacts): string[] {
    const rules = scenarios.scenarios.flatMap((s) => s.rules);
    const spies = rules.map((r) => vi.spyOn(r.matcher, "matches"));
    scenarios.decide(facts);
    const names = rules.filter((_, i) => (spies[i]?.mock.calls.length ?? 0) > 0).map((r) => r.name);
    for (const spy of spies) spy.mockRestore();
    return names;
  }

  const facts = (operation: string, keys: string[], header?: string): RequestFacts => ({
    operation,
    invalid: false,
    direction: "inbound",
    path: "/uae-fhir/r4/$process-message",
    header: (name) => (name.toLowerCase() === "x-s" ? header : undefined),
    bundle: () => undefined,
    patientKeys: () => keys,
  });

  it.each([
    // operation, the message's patients, header: the matchers that run, in order (up to the rule that answers)
    ["add-allergy", [NORMAL], undefined, ["f-first", "f-allergy-header", "f-normal-twice-named", "f-invalid-any"]],
    ["add-allergy", [NORMAL], "dup", ["f-first", "f-allergy-header", "f-normal-twice-named"]],
    ["add-allergy", [K1], undefined, ["f-first", "f-allergy-k1-once"]],
    ["add-allergy", [K3], undefined, ["f-first", "f-k2-k3-twice"]],
    ["view-patient-profile", [K3, K1], undefined, ["f-first", "f-k1"]],
    ["add-task", [], undefined, ["f-first", "f-invalid-any"]],
    ["add-task", [ID], "id", ["f-first", "f-normal-twice-named", "f-invalid-any", "f-id"]],
  ] as const)("%s for %j with header %s runs %j", (operation, keys, header, expected) => {
    const { folder } = folderOf(FOLDER);
    expect(ran(new Scenarios(folder), facts(operation, [...keys], header))).toEqual(expected);
  });

  it("no patient rule in force: the message's patient keys are not even read", () => {
    const scenarios = new Scenarios();
    expect(
      scenarios.add(document([{ name: "header", when: { headers: { "X-S": "a" } }, respond: answer("h") }])).ok,
    ).toBe(true);
    const keys = vi.fn(() => [K1]);
    expect(scenarios.decide({ ...facts("add-allergy", []), patientKeys: keys })).toBeUndefined();
    expect(keys).not.toHaveBeenCalled();
  });
});

describe("the shipped magic patients, end to end", () => {
  const SHIPPED = fileURLToPath(new URL("../../scenarios/", import.meta.url));
  const quiet: Partial<SandboxDeps> = { logger: { info: () => undefined, error: () => undefined } };
  const addAllergy = (value: string): Bundle =>
    messageBundle("add-allergy", [
      {
        ...example<AllergyIntolerance>("allergyintolerance-example.json"),
        patient: { identifier: { system: EID, value } },
      } as AllergyIntolerance,
    ]);

  it("a message for another patient runs none of their matchers; its explanation still gives each one's reason, worked out when asked", async () => {
    const sandbox = createApp({ scenarios: SHIPPED, watch: false }, quiet);
    open.push(sandbox);
    const magic = sandbox.scenarios.scenarios.flatMap((s) => s.rules).filter((r) => r.name.startsWith("magic-"));
    expect(magic).toHaveLength(6);
    const matched = magic.map((r) => vi.spyOn(r.matcher, "matches"));
    const explained = magic.map((r) => vi.spyOn(r.matcher, "firstMismatch"));
    const calls = (spies: Array<{ mock: { calls: unknown[] } }>) => spies.map((s) => s.mock.calls.length);

    const normal = await post(sandbox.app, addAllergy("784-1990-1234567-6"));
    expect(normal.status).toBe(200);
    expect(calls(matched)).toEqual([0, 0, 0, 0, 0, 0]);
    expect(calls(explained)).toEqual([0, 0, 0, 0, 0, 0]);

    const call = await admin(sandbox.app, "GET", `/calls/${normal.headers.get("x-sandbox-call-id")}`);
    expect(calls(explained)).toEqual([1, 1, 1, 1, 1, 1]);
    const verdicts = (call.body.explanation.rules as Array<{ rule: string; outcome: string; failed?: string }>).filter(
      (r) => r.rule.startsWith("magic-"),
    );
    expect(verdicts.map((v) => [v.rule, v.outcome])).toEqual(magic.map((r) => [r.name, "not-matched"]));
    expect(verdicts[0]?.failed).toBe(`patient was ${NORMAL}, expected ${K1}`);

    // A magic patient: its own rule's matcher runs and answers; the others' do not run.
    const refused = await post(sandbox.app, addAllergy("784-1900-0000422-7"));
    expect(refused.headers.get("x-sandbox-rule")).toBe("magic-business-refusal");
    expect(calls(matched)).toEqual([1, 0, 0, 0, 0, 0]);
  });

  it.each([
    ["a list holding null", [null]],
    ["an object", {}],
  ])(
    "an invalid message whose Patient.identifier is %s: its 400, as without scenarios (its patients cannot be read)",
    async (_label, identifier) => {
      const message = () => {
        const bundle = messageBundle("view-patient-profile", [{ resourceType: "Patient" }], {
          id: "malformed-patient",
        });
        (bundle.entry?.[1]?.resource as unknown as Record<string, unknown>).identifier = identifier;
        return bundle;
      };
      const plain = createApp({ watch: false }, quiet);
      const shipped = createApp({ scenarios: SHIPPED, watch: false }, quiet);
      open.push(plain, shipped);
      const expected = await post(plain.app, message());
      const reply = await post(shipped.app, message());
      expect(expected.status).toBe(400);
      expect([reply.status, reply.body]).toEqual([expected.status, expected.body]);
    },
  );
});
