import { escapeJsonText, jsonText } from "../text/json-text.js";
import { resourceText } from "./fixed-resources.js";

/**
 * `jsonText(body)`, the same text, written around the texts of the stored (frozen) resources it holds: each is
 * kept once written again (resourceText) and spliced into every answer that holds it, so an add-allergy answer does not
 * serialize its patient again, nor a profile view its 14 to 50 records. What is not stored (the Bundle's own
 * members, the MessageHeader, new resources) is serialized here, a member at a time, by JSON.stringify itself.
 *
 * @example
 *   bundleJson(okMessage(correlation, records, deps)) === jsonText(okMessage(correlation, records, deps))
 */
export function bundleJson(body: unknown): string {
  const entries = plain(body) ? body.entry : undefined;
  if (!Array.isArray(entries) || !plain(entries) || !holdsFrozen(entries)) return jsonText(body);
  const text = new Text();
  text.raw("{");
  let first = true;
  for (const key of Object.keys(body as object)) {
    if (key === "entry") {
      text.raw(first ? '"entry":[' : ',"entry":[');
      entriesText(entries, text);
      text.raw("]");
      first = false;
    } else first = member(text, key, (body as Record<string, unknown>)[key], first);
  }
  text.raw("}");
  return text.done();
}

function entriesText(entries: readonly unknown[], text: Text): void {
  for (let i = 0; i < entries.length; i++) {
    if (i > 0) text.raw(",");
    const entry = entries[i];
    const resource = plain(entry) ? entry.resource : undefined;
    if (resource === null || typeof resource !== "object" || !Object.isFrozen(resource)) {
      text.raw(plain(entry) ? JSON.stringify(entry) : element(i, entry));
      continue;
    }
    text.raw("{");
    let first = true;
    for (const key of Object.keys(entry as object)) {
      if (key === "resource") {
        text.raw(first ? '"resource":' : ',"resource":');
        text.kept(resourceText(resource));
        first = false;
      } else first = member(text, key, (entry as Record<string, unknown>)[key], first);
    }
    text.raw("}");
  }
}

/** An array's element as JSON.stringify writes it there: a `toJSON` gets its index, what has no JSON is `null`. */
function element(index: number, value: unknown): string {
  const written = JSON.stringify({ [index]: value });
  return written.length === 2 ? "null" : written.slice(String(index).length + 4, -1);
}

/**
 * One member of an object, as JSON.stringify writes it in the object (a `toJSON` called with its key, a member
 * whose value has no JSON left out); returns whether the object still has no member written. A value with no
 * `toJSON` of its own is written alone (the key makes no difference to it), without an object to hold it.
 */
function member(text: Text, key: string, value: unknown, first: boolean): boolean {
  const type = typeof value;
  if (type === "string" || type === "number" || type === "boolean" || value === null || plain(value)) {
    if (!first) text.raw(",");
    text.raw(JSON.stringify(key));
    text.raw(":");
    text.raw(JSON.stringify(value));
    return false;
  }
  const written = JSON.stringify({ [key]: value }).slice(1, -1);
  if (written === "") return first;
  if (!first) text.raw(",");
  text.raw(written);
  return false;
}

/**
 * The answer's text: raw JSON (to be escaped) and kept texts (escaped already) in turn. Each raw piece is looked at
 * as it comes (they are flat strings), and a run is escaped only if one of its pieces needs it: a search of the joined
 * run would copy it into one string first, only for the answer to be copied whole again.
 */
class Text {
  #done = "";
  #raw = "";
  #escape = false;

  raw(json: string): void {
    this.#raw += json;
    if (!this.#escape && needsEscape(json)) this.#escape = true;
  }

  kept(escaped: string): void {
    this.#done += this.#run() + escaped;
  }

  done(): string {
    return this.#done + this.#run();
  }

  #run(): string {
    const run = this.#escape ? escapeJsonText(this.#raw) : this.#raw;
    this.#raw = "";
    this.#escape = false;
    return run;
  }
}

/** Whether escapeJsonText would change a text: most pieces hold none of the three characters, told by indexOf. */
function needsEscape(json: string): boolean {
  return json.indexOf("<") >= 0 || json.indexOf(">") >= 0 || json.indexOf("&") >= 0;
}

/** A plain object or array without `toJSON`: its members are written as JSON.stringify would. */
function plain(value: unknown): value is Record<string, unknown> {
  if (value === null || typeof value !== "object" || "toJSON" in value) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === Array.prototype;
}

function holdsFrozen(entries: readonly unknown[]): boolean {
  for (const entry of entries) {
    const resource = (entry as { resource?: unknown } | null)?.resource;
    if (resource !== null && typeof resource === "object" && Object.isFrozen(resource)) return true;
  }
  return false;
}
