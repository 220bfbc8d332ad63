import { childrenOf, expand, type ObjectNode, type Visited, walk } from "./r4-definitions.js";

/**
 * Mutations that make a valid R4 resource invalid, chosen from HL7's own
 * definitions (./r4-definitions.ts), each with the issue R4 validation must
 * report (CONTRACT §11): its IssueType code and the FHIRPath, relative to the
 * resource, of the node it must point at.
 */

export type MutationKind = "break-date" | "flip-required-code" | "unknown-element" | "drop-required";
export const MUTATION_KINDS: MutationKind[] = ["break-date", "flip-required-code", "unknown-element", "drop-required"];

export interface Mutation {
  kind: MutationKind;
  /** The mutated copy of the resource. */
  resource: Record<string, unknown>;
  /** IssueType code the refusal must carry. */
  code: string;
  /** FHIRPath from the resource ("" = the resource itself) to the node the issue must point at. */
  path: string;
  /** What was done, for failure messages. */
  description: string;
}

/** An invalid month: no R4 date, dateTime or instant matches it. */
export const BROKEN_DATE = "2013-13-01";
export const UNKNOWN_ELEMENT = "sandboxUnknownElement";
export const BOGUS_CODE = "not-a-code-in-this-value-set";

interface Candidates {
  dates: Visited[];
  codes: Visited[];
  codings: Visited[];
  objects: ObjectNode[];
  required: Array<{ parent: ObjectNode; key: string }>;
}

function candidates(resource: Record<string, unknown>): Candidates {
  const found: Candidates = { dates: [], codes: [], codings: [], objects: [], required: [] };
  walk(
    resource,
    (v) => {
      if (["date", "dateTime", "instant"].includes(v.type) && typeof v.value === "string") found.dates.push(v);
      const binding = v.element.binding;
      if (binding?.strength !== "required" || !binding.valueSet) return;
      const expansion = expand(binding.valueSet);
      if (!expansion) return;
      if (v.type === "code" && typeof v.value === "string") found.codes.push(v);
      if (v.type === "CodeableConcept" || v.type === "Coding") {
        const systems = new Set(expansion.codes.map((c) => c.system));
        const codings =
          v.type === "Coding"
            ? [v.value]
            : (((v.value as { coding?: unknown[] }).coding ?? []) as Array<{ system?: string; code?: string }>);
        if (codings.some((c) => systems.has((c as { system?: string }).system ?? ""))) found.codings.push(v);
      }
    },
    (o) => {
      found.objects.push(o);
      for (const child of childrenOf(o.structure, o.prefix)) {
        if (child.min < 1) continue;
        const name = child.path.slice(o.prefix.length + 1);
        const key = name.endsWith("[x]")
          ? Object.keys(o.object).find(
              (k) => k.startsWith(name.slice(0, -3)) && /^[A-Z]/.test(k.slice(name.length - 3)),
            )
          : name in o.object
            ? name
            : undefined;
        if (key) found.required.push({ parent: o, key });
      }
    },
  );
  return found;
}

/** How many places each kind of mutation can hit in `resource`. */
export function mutationSites(resource: object): Record<MutationKind, number> {
  const c = candidates(structuredClone(resource) as Record<string, unknown>);
  return {
    "break-date": c.dates.length,
    "flip-required-code": c.codes.length + c.codings.length,
    "unknown-element": c.objects.length,
    "drop-required": c.required.length,
  };
}

/** The `pick`-th (modulo the number of sites) mutation of this kind; undefined when the resource has no site for it. */
export function mutate(resource: object, kind: MutationKind, pick: number): Mutation | undefined {
  const copy = structuredClone(resource) as Record<string, unknown>;
  const c = candidates(copy);
  const choose = <T>(list: T[]): T | undefined => (list.length === 0 ? undefined : list[pick % list.length]);
  const set = (v: Visited, value: unknown) => {
    if (v.index === undefined) v.container[v.key] = value;
    else (v.container[v.key] as unknown[])[v.index] = value;
  };
  switch (kind) {
    case "break-date": {
      const v = choose(c.dates);
      if (!v) return undefined;
      set(v, BROKEN_DATE);
      return { kind, resource: copy, code: "value", path: v.path, description: `${v.path} = "${BROKEN_DATE}"` };
    }
    case "flip-required-code": {
      const all = [...c.codes, ...c.codings];
      const v = choose(all);
      if (!v) return undefined;
      if (v.type === "code") {
        set(v, BOGUS_CODE);
        return { kind, resource: copy, code: "code-invalid", path: v.path, description: `${v.path} = "${BOGUS_CODE}"` };
      }
      const expansion = expand(v.element.binding?.valueSet as string);
      const systems = new Set((expansion?.codes ?? []).map((x) => x.system));
      if (v.type === "Coding") {
        (v.value as { code?: string }).code = BOGUS_CODE;
        return {
          kind,
          resource: copy,
          code: "code-invalid",
          path: `${v.path}.code`,
          description: `${v.path}.code = "${BOGUS_CODE}"`,
        };
      }
      const codings = (v.value as { coding: Array<{ system?: string; code?: string }> }).coding;
      const i = codings.findIndex((x) => systems.has(x.system ?? ""));
      (codings[i] as { code?: string }).code = BOGUS_CODE;
      return {
        kind,
        resource: copy,
        code: "code-invalid",
        path: `${v.path}.coding[${i}].code`,
        description: `${v.path}.coding[${i}].code = "${BOGUS_CODE}"`,
      };
    }
    case "unknown-element": {
      const o = choose(c.objects);
      if (!o) return undefined;
      o.object[UNKNOWN_ELEMENT] = "x";
      return {
        kind,
        resource: copy,
        code: "structure",
        path: `${o.path}.${UNKNOWN_ELEMENT}`,
        description: `added ${o.path || "(resource)"}.${UNKNOWN_ELEMENT}`,
      };
    }
    case "drop-required": {
      const r = choose(c.required);
      if (!r) return undefined;
      delete r.parent.object[r.key];
      return {
        kind,
        resource: copy,
        code: "required",
        path: r.parent.path,
        description: `dropped ${r.parent.path || "(resource)"}.${r.key}`,
      };
    }
  }
}
