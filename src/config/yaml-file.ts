import { readFileSync, statSync } from "node:fs";
import {
  type Document,
  isCollection,
  isMap,
  isNode,
  isScalar,
  isSeq,
  LineCounter,
  type Pair,
  parseDocument,
  visit,
  type YAMLMap,
} from "yaml";
import type { z } from "zod";
import { didYouMean } from "../text/suggest.js";

/** Files larger than this are refused before parsing, unless the caller sets its own limit. */
export const MAX_YAML_BYTES = 2 * 1024 * 1024;

/** A size limit on a YAML document, and the flag that sets it (named when a file is over it). */
export interface YamlLimit {
  bytes: number;
  flag?: string;
}

/** The problem of a document over its limit, at its first line. */
export function tooLarge(file: string, size: number, limit: YamlLimit): YamlProblem {
  const flag = limit.flag ? ` (${limit.flag})` : "";
  return { file, line: 1, column: 1, message: `file is ${size} bytes; the limit is ${limit.bytes}${flag}` };
}
/** Bound on alias expansion ("billion laughs"). */
const MAX_ALIAS_COUNT = 100;

/**
 * Most problems one document reports; a last one counts the rest. A file of 20,000 unknown keys gets 100 lines to
 * read, not 20,000 (CONTRACT §15; an answer's OperationOutcome holds as many issues, fhir/outcome.ts).
 */
export const MAX_PROBLEMS = 100;

/**
 * The first MAX_PROBLEMS problems, and one more (of the whole file) saying how many were left out of `total`
 * (default: as many as are given).
 */
export function capProblems(problems: YamlProblem[], file: string, total = problems.length): YamlProblem[] {
  if (total <= MAX_PROBLEMS) return problems;
  const more = total - MAX_PROBLEMS;
  return [
    ...problems.slice(0, MAX_PROBLEMS),
    {
      file,
      line: 0,
      column: 0,
      message: `…and ${more} more problem${more === 1 ? "" : "s"} not shown: fix these and check the file again to see the rest.`,
      more,
    },
  ];
}

export interface YamlProblem {
  file: string;
  line: number;
  column: number;
  message: string;
  /** On the last problem of a capped list: how many more problems it stands for. */
  more?: number;
}

/** Where a path of the decoded value stands in the file, for problems found after decoding. */
export type Locate = (path: ReadonlyArray<string | number>, message: string) => YamlProblem;

/**
 * A read that failed. When the document parsed but did not fit the schema, `partial` holds what it decoded to and
 * where its paths are, so that the caller can report its other problems (operation names, templates) in the same pass.
 */
export type YamlRead<T> =
  | { ok: true; value: T; locate: Locate }
  | { ok: false; problems: YamlProblem[]; partial?: { value: unknown; locate: Locate } };

/** `file:line:column: message`; a problem of the whole file or folder (line 0) is `file: message`. */
export function formatProblem(p: YamlProblem): string {
  return p.line > 0 ? `${p.file}:${p.line}:${p.column}: ${p.message}` : `${p.file}: ${p.message}`;
}

/**
 * Reads a YAML file and decodes it with a zod schema. YAML is parsed with the
 * core schema only (no custom tags), alias expansion bounded, size bounded;
 * every problem names the file, line and column.
 */
export function readYamlFile<S extends z.ZodType>(
  file: string,
  schema: S,
  limit: YamlLimit = { bytes: MAX_YAML_BYTES },
): YamlRead<z.infer<S>> {
  let text: string;
  try {
    const size = statSync(file).size;
    if (size > limit.bytes) return { ok: false, problems: [tooLarge(file, size, limit)] };
    text = readFileSync(file, "utf8");
  } catch (error) {
    // A missing or unreadable file is a problem of the whole file, said like the others (not a stack of fs internals).
    const { code } = error as NodeJS.ErrnoException;
    const reason =
      code === "ENOENT" ? "no such file" : code === "EISDIR" ? "a folder, not a file" : (code ?? String(error));
    return { ok: false, problems: [{ file, line: 0, column: 0, message: `cannot be read: ${reason}` }] };
  }
  return decodeYaml(text, file, schema);
}

/**
 * Every key given twice in a map of the document, at the second, in one walk with a Set per map. The yaml
 * library's own `uniqueKeys` check compares each key with every earlier one: 20,000 keys held the server for
 * minutes (issue 21). Keys are equal as the library says: the same node, or scalars of the same value.
 */
function duplicateKeys(doc: Document.Parsed): Array<{ offset: number; message: string }> {
  const found: Array<{ offset: number; message: string }> = [];
  visit(doc, {
    Map(_, map) {
      const seen = new Map<unknown, Pair>();
      for (const pair of map.items) {
        const key = isScalar(pair.key) ? pair.key.value : pair.key;
        const earlier = seen.get(key);
        if (earlier === undefined) {
          seen.set(key, pair);
          continue;
        }
        const offset = isNode(pair.key) && pair.key.range ? pair.key.range[0] : (map.range?.[0] ?? 0);
        found.push({ offset, message: `Map keys must be unique; ${JSON.stringify(String(key))} is given twice` });
      }
    },
  });
  return found;
}

/**
 * Finds nodes by path in time linear in the path: a map's pairs are indexed once, on the first lookup in it
 * (`Document.getIn` searches a map's pairs one by one, so locating one problem per key of a 20,000-key map was
 * quadratic). The first pair of a key wins, as in the yaml library.
 */
function nodeFinder(doc: Document.Parsed) {
  const byValue = new WeakMap<YAMLMap, Map<unknown, Pair>>();
  const byText = new WeakMap<YAMLMap, Map<string, Pair>>();
  const index = (map: YAMLMap) => {
    let values = byValue.get(map);
    let texts = byText.get(map);
    if (!values || !texts) {
      values = new Map();
      texts = new Map();
      for (const pair of map.items) {
        if (!isScalar(pair.key)) continue;
        if (!values.has(pair.key.value)) values.set(pair.key.value, pair);
        const text = String(pair.key.value);
        if (!texts.has(text)) texts.set(text, pair);
      }
      byValue.set(map, values);
      byText.set(map, texts);
    }
    return { values, texts };
  };
  /** The node at `path`, as `doc.getIn(path, true)` finds it. */
  const getIn = (path: ReadonlyArray<string | number>): unknown => {
    let node: unknown = doc.contents;
    for (const step of path) {
      if (isMap(node)) node = index(node).values.get(step)?.value;
      else if (isSeq(node)) node = node.items[Number(step)];
      else return undefined;
    }
    return node;
  };
  /** The pair of key `key` (by its text) in the map at `path`. */
  const pairIn = (path: ReadonlyArray<string | number>, key: string | number): Pair | undefined => {
    const parent = getIn(path);
    return isMap(parent) ? index(parent).texts.get(String(key)) : undefined;
  };
  return { getIn, pairIn };
}

export function decodeYaml<S extends z.ZodType>(text: string, file: string, schema: S): YamlRead<z.infer<S>> {
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, {
    lineCounter,
    schema: "core",
    customTags: [],
    // Checked in one walk below (duplicateKeys): the library's check is quadratic in a map's size.
    uniqueKeys: false,
    prettyErrors: false,
    // No YAML 1.1 tags either (!!binary would decode to a Buffer, !!set to a Set).
    resolveKnownTags: false,
  });
  const at = (offset: number) => lineCounter.linePos(offset);
  // An unknown tag (!foo, !!js/function) is only a warning to the yaml library, which then reads it as a
  // plain string: "no custom tags" means refusing the file, so warnings count as problems.
  const parseProblems = [
    ...[...doc.errors, ...doc.warnings].map((e) => ({
      offset: e.pos[0],
      message: e.message.split("\n")[0] ?? e.message,
    })),
    ...duplicateKeys(doc),
  ];
  if (parseProblems.length > 0) {
    return {
      ok: false,
      problems: capProblems(
        parseProblems
          .sort((a, b) => a.offset - b.offset)
          .map((e) => {
            const { line, col } = at(e.offset);
            return { file, line, column: col, message: e.message };
          }),
        file,
      ),
    };
  }
  let data: unknown;
  try {
    // An empty or comments-only file is an empty document, not an error.
    data = doc.toJS({ maxAliasCount: MAX_ALIAS_COUNT }) ?? {};
  } catch (error) {
    return { ok: false, problems: [{ file, line: 1, column: 1, message: (error as Error).message }] };
  }
  const find = nodeFinder(doc);
  /** Where the key `key` of the map at `path` is written, if it is. */
  const keyOffset = (path: ReadonlyArray<string | number>, key: string | number): number | undefined => {
    const pair = find.pairIn(path, key);
    return isScalar(pair?.key) && pair.key.range ? pair.key.range[0] : undefined;
  };
  const locate: Locate = (path, message) => {
    // Point at the deepest node that exists on the path.
    let node: unknown;
    let depth = path.length;
    for (; depth >= 0; depth--) {
      node = find.getIn(path.slice(0, depth));
      if (isNode(node)) break;
    }
    let offset = isNode(node) && node.range ? node.range[0] : 0;
    // A block map/list under a key starts on the line after it: point at the key, where a reader looks.
    if (isCollection(node) && depth > 0) {
      offset = keyOffset(path.slice(0, depth - 1), path[depth - 1] as string | number) ?? offset;
    }
    const { line, col } = at(offset);
    const where = path.length > 0 ? `${path.join(".")}: ` : "";
    return { file, line, column: col, message: `${where}${message}` };
  };
  const parsed = schema.safeParse(data);
  if (parsed.success) return { ok: true, value: parsed.data, locate };
  // Located one by one, each in time linear in its path: only as many as are reported, and a count of the rest.
  const problems: YamlProblem[] = [];
  let more = 0;
  for (const i of parsed.error.issues) {
    const path = i.path as Array<string | number>;
    // One problem per unknown key, at the key itself (a typo is found where it is written, not at its map).
    for (const key of i.code === "unrecognized_keys" ? i.keys : [undefined]) {
      if (problems.length >= MAX_PROBLEMS) {
        more++;
        continue;
      }
      if (key === undefined) {
        problems.push(locate(path, i.message));
        continue;
      }
      const problem = locate(path, `unknown key "${key}"${didYouMean(key, knownKeys(schema, path))}`);
      const offset = keyOffset(path, key);
      if (offset === undefined) problems.push(problem);
      else {
        const { line, col } = at(offset);
        problems.push({ ...problem, line, column: col });
      }
    }
  }
  return {
    ok: false,
    problems: capProblems(problems, file, problems.length + more),
    partial: { value: data, locate },
  };
}

/** The schemas a schema stands for: itself, or what an optional, a union, a pipe… wraps. */
function alternatives(schema: z.ZodType): z.ZodType[] {
  const def = (schema as unknown as { _zod: { def: Record<string, unknown> } })._zod.def;
  switch (def.type) {
    case "optional":
    case "nullable":
    case "default":
    case "prefault":
    case "catch":
    case "readonly":
    case "nonoptional":
      return alternatives(def.innerType as z.ZodType);
    case "union":
      return (def.options as z.ZodType[]).flatMap(alternatives);
    case "pipe":
      return alternatives(def.in as z.ZodType);
    case "lazy":
      return alternatives((def.getter as () => z.ZodType)());
    default:
      return [schema];
  }
}

/** The keys an object at `path` of the schema may have (of every object the path may lead to), for "did you mean". */
function knownKeys(schema: z.ZodType, path: ReadonlyArray<string | number>): string[] {
  let at = alternatives(schema);
  for (const step of path) {
    at = at.flatMap((s) => {
      const def = (s as unknown as { _zod: { def: Record<string, unknown> } })._zod.def;
      if (def.type === "object") {
        const field = (def.shape as Record<string, z.ZodType>)[String(step)];
        return field ? alternatives(field) : [];
      }
      if (def.type === "array" && typeof step === "number") return alternatives(def.element as z.ZodType);
      if (def.type === "record") return alternatives(def.valueType as z.ZodType);
      return [];
    });
  }
  return [
    ...new Set(
      at.flatMap((s) => {
        const def = (s as unknown as { _zod: { def: Record<string, unknown> } })._zod.def;
        return def.type === "object" ? Object.keys(def.shape as Record<string, unknown>) : [];
      }),
    ),
  ];
}
