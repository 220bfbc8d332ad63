/**
 * The one base of every canonical URL the sandbox defines itself
 * (MessageDefinitions, extension StructureDefinitions). A reserved `.example`
 * host (RFC 2606): the same wherever the sandbox runs, and never a real server.
 */
export const CANONICAL_BASE = "https://uae-fhir-sandbox.example/fhir";

/** The publisher of everything the sandbox defines. */
export const PUBLISHER = "uae-fhir-sandbox";

/**
 * The canonical URL of a conformance resource the sandbox defines.
 *
 * @example
 *   canonicalUrl("StructureDefinition", "estimated-time")
 *   // "https://uae-fhir-sandbox.example/fhir/StructureDefinition/estimated-time"
 */
export function canonicalUrl(resourceType: "MessageDefinition" | "StructureDefinition", id: string): string {
  return `${CANONICAL_BASE}/${resourceType}/${id}`;
}
