/** LOINC codes of the vital signs the sandbox knows, with the UCUM units that fit each (FHIR vital-signs profile). */
export interface VitalSign {
  loinc: string;
  display: string;
  /** UCUM codes accepted for a value of this kind; the first is the one generated. */
  units: readonly string[];
  /** Human-readable unit for the first UCUM code. */
  unitText: string;
  /** Panel members (blood pressure): their own codes and units. */
  components?: readonly VitalSign[];
  /**
   * The LOINC code the R4 vital-signs profile requires for this kind, when it is
   * another one: generated observations carry both codings.
   */
  profileCode?: string;
}

export const LOINC = "http://loinc.org";
export const UCUM = "http://unitsofmeasure.org";
export const VITAL_SIGNS_CATEGORY = {
  coding: [
    {
      system: "http://terminology.hl7.org/CodeSystem/observation-category",
      code: "vital-signs",
      display: "Vital Signs",
    },
  ],
};

const sign = (loinc: string, display: string, units: string[], unitText: string): VitalSign => ({
  loinc,
  display,
  units,
  unitText,
});

export const SYSTOLIC = sign("8480-6", "Systolic blood pressure", ["mm[Hg]"], "mmHg");
export const DIASTOLIC = sign("8462-4", "Diastolic blood pressure", ["mm[Hg]"], "mmHg");

export const VITAL_SIGNS: readonly VitalSign[] = [
  sign("29463-7", "Body weight", ["kg", "g", "[lb_av]"], "kg"),
  sign("8302-2", "Body height", ["cm", "m", "[in_i]"], "cm"),
  sign("39156-5", "Body mass index (BMI) [Ratio]", ["kg/m2"], "kg/m2"),
  { ...sign("85354-9", "Blood pressure panel with all children optional", [], ""), components: [SYSTOLIC, DIASTOLIC] },
  sign("8867-4", "Heart rate", ["/min"], "beats/minute"),
  sign("8310-5", "Body temperature", ["Cel", "[degF]"], "C"),
  // The vital-signs profile's oxygen saturation slice wants 2708-6 next to pulse oximetry's code.
  { ...sign("59408-5", "Oxygen saturation in Arterial blood by Pulse oximetry", ["%"], "%"), profileCode: "2708-6" },
  sign("2708-6", "Oxygen saturation in Arterial blood", ["%"], "%"),
  sign("9279-1", "Respiratory rate", ["/min"], "breaths/minute"),
];

const byCode = new Map<string, VitalSign>(
  [...VITAL_SIGNS, SYSTOLIC, DIASTOLIC].map((v) => [v.loinc, v] as [string, VitalSign]),
);

/**
 * The vital sign a LOINC code names, if the sandbox knows it.
 *
 * @example
 *   vitalSign("8867-4")?.units // ["/min"]
 */
export function vitalSign(loinc: string): VitalSign | undefined {
  return byCode.get(loinc);
}
