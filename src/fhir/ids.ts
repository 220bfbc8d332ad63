import { createHash } from "node:crypto";

/** FHIR `id` datatype: 1–64 of A–Z, a–z, 0–9, '-' and '.'. */
export const FHIR_ID = /^[A-Za-z0-9\-.]{1,64}$/;

/**
 * The fullUrl of a resource in a Bundle the sandbox builds: its RESTful URL
 * under the FHIR base, so relative references such as `Patient/{id}` inside
 * the Bundle resolve to the entry (Bundle reference resolution rules).
 */
export function fullUrlFor(resource: { resourceType: string; id?: string }, fhirBase: string): string {
  if (resource.id === undefined) throw new Error(`fullUrlFor: ${resource.resourceType} has no id`);
  return `${fhirBase}/${resource.resourceType}/${resource.id}`;
}

const NAMESPACE = Buffer.from("6f2a3f52-1b7e-4c59-9a11-5a0c2ad4e7b3".replaceAll("-", ""), "hex");

/**
 * A name-based UUID (RFC 4122 version 5): the same parts always give the same
 * id, so generated patients have the same ids on every run and machine.
 */
export function stableUuid(...parts: string[]): string {
  const hash = createHash("sha1").update(NAMESPACE).update(parts.join("\u0000")).digest();
  hash[6] = ((hash[6] as number) & 0x0f) | 0x50;
  hash[8] = ((hash[8] as number) & 0x3f) | 0x80;
  const hex = hash.subarray(0, 16).toString("hex");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
