import { readdirSync, readFileSync } from "node:fs";
import { choiceKey, R4 } from "../../../src/validation/r4/definitions.js";

/** A node of a known type in real data, with the resources around it. */
export interface CorpusNode {
  type: string;
  node: unknown;
  resource: unknown;
  rootResource: unknown;
  where: string;
}

const EXAMPLES = new URL("../../fixtures/fhir-examples/", import.meta.url);

export function loadExamples(): { name: string; json: Record<string, unknown> }[] {
  return readdirSync(EXAMPLES)
    .filter((f) => f.endsWith(".json"))
    .map((name) => ({ name, json: JSON.parse(readFileSync(new URL(name, EXAMPLES), "utf8")) }));
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/**
 * Walks a resource with R4.types, reporting every complex or backbone
 * node with its type (a resource once as itself; contained resources keep
 * the root, Bundle entries become their own root).
 */
export function walk(
  value: unknown,
  type: string,
  resource: unknown,
  rootResource: unknown,
  where: string,
  out: CorpusNode[],
): void {
  if (!isObject(value)) return;
  let t = type;
  if (type === "Resource" || type === "DomainResource") {
    if (typeof value.resourceType !== "string" || !R4.types[value.resourceType]) return;
    t = value.resourceType;
  }
  const def = R4.types[t];
  if (!def || def.kind === "primitive-type") return;
  out.push({ type: t, node: value, resource, rootResource, where });
  for (const [name, el] of Object.entries(def.elements)) {
    for (const ref of el.types) {
      const key = el.choice ? choiceKey(name, ref.code) : name;
      const v = value[key];
      if (v === undefined) continue;
      const items = Array.isArray(v) ? v : [v];
      items.forEach((item, i) => {
        const at = `${where}.${key}[${i}]`;
        if (ref.code === "Resource" && isObject(item)) {
          const root = name === "contained" ? rootResource : item;
          walk(item, ref.code, item, root, at, out);
        } else {
          walk(item, ref.code, resource, rootResource, at, out);
        }
      });
    }
  }
}

/** Every typed node of every HL7 example. */
export function exampleCorpus(): CorpusNode[] {
  const out: CorpusNode[] = [];
  for (const { name, json } of loadExamples()) walk(json, "Resource", json, json, name, out);
  return out;
}
