import { z } from "zod";

/** Milliseconds, or a string with a unit: "250ms", "2s", "1.5m". */
export const durationSchema = z
  .union([z.number().int().min(0), z.string().regex(/^\d+(\.\d+)?(ms|s|m)$/, 'a duration such as 500, "250ms", "2s"')])
  .describe('milliseconds, or a string with a unit: "250ms", "2s", "1m"');

const UNIT_MS = { ms: 1, s: 1000, m: 60_000 } as const;

export function durationMs(value: number | string): number {
  if (typeof value === "number") return value;
  const m = /^(\d+(?:\.\d+)?)(ms|s|m)$/.exec(value);
  return m ? Math.round(Number(m[1]) * UNIT_MS[m[2] as keyof typeof UNIT_MS]) : 0;
}
