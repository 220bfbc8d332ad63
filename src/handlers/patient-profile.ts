import type {
  AllergyIntolerance,
  Composition,
  CompositionSection,
  Condition,
  Observation,
  Patient,
  Procedure,
  Resource,
} from "fhir/r4.js";
import { LOINC } from "../domain/vital-signs.js";
import { isEnteredInError } from "../fhir/entered-in-error.js";
import { identityOfEntry } from "../store/patient-identity.js";
import type { RecordType } from "../store/sandbox-store.js";
import { type Handler, ok } from "./handler.js";
import { patientReference } from "./profile-records.js";

/** The International Patient Summary sections the clinician view has, as data. */
const SECTIONS: ReadonlyArray<{ title: string; code: string; display: string; types: RecordType[] }> = [
  {
    title: "Allergies and intolerances",
    code: "48765-2",
    display: "Allergies and adverse reactions Document",
    types: ["AllergyIntolerance"],
  },
  { title: "Problems and history", code: "11450-4", display: "Problem list - Reported", types: ["Condition"] },
  { title: "Procedures", code: "47519-4", display: "History of Procedures Document", types: ["Procedure"] },
  { title: "Vital signs", code: "8716-3", display: "Vital signs", types: ["Observation"] },
];

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

function describe(r: Resource): string {
  const coded = r as { code?: { text?: string; coding?: Array<{ display?: string; code?: string }> } };
  const name = coded.code?.text ?? coded.code?.coding?.[0]?.display ?? coded.code?.coding?.[0]?.code ?? r.resourceType;
  if (r.resourceType === "Observation") {
    const o = r as Observation;
    const q = (v: Observation["valueQuantity"]) => (v ? `${v.value} ${v.unit ?? v.code ?? ""}`.trim() : "");
    const value = o.valueQuantity
      ? q(o.valueQuantity)
      : (o.component ?? [])
          .map((c) => q(c.valueQuantity))
          .filter(Boolean)
          .join(" / ");
    return `${name}: ${value}${o.effectiveDateTime ? ` (${o.effectiveDateTime.slice(0, 10)})` : ""}`;
  }
  if (r.resourceType === "AllergyIntolerance") {
    const a = r as AllergyIntolerance;
    return a.criticality ? `${name} (criticality ${a.criticality})` : name;
  }
  return name;
}

const narrative = (items: Resource[]) => ({
  status: "generated" as const,
  div:
    items.length === 0
      ? '<div xmlns="http://www.w3.org/1999/xhtml"><p>None known.</p></div>'
      : `<div xmlns="http://www.w3.org/1999/xhtml"><ul>${items.map((r) => `<li>${escapeHtml(describe(r))}</li>`).join("")}</ul></div>`,
});

const when = (o: Observation) =>
  Date.parse(o.effectiveDateTime ?? o.effectivePeriod?.start ?? o.issued ?? o.meta?.lastUpdated ?? "") || 0;

/** Measurements reduced to the latest per code (the first LOINC coding, else the first coding). */
export function latestPerCode(observations: Observation[]): Observation[] {
  const latest = new Map<string, Observation>();
  for (const o of observations) {
    const coding = o.code.coding?.find((c) => c.system === LOINC) ?? o.code.coding?.[0];
    const key = `${coding?.system}|${coding?.code ?? o.code.text}`;
    const current = latest.get(key);
    if (!current || when(o) >= when(current)) latest.set(key, o);
  }
  return [...latest.values()];
}

/**
 * view-patient-profile: the Patient and a Composition summarising the active
 * records in IPS sections, plus every resource the Composition references.
 */
export const viewPatientProfile: Handler = ({ focus, message }, { store, now, newId }) => {
  const sent = focus[0]?.resource as Patient;
  const patient = store.ensurePatient(identityOfEntry(sent, message));
  const subject = patientReference(patient);
  const sectionItems = SECTIONS.map((s) => {
    const active = store.records(patient.id as string, s.types).filter((r) => !isEnteredInError(r));
    return s.types.includes("Observation") ? latestPerCode(active as Observation[]) : active;
  });
  const sections: CompositionSection[] = SECTIONS.map((s, i) => {
    const items = sectionItems[i] ?? [];
    const section: CompositionSection = {
      title: s.title,
      code: { coding: [{ system: LOINC, code: s.code, display: s.display }] },
      text: narrative(items),
    };
    if (items.length > 0) section.entry = items.map((r) => ({ reference: `${r.resourceType}/${r.id}` }));
    else
      section.emptyReason = {
        coding: [
          { system: "http://terminology.hl7.org/CodeSystem/list-empty-reason", code: "nilknown", display: "Nil Known" },
        ],
      };
    return section;
  });
  const composition: Composition = {
    resourceType: "Composition",
    id: newId(),
    status: "final",
    type: { coding: [{ system: LOINC, code: "60591-5", display: "Patient summary Document" }] },
    subject,
    date: now().toISOString(),
    author: [{ display: "uae-fhir-sandbox" }],
    title: `Patient summary: ${subject.display ?? patient.id}`,
    section: sections,
  };
  const referenced = sectionItems.flat() as Array<AllergyIntolerance | Condition | Procedure | Observation>;
  return ok([patient, composition, ...referenced], [patient, composition]);
};
