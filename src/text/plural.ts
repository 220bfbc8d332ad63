/**
 * A count and its noun, singular for exactly one: "1 rule", "0 rules", "2 pharmacies".
 *
 * @example
 *   counted(1, "pharmacy", "pharmacies") // "1 pharmacy"
 *   counted(3, "rule") // "3 rules"
 */
export function counted(n: number, singular: string, plural = `${singular}s`): string {
  return `${n} ${n === 1 ? singular : plural}`;
}
