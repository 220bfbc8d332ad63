import { RXNORM, SNOMED } from "./clinical-codes.js";

/** A medicinal product the generator orders: RxNorm clinical drug with its strength and form. */
export interface Drug {
  code: string;
  display: string;
  /** What is counted when dispensing it. */
  unit: string;
  /** Typical quantities per order. */
  quantities: readonly number[];
  dosage: string;
}

export const DRUG_SYSTEM = RXNORM;

export const DRUGS: readonly Drug[] = [
  {
    code: "861007",
    display: "metformin hydrochloride 500 MG Oral Tablet",
    unit: "tablet",
    quantities: [60, 90, 180],
    dosage: "1 tablet twice daily with meals",
  },
  {
    code: "314077",
    display: "lisinopril 20 MG Oral Tablet",
    unit: "tablet",
    quantities: [30, 90],
    dosage: "1 tablet once daily",
  },
  {
    code: "259255",
    display: "atorvastatin 80 MG Oral Tablet",
    unit: "tablet",
    quantities: [30, 90],
    dosage: "1 tablet once daily at night",
  },
  {
    code: "313782",
    display: "acetaminophen 325 MG Oral Tablet",
    unit: "tablet",
    quantities: [20, 40],
    dosage: "2 tablets every 6 hours as needed for pain",
  },
  {
    code: "243670",
    display: "aspirin 81 MG Oral Tablet",
    unit: "tablet",
    quantities: [30, 90],
    dosage: "1 tablet once daily",
  },
  {
    code: "312940",
    display: "sertraline 25 MG Oral Tablet",
    unit: "tablet",
    quantities: [30],
    dosage: "1 tablet once daily in the morning",
  },
  {
    code: "310325",
    display: "ferrous sulfate 325 MG Oral Tablet",
    unit: "tablet",
    quantities: [30, 60],
    dosage: "1 tablet once daily",
  },
  {
    code: "318076",
    display: "calcium carbonate 500 MG Oral Tablet",
    unit: "tablet",
    quantities: [60],
    dosage: "1 tablet twice daily",
  },
];

/** Devices an order may be for (SNOMED CT physical objects). */
export const DEVICES: ReadonlyArray<{ system: string; code: string; display: string }> = [
  { system: SNOMED, code: "337414009", display: "Blood glucose meter" },
  { system: SNOMED, code: "70665002", display: "Blood pressure cuff" },
  { system: SNOMED, code: "58938008", display: "Wheelchair" },
];
