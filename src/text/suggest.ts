/**
 * Edit distance, case-insensitive: insert, delete, substitute, and swap two
 * neighbouring characters (so `prot` is one edit from `port`), 1 each — the
 * optimal-string-alignment form of Damerau-Levenshtein.
 */
export function editDistance(a: string, b: string): number {
  const s = a.toLowerCase();
  const t = b.toLowerCase();
  let before: number[] = [];
  let previous = Array.from({ length: t.length + 1 }, (_, j) => j);
  for (let i = 1; i <= s.length; i++) {
    const current = [i];
    for (let j = 1; j <= t.length; j++) {
      const substitute = (previous[j - 1] as number) + (s[i - 1] === t[j - 1] ? 0 : 1);
      let best = Math.min((previous[j] as number) + 1, (current[j - 1] as number) + 1, substitute);
      if (i > 1 && j > 1 && s[i - 1] === t[j - 2] && s[i - 2] === t[j - 1]) {
        best = Math.min(best, (before[j - 2] as number) + 1);
      }
      current.push(best);
    }
    before = previous;
    previous = current;
  }
  return previous[t.length] as number;
}

/**
 * The known name closest to a misspelt one, when it is close enough to be
 * the one meant: at most three edits and a third of its length away (the
 * case never counts), so an unrelated word gets no suggestion.
 *
 * @example
 *   nearest("add-alergy", ["add-allergy", "add-task"]) // "add-allergy"
 *   nearest("request.messageid", ["request.messageId"]) // "request.messageId"
 *   nearest("prot", ["port", "host"]) // "port"
 */
export function nearest(name: string, known: Iterable<string>): string | undefined {
  let best: string | undefined;
  let bestDistance = Number.POSITIVE_INFINITY;
  for (const candidate of known) {
    const d = editDistance(name, candidate);
    if (d < bestDistance) {
      best = candidate;
      bestDistance = d;
    }
  }
  return best !== undefined && bestDistance <= Math.min(3, Math.max(1, Math.floor(name.length / 3))) ? best : undefined;
}

/** `; did you mean "x"?`, or nothing when no known name is close. */
export function didYouMean(name: string, known: Iterable<string>): string {
  const match = nearest(name, known);
  return match === undefined ? "" : `; did you mean "${match}"?`;
}
