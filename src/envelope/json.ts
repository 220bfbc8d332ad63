/** Deepest nesting accepted in a request; real FHIR resources stay far below it. */
export const MAX_JSON_DEPTH = 128;

export type JsonParse = { ok: true; value: unknown } | { ok: false; reason: string };

/**
 * JSON.parse plus a nesting limit. V8's parser copes with deep input, but
 * everything after it (FHIRPath, serialisers, the journal) recurses, so an
 * attacker's 10,000-level document is refused here, by an iterative walk.
 */
export function parseJson(text: string, maxDepth = MAX_JSON_DEPTH): JsonParse {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return { ok: false, reason: (error as Error).message };
  }
  const depth = depthExceeding(value, maxDepth);
  if (depth !== undefined) {
    return { ok: false, reason: `nesting deeper than ${maxDepth} levels` };
  }
  return { ok: true, value };
}

function depthExceeding(root: unknown, maxDepth: number): number | undefined {
  const stack: Array<[unknown, number]> = [[root, 1]];
  while (stack.length > 0) {
    const [value, depth] = stack.pop() as [unknown, number];
    if (value === null || typeof value !== "object") continue;
    if (depth > maxDepth) return depth;
    const children = Array.isArray(value) ? value : Object.values(value);
    for (const child of children) {
      if (child !== null && typeof child === "object") stack.push([child, depth + 1]);
    }
  }
  return undefined;
}

export function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

export function describeJsonType(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  if (typeof value === "object") return "an object";
  return `a ${typeof value}`;
}
