import { R4 } from "../../../src/validation/r4/definitions.js";

/** Every (constraint key, context type) pair R4 evaluates: type-level and element-level. */
export function constraintContexts(): Map<string, Set<string>> {
  const out = new Map<string, Set<string>>();
  const add = (key: string, type: string) => {
    const s = out.get(key) ?? new Set<string>();
    out.set(key, s);
    s.add(type);
  };
  for (const [name, type] of Object.entries(R4.types)) {
    for (const key of type.constraints) add(key, name);
    for (const el of Object.values(type.elements)) {
      for (const key of el.constraints ?? []) for (const t of el.types) add(key, t.code);
    }
  }
  return out;
}
