import { type ParseArgsConfig, parseArgs } from "node:util";
import { nearest } from "../text/suggest.js";

/** A command line that cannot be read: the message names the option and, for a typo, the one meant. */
export class CommandLineError extends Error {}

type Options = NonNullable<ParseArgsConfig["options"]>;

/**
 * util.parseArgs with messages for people: an unknown option is named with the
 * nearest known one (`--prot` → `--port`), a missing value says so. `extra`
 * names further spellings the caller accepts (`--no-watch`).
 *
 * @example
 *   parseCommandLine({ args: ["--prot", "8080"], options: { port: { type: "string" } } })
 *   // throws CommandLineError: unknown option --prot; did you mean --port?
 */
export function parseCommandLine<T extends ParseArgsConfig>(
  config: T,
  extra: readonly string[] = [],
): ReturnType<typeof parseArgs<T>> {
  try {
    return parseArgs(config);
  } catch (error) {
    throw new CommandLineError(explain(error as Error & { code?: string }, config.options ?? {}, extra));
  }
}

function explain(error: Error & { code?: string }, options: Options, extra: readonly string[]): string {
  if (error.code === "ERR_PARSE_ARGS_UNKNOWN_OPTION") {
    const given = /Unknown option '([^']+)'/.exec(error.message)?.[1] ?? "";
    return `unknown option ${given}${suggestion(given, options, extra)}`;
  }
  if (error.code === "ERR_PARSE_ARGS_INVALID_OPTION_VALUE") {
    const missing = /^Option '(?:-\w, )?(--[\w-]+) <value>' argument missing/.exec(error.message)?.[1];
    if (missing) return `${missing} needs a value: ${missing} <value>`;
    const noValue = /^Option '(?:-\w, )?(--[\w-]+)' does not take an argument/.exec(error.message)?.[1];
    if (noValue) return `${noValue} takes no value: give ${noValue} alone`;
  }
  return error.message;
}

/** `; did you mean --port?`, from the long names (and their short forms) the command knows. */
function suggestion(given: string, options: Options, extra: readonly string[]): string {
  if (/^-[^-]/.test(given)) {
    const shorts = Object.entries(options)
      .filter(([, o]) => o.short !== undefined)
      .map(([name, o]) => `-${o.short} (--${name})`);
    return shorts.length > 0 ? `; the short options are ${shorts.join(", ")}` : "";
  }
  const name = given.replace(/^--/, "").replace(/=.*$/, "");
  const match = nearest(name, [...Object.keys(options), ...extra]);
  return match === undefined ? "" : `; did you mean --${match}?`;
}
