import { SERVE_FLAGS } from "./flags.js";

/**
 * The serve flags' boolean spellings util.parseArgs does not take: `--no-<flag>` turns one off (parseArgs on Node
 * 20 has no allowNegative) and `--<flag>=<value>` sets one with the words its environment variable takes
 * (`--watch=no`). Returns the other arguments, for parseArgs, and the values taken out.
 */
export function takeServeBooleans(argv: readonly string[]): {
  args: string[];
  given: Map<string, string | boolean>;
  /** The `--no-<flag>` names, for "did you mean" on a mistyped option. */
  negations: string[];
} {
  const booleans = SERVE_FLAGS.filter((f) => f.kind === "boolean").map((f) => f.name);
  const given = new Map<string, string | boolean>();
  const args = argv.filter((arg) => {
    const negated = /^--no-(.+)$/.exec(arg)?.[1];
    if (negated !== undefined && booleans.includes(negated)) {
      given.set(negated, false);
      return false;
    }
    const assigned = /^--([^=]+)=(.*)$/.exec(arg);
    if (assigned?.[1] !== undefined && booleans.includes(assigned[1])) {
      given.set(assigned[1], assigned[2] ?? "");
      return false;
    }
    return true;
  });
  return { args, given, negations: booleans.map((name) => `no-${name}`) };
}
