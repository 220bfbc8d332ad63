import { z } from "zod";

/** Unit words people write, and the unit a duration spells them with. */
const UNIT_WORDS: ReadonlyArray<[RegExp, string]> = [
  [/^(ms|msecs?|millis|milliseconds?)$/i, "ms"],
  [/^(s|secs?|seconds?)$/i, "s"],
  [/^(m|mins?|minutes?)$/i, "m"],
];

/** The duration a mistyped one means, e.g. "5s" for "5 seconds", if it is clear. */
function meant(text: unknown): string | undefined {
  if (typeof text !== "string") return undefined;
  const m = /^\s*(\d+(?:\.\d+)?)\s*([a-z]+)\s*$/i.exec(text);
  const unit = m && UNIT_WORDS.find(([words]) => words.test(m[2] as string))?.[1];
  return m && unit ? `${m[1]}${unit}` : undefined;
}

/** Milliseconds, or a string with a unit: "250ms", "2s", "1.5m". */
export const durationSchema = z
  .union([
    z.number().int().min(0),
    z.string().regex(/^\d+(\.\d+)?(ms|s|m)$/, {
      error: (issue) => {
        const near = meant(issue.input);
        return `a duration such as 500, "250ms", "2s"${near ? `; did you mean "${near}"?` : ""}`;
      },
    }),
  ])
  .describe('milliseconds, or a string with a unit: "250ms", "2s", "1m"');

const UNIT_MS = { ms: 1, s: 1000, m: 60_000 } as const;

export function durationMs(value: number | string): number {
  if (typeof value === "number") return value;
  const m = /^(\d+(?:\.\d+)?)(ms|s|m)$/.exec(value);
  return m ? Math.round(Number(m[1]) * UNIT_MS[m[2] as keyof typeof UNIT_MS]) : 0;
}
