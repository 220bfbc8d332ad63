import { RE2JS } from "re2js";

/**
 * User-written regular expressions (a rule's `matches`, FHIRPath `matches()`,
 * `matchesFull()`, `replaceMatches()`) run here, on RE2 (re2js, pure JS),
 * never on the native backtracking engine: `^(a+)+$` against `aaa…!` takes
 * exponential time there and linear time here, so one tenant's pattern cannot
 * freeze the process for the others.
 *
 * Patterns keep the JavaScript syntax integrators write: a pattern must be a
 * valid JavaScript regular expression, and is translated token by token to
 * RE2's syntax with JavaScript's meaning (`.` stops at line terminators, `\s`
 * is JavaScript's whitespace, `[^]`, `\cJ`, `\u0041`, `(?<name>…)`). What RE2
 * cannot run — backreferences and lookaround, which need backtracking — is
 * refused when the pattern is loaded, with what to do instead.
 *
 * Linear is not free: a run costs about the pattern's size times the text's
 * length (RE2 falls back to simulating the automaton when its cached states
 * run out, ~40 ns per instruction and character). Both are bounded: patterns
 * of at most MAX_PROGRAM instructions, and a run whose size × length would
 * pass MAX_STEPS is refused (an error, so the condition does not match)
 * rather than hold the event loop.
 */
export interface LinearRegex {
  /** As `RegExp.prototype.test`: a match anywhere in the text. */
  test(text: string): boolean;
  /** As `text.replace(/…/g, replacement)`: every match, `$1`, `$<name>`, `$&`, `$$` expanded. */
  replaceAll(text: string, replacement: string): string;
}

export interface RegexFlags {
  ignoreCase?: boolean;
  multiline?: boolean;
  /** `.` matches line terminators too (JavaScript's `s`). */
  dotAll?: boolean;
  /** JavaScript's `u`: the syntax of `\u{…}` and `\p{…}` (FHIRPath patterns). */
  unicode?: boolean;
}

/** RE2 instructions a pattern may compile to (`^DHA-[0-9]{4}$` is 12, a UUID pattern 40). */
export const MAX_PROGRAM = 1_000;
/** Instructions × characters one run may cost: about 100 ms at worst, usually far less. */
export const MAX_STEPS = 2_500_000;

export type CompiledRegex = { ok: true; regex: LinearRegex } | { ok: false; problem: string };

/** JavaScript's `\s` (WhiteSpace and LineTerminator), as the body of an RE2 class. */
const SPACE =
  "\\t\\n\\v\\f\\r \\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}\\x{FEFF}";
/** JavaScript's `.` without `s`: anything but a line terminator (RE2's `.` stops only at `\n`). */
const DOT = "[^\\n\\r\\x{2028}\\x{2029}]";
const ANY = "[\\x{0}-\\x{10FFFF}]";

const NO_BACKTRACKING =
  "user-written patterns run on a linear-time engine (RE2), which has no backreferences or lookaround";

type Step = { ok: true; text: string; next: number } | { ok: false; problem: string };

const isHex = (s: string) => /^[0-9A-Fa-f]+$/.test(s);
const hexOf = (code: number) => `\\x{${code.toString(16).toUpperCase()}}`;

/** One escape sequence at `i` (the backslash), translated; JavaScript has already accepted the pattern. */
function translateEscape(source: string, i: number, inClass: boolean, unicode: boolean): Step {
  const c = source[i + 1] as string;
  const literal = (text: string, next = i + 2): Step => ({ ok: true, text, next });
  if (c >= "1" && c <= "9") {
    const digits = /^\d+/.exec(source.slice(i + 1))?.[0] as string;
    return {
      ok: false,
      problem: `\\${digits} is a backreference (or a legacy octal escape); ${NO_BACKTRACKING}: match the text itself, e.g. list the alternatives (write a character code as \\x41 or \\u0041)`,
    };
  }
  switch (c) {
    case "0":
      if (/\d/.test(source[i + 2] ?? ""))
        return { ok: false, problem: `\\0${source[i + 2]} is a legacy octal escape: write \\x.. or \\u....` };
      return literal("\\x{0}");
    case "b":
      return literal(inClass ? "\\x{8}" : "\\b");
    case "B":
    case "d":
    case "D":
    case "w":
    case "W":
    case "t":
    case "n":
    case "r":
    case "f":
    case "v":
      return literal(`\\${c}`);
    case "s":
      return literal(inClass ? SPACE : `[${SPACE}]`);
    case "S":
      // Inside a class RE2's own \S stands in (it counts \v and Unicode spaces as non-space): no class nests there.
      return literal(inClass ? "\\S" : `[^${SPACE}]`);
    case "c": {
      const letter = source[i + 2] ?? "";
      if (/[A-Za-z]/.test(letter)) return literal(hexOf(letter.charCodeAt(0) % 32), i + 3);
      return literal("\\\\c"); // not a control escape: JavaScript reads a backslash and a c
    }
    case "x": {
      const hex = source.slice(i + 2, i + 4);
      return hex.length === 2 && isHex(hex) ? literal(`\\x{${hex}}`, i + 4) : literal("x");
    }
    case "u": {
      if (unicode && source[i + 2] === "{") {
        const end = source.indexOf("}", i + 3);
        return literal(`\\x{${source.slice(i + 3, end)}}`, end + 1);
      }
      const hex = source.slice(i + 2, i + 6);
      return hex.length === 4 && isHex(hex) ? literal(`\\x{${hex}}`, i + 6) : literal("u");
    }
    case "k":
      if (source[i + 2] === "<") {
        const end = source.indexOf(">", i + 3);
        return {
          ok: false,
          problem: `${source.slice(i, end + 1)} is a backreference; ${NO_BACKTRACKING}: match the text itself`,
        };
      }
      return literal("k");
    case "p":
    case "P": {
      if (!unicode) return literal(c);
      const end = source.indexOf("}", i + 3);
      return literal(source.slice(i, end + 1), end + 1);
    }
  }
  const point = source.codePointAt(i + 1) as number;
  const char = String.fromCodePoint(point);
  // Other letters and digits escape to themselves in JavaScript (`\a` is `a`), not so in RE2 (`\a` is a bell, `\z` an anchor).
  if (/[A-Za-z0-9]/.test(char)) return literal(char);
  // ASCII punctuation stays escaped (RE2 reads `\.` as JavaScript does); anything else is itself.
  return literal(point < 0x80 ? `\\${char}` : char, i + 1 + char.length);
}

/**
 * A JavaScript pattern (already accepted by `new RegExp`) in RE2's syntax with
 * the same meaning, or why RE2 cannot run it.
 */
export function toRe2Syntax(
  source: string,
  flags: RegexFlags = {},
): { ok: true; source: string } | { ok: false; problem: string } {
  const unicode = flags.unicode ?? false;
  let out = "";
  let inClass = false;
  let i = 0;
  while (i < source.length) {
    const c = source[i] as string;
    if (c === "\\") {
      const step = translateEscape(source, i, inClass, unicode);
      if (!step.ok) return step;
      out += step.text;
      i = step.next;
      continue;
    }
    if (inClass) {
      if (c === "]") inClass = false;
      // RE2 reads `[:alpha:]` inside a class; in JavaScript `[` there is just a character.
      out += c === "[" ? "\\[" : c;
      i++;
      continue;
    }
    if (c === "[") {
      if (source.startsWith("[]", i)) {
        out += "[^\\x{0}-\\x{10FFFF}]"; // JavaScript's empty class: matches nothing
        i += 2;
      } else if (source.startsWith("[^]", i)) {
        out += ANY;
        i += 3;
      } else {
        inClass = true;
        out += source[i + 1] === "^" ? "[^" : "[";
        i += source[i + 1] === "^" ? 2 : 1;
      }
      continue;
    }
    if (c === ".") {
      out += flags.dotAll ? ANY : DOT;
      i++;
      continue;
    }
    if (c === "(" && source[i + 1] === "?") {
      const group = source.slice(i, i + 4);
      if (group.startsWith("(?=") || group.startsWith("(?!") || group === "(?<=" || group === "(?<!") {
        const kind = group[2] === "<" ? "lookbehind" : "lookahead";
        return {
          ok: false,
          problem: `${group.slice(0, group[2] === "<" ? 4 : 3)}…) is a ${kind}; ${NO_BACKTRACKING}: match the text itself, or split the condition (one pattern per header, FHIRPath \`and\`/\`not()\`)`,
        };
      }
      if (group.startsWith("(?<")) {
        out += "(?P<";
        i += 3;
        continue;
      }
      const modifiers = /^\(\?([ims]*)(?:-([ims]*))?:/.exec(source.slice(i));
      if (modifiers && `${modifiers[1]}${modifiers[2] ?? ""}`.includes("s"))
        return {
          ok: false,
          problem: `${modifiers[0]} (the s modifier inside a pattern) is not supported; use [^] or [\\s\\S] for any character`,
        };
    }
    out += c;
    i++;
  }
  return { ok: true, source: out };
}

/**
 * Compiles a user-written pattern once (at load), or says why it cannot run.
 * The problem is a sentence to put after the pattern's location.
 *
 * @example
 *   const compiled = compileLinearRegex("^DHA-[0-9]{4}$");
 *   if (compiled.ok) compiled.regex.test("DHA-1234"); // true
 */
export function compileLinearRegex(source: string, flags: RegexFlags = {}): CompiledRegex {
  try {
    // JavaScript's own parser checks the syntax integrators know (it only parses: nothing runs).
    new RegExp(source, `${flags.unicode ? "u" : ""}${flags.ignoreCase ? "i" : ""}${flags.multiline ? "m" : ""}`);
  } catch (error) {
    return { ok: false, problem: `is not a valid regular expression: ${(error as Error).message}` };
  }
  const translated = toRe2Syntax(source, flags);
  if (!translated.ok) return { ok: false, problem: `cannot be used: ${translated.problem}` };
  let re2: RE2JS;
  try {
    re2 = RE2JS.compile(
      translated.source,
      (flags.ignoreCase ? RE2JS.CASE_INSENSITIVE : 0) | (flags.multiline ? RE2JS.MULTILINE : 0),
    );
  } catch (error) {
    const reason = (error as Error).message.replace(/^error parsing regexp: /, "");
    return {
      ok: false,
      problem: `cannot be used: the linear-time engine (RE2) that runs user-written patterns refuses it: ${reason}`,
    };
  }
  const size = re2.programSize();
  if (size > MAX_PROGRAM)
    return {
      ok: false,
      problem: `is too large: it compiles to ${size} instructions, at most ${MAX_PROGRAM} are allowed (large counted repeats such as {500} cost the most)`,
    };
  const budget = (text: string) => {
    if (size * text.length > MAX_STEPS)
      throw new Error(
        `the text is ${text.length} characters long, more than this pattern may search (${Math.floor(MAX_STEPS / size)} characters for a pattern of ${size} instructions): use a smaller pattern or test a shorter value`,
      );
  };
  return {
    ok: true,
    regex: {
      test: (text) => {
        budget(text);
        return re2.test(text);
      },
      replaceAll: (text, replacement) => {
        budget(text);
        return re2.matcher(text).replaceAll(replacement);
      },
    },
  };
}
