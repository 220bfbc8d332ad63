import { timingSafeEqual } from "node:crypto";

/** Compares a presented secret with the expected one in constant time (for equal lengths). */
export function sameSecret(given: string, expected: string): boolean {
  const x = Buffer.from(given);
  const y = Buffer.from(expected);
  return x.length === y.length && timingSafeEqual(x, y);
}
