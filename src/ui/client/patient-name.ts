/** How the dashboard names a patient: by their name, else their Emirates ID, else their server id. */

interface HumanName {
  use?: string;
  text?: string;
  given?: string[];
  family?: string;
}

export interface NamedPatient {
  id?: string;
  identifier?: Array<{ system?: string; value?: string }>;
  name?: HumanName[];
}

const EMIRATES_ID = "urn:ae:emirates-id";

/** The name a person goes by: the official one, else the usual one, else the first with any part. */
function chosen(names: HumanName[]): HumanName | undefined {
  const named = names.filter((n) => n.given?.length || n.family || n.text);
  return named.find((n) => n.use === "official") ?? named.find((n) => n.use === "usual") ?? named[0];
}

/** A HumanName as "Given Family" (its text when it has no parts), or undefined when it says nothing. */
export function personName(names: HumanName[] | undefined): string | undefined {
  const n = chosen(names ?? []);
  if (!n) return undefined;
  const parts = [...(n.given ?? []), n.family].filter((p) => p?.trim());
  return parts.length > 0 ? parts.join(" ") : n.text?.trim() || undefined;
}

/**
 * What a patient is called on a page: "Given Family", else the Emirates ID, else the server id.
 *
 * @example
 *   patientTitle({ id: "p1", name: [{ given: ["Reem"], family: "Al Dhaheri" }] }) // "Reem Al Dhaheri"
 */
export function patientTitle(patient: NamedPatient): string {
  return (
    personName(patient.name) ??
    patient.identifier?.find((i) => i.system === EMIRATES_ID && i.value)?.value ??
    patient.id ??
    "(a patient with no name, identifier or id)"
  );
}
