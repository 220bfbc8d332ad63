import { readFileSync, statSync } from "node:fs";
import { isCollection, isMap, isNode, isScalar, LineCounter, parseDocument } from "yaml";
import type { z } from "zod";

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

export interface YamlProblem {
  file: string;
  line: number;
  column: number;
  message: string;
}

/** Where a path of the decoded value stands in the file, for problems found after decoding. */
export type Locate = (path: ReadonlyArray<string | number>, message: string) => YamlProblem;

export type YamlRead<T> = { ok: true; value: T; locate: Locate } | { ok: false; problems: YamlProblem[] };

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

export function decodeYaml<S extends z.ZodType>(text: string, file: string, schema: S): YamlRead<z.infer<S>> {
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, {
    lineCounter,
    schema: "core",
    customTags: [],
    uniqueKeys: true,
    prettyErrors: false,
    // No YAML 1.1 tags either (!!binary would decode to a Buffer, !!set to a Set).
    resolveKnownTags: false,
  });
  const at = (offset: number) => lineCounter.linePos(offset);
  // An unknown tag (!foo, !!js/function) is only a warning to the yaml library, which then reads it as a
  // plain string: "no custom tags" means refusing the file, so warnings count as problems.
  const parseProblems = [...doc.errors, ...doc.warnings];
  if (parseProblems.length > 0) {
    return {
      ok: false,
      problems: parseProblems.map((e) => {
        const { line, col } = at(e.pos[0]);
        return { file, line, column: col, message: e.message.split("\n")[0] ?? e.message };
      }),
    };
  }
  let data: unknown;
  try {
    // An empty or comments-only file is an empty document, not an error.
    data = doc.toJS({ maxAliasCount: MAX_ALIAS_COUNT }) ?? {};
  } catch (error) {
    return { ok: false, problems: [{ file, line: 1, column: 1, message: (error as Error).message }] };
  }
  /** Where the key `key` of the map at `path` is written, if it is. */
  const keyOffset = (path: ReadonlyArray<string | number>, key: string | number): number | undefined => {
    const parent = doc.getIn(path as never[], true);
    const pair = isMap(parent)
      ? parent.items.find((p) => isScalar(p.key) && String(p.key.value) === String(key))
      : undefined;
    return isScalar(pair?.key) && pair.key.range ? pair.key.range[0] : undefined;
  };
  const locate: Locate = (path, message) => {
    // Point at the deepest node that exists on the path.
    let node: unknown;
    let depth = path.length;
    for (; depth >= 0; depth--) {
      node = doc.getIn(path.slice(0, depth) as never[], true);
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
  return {
    ok: false,
    problems: parsed.error.issues.flatMap((i) => {
      const path = i.path as Array<string | number>;
      if (i.code !== "unrecognized_keys") return [locate(path, i.message)];
      // One problem per unknown key, at the key itself (a typo is found where it is written, not at its map).
      return i.keys.map((key) => {
        const problem = locate(path, `unknown key "${key}"`);
        const offset = keyOffset(path, key);
        if (offset === undefined) return problem;
        const { line, col } = at(offset);
        return { ...problem, line, column: col };
      });
    }),
  };
}
