/** A character XML 1.0 allows (even escaped ones must be among these). */
function xmlChar(ch: string): string {
  const c = ch.codePointAt(0) as number;
  const allowed =
    c === 0x9 || c === 0xa || c === 0xd || (c >= 0x20 && c <= 0xd7ff) || (c >= 0xe000 && c <= 0xfffd) || c >= 0x10000;
  return allowed ? ch : "\uFFFD";
}

/** Text safe in an XML attribute or element: the JUnit reports (replay, conformance) write all theirs through it. */
export function xmlText(text: string): string {
  // for…of walks code points: a pair is one character, a lone surrogate is replaced.
  return Array.from(text, xmlChar)
    .join("")
    .replaceAll("&", "&amp;")
    .replaceAll("<", "&lt;")
    .replaceAll(">", "&gt;")
    .replaceAll('"', "&quot;")
    .replaceAll("'", "&apos;");
}

/** Seconds as JUnit writes them: three decimals. */
export const junitSeconds = (s: number) => (Math.round(s * 1000) / 1000).toFixed(3);
