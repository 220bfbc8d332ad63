import type { CompiledRule, RuleSet } from "./rules.js";

/**
 * What a decision leaves behind so that it can be explained later (GET
 * /__admin/calls/{id}): only what the moment alone knows — the rule set in
 * force (immutable: a reload replaces it), whether the message was one the
 * sandbox refuses, the rules that matched but let later ones answer, and the
 * rule that answered. Why each other rule did not match is worked out when
 * asked, from the recorded request: the request path pays for one small object.
 * Its own module, below the journal's records that carry it, so that the journal does not import the scenarios.
 */
export interface RuleTrace {
  rules: RuleSet;
  invalid: boolean;
  /**
   * Rules whose conditions held but that did not answer: used up (their `times`, or a `sequence` that falls
   * through), or their scenario was not in the state they require for the message's key (`key` undefined: the
   * message gave none).
   */
  passedOver: Array<
    | { rule: CompiledRule; answered: number; why: "times" | "sequence" }
    | { rule: CompiledRule; answered: number; why: "state"; key: string | undefined; state: string | undefined }
    | { rule: CompiledRule; answered: number; why: "probability"; draw: number }
  >;
  answered: CompiledRule | undefined;
}
