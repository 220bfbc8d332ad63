import type { Patient, Resource } from "fhir/r4.js";
import { stableUuid } from "../fhir/ids.js";
import { patientReference } from "../handlers/profile-records.js";
import type { PharmacyRegistry } from "../orders/pharmacy-registry.js";
import { identityOfPatient } from "../store/patient-identity.js";
import type { SandboxStore } from "../store/sandbox-store.js";
import type { LoadedScenario } from "./load.js";

export interface FixtureTargets {
  store: SandboxStore;
  pharmacies: PharmacyRegistry;
  seed: string;
  emiratesIdSystem: string;
}

/** Where each fixture list's records name their patient. */
const LISTS = [
  ["allergies", "patient"],
  ["history", "subject"],
  ["measurements", "subject"],
  ["tasks", "for"],
] as const;

/**
 * Loads the fixtures of scenario files into the store and the pharmacy
 * registry. A fixture patient keeps what the file gives; missing
 * demographics (and an Emirates ID) are generated from its first key, and
 * `generated: true` adds the generated clinical profile as well.
 */
export function applyFixtures(scenarios: readonly LoadedScenario[], targets: FixtureTargets): void {
  for (const { scenario } of scenarios) {
    for (const fixture of scenario.fixtures?.patients ?? []) {
      const given = fixture.patient as unknown as Patient;
      const identity = identityOfPatient(given);
      const key = identity.keys[0] ?? stableUuid(targets.seed, JSON.stringify(given));
      // The fixture's id (if any) is kept; generated records come only with `generated: true`.
      const patient = targets.store.ensurePatient(
        {
          keys: [...identity.keys, ...(identity.keys.length === 0 ? [key] : [])],
          given: { ...identity.given, ...(given.id ? { id: given.id } : {}) },
        },
        { records: fixture.generated === true },
      );
      const patientId = patient.id as string;
      // Fixture patients stay whatever the store's limits: scenarios and tests rely on them.
      targets.store.pin(patientId);
      for (const [list, field] of LISTS) {
        (fixture[list] ?? []).forEach((record, i) => {
          const resource = record as unknown as Resource;
          const id = resource.id ?? stableUuid(targets.seed, key, list, String(i));
          targets.store.putRecord({ ...resource, id, [field]: patientReference(patient) } as Resource, patientId);
        });
      }
    }
    for (const p of scenario.fixtures?.pharmacies ?? []) {
      targets.pharmacies.put({
        licence: p.licence,
        name: p.name,
        endpoint: p.endpoint,
        headers: p.headers ?? {},
        ...(p.clientCertificate !== undefined ? { clientCertificate: p.clientCertificate } : {}),
        source: "fixture",
      });
    }
  }
}

/** The patient keys scenario rules match on (`when.patient`): such patients are kept whatever the store's limits. */
export function rulePatientKeys(scenarios: readonly LoadedScenario[]): string[] {
  return scenarios.flatMap(({ scenario }) =>
    (scenario.rules ?? []).flatMap((rule) => {
      const patient = rule.when?.patient;
      return patient === undefined ? [] : Array.isArray(patient) ? patient : [patient];
    }),
  );
}
