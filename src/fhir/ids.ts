/** FHIR `id` datatype: 1–64 of A–Z, a–z, 0–9, '-' and '.'. */
export const FHIR_ID = /^[A-Za-z0-9\-.]{1,64}$/;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function isUuid(value: string): boolean {
  return UUID.test(value);
}

/**
 * The fullUrl of a resource placed in a Bundle the sandbox builds. Server ids
 * are UUIDs, so `urn:uuid:` keeps fullUrl and id in agreement (bdl-8); other
 * ids (fixtures, the spec's examples) get a RESTful URL under the FHIR base.
 */
export function fullUrlFor(resource: { resourceType: string; id?: string }, fhirBase: string): string {
  const id = resource.id;
  if (id === undefined) throw new Error(`fullUrlFor: ${resource.resourceType} has no id`);
  return isUuid(id) ? `urn:uuid:${id}` : `${fhirBase}/${resource.resourceType}/${id}`;
}
