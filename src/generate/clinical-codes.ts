/** Coded clinical content the generator draws from. Codes are real SNOMED CT, RxNorm, ICD-10 and LOINC codes. */

export const SNOMED = "http://snomed.info/sct";
export const RXNORM = "http://www.nlm.nih.gov/research/umls/rxnorm";
export const ICD10 = "http://hl7.org/fhir/sid/icd-10";

export interface Code {
  system: string;
  code: string;
  display: string;
}

export interface Allergen {
  category: "food" | "medication" | "environment";
  codes: Code[];
  reactions: Code[];
}

const sct = (code: string, display: string): Code => ({ system: SNOMED, code, display });
const rx = (code: string, display: string): Code => ({ system: RXNORM, code, display });
const icd = (code: string, display: string): Code => ({ system: ICD10, code, display });

const ANAPHYLAXIS = sct("39579001", "Anaphylaxis");
const URTICARIA = sct("126485001", "Urticaria");
const RASH = sct("271807003", "Eruption of skin");
const ANGIOEDEMA = sct("41291007", "Angioedema");
const NAUSEA = sct("422587007", "Nausea");
const WHEEZING = sct("56018004", "Wheezing");

export const ALLERGENS: readonly Allergen[] = [
  { category: "food", codes: [sct("256349002", "Peanut (substance)")], reactions: [ANAPHYLAXIS, URTICARIA] },
  { category: "food", codes: [sct("227493005", "Cashew nut (substance)")], reactions: [ANAPHYLAXIS, ANGIOEDEMA] },
  { category: "food", codes: [sct("102263004", "Eggs (edible) (substance)")], reactions: [RASH, NAUSEA] },
  { category: "food", codes: [sct("3718001", "Cow's milk (substance)")], reactions: [NAUSEA, RASH] },
  { category: "food", codes: [sct("227037002", "Fish - dietary (substance)")], reactions: [URTICARIA] },
  {
    category: "medication",
    codes: [sct("764146007", "Penicillin (substance)"), rx("7980", "Penicillin G")],
    reactions: [URTICARIA, ANAPHYLAXIS],
  },
  {
    category: "medication",
    codes: [sct("372687004", "Amoxicillin (substance)"), rx("723", "Amoxicillin")],
    reactions: [RASH],
  },
  {
    category: "medication",
    codes: [sct("387458008", "Aspirin (substance)"), rx("1191", "Aspirin")],
    reactions: [WHEEZING, URTICARIA],
  },
  {
    category: "medication",
    codes: [sct("387207008", "Ibuprofen (substance)"), rx("5640", "Ibuprofen")],
    reactions: [ANGIOEDEMA],
  },
  { category: "environment", codes: [sct("111088007", "Latex (substance)")], reactions: [RASH, URTICARIA] },
];

export interface Problem {
  snomed: Code;
  icd10: Code;
}

export const CONDITIONS: readonly Problem[] = [
  {
    snomed: sct("44054006", "Diabetes mellitus type 2"),
    icd10: icd("E11.9", "Type 2 diabetes mellitus without complications"),
  },
  {
    snomed: sct("38341003", "Hypertensive disorder, systemic arterial"),
    icd10: icd("I10", "Essential (primary) hypertension"),
  },
  { snomed: sct("195967001", "Asthma"), icd10: icd("J45.9", "Asthma, unspecified") },
  { snomed: sct("55822004", "Hyperlipidemia"), icd10: icd("E78.5", "Hyperlipidaemia, unspecified") },
  { snomed: sct("40930008", "Hypothyroidism"), icd10: icd("E03.9", "Hypothyroidism, unspecified") },
  {
    snomed: sct("235595009", "Gastroesophageal reflux disease"),
    icd10: icd("K21.9", "Gastro-oesophageal reflux disease without oesophagitis"),
  },
  { snomed: sct("35489007", "Depressive disorder"), icd10: icd("F32.9", "Depressive episode, unspecified") },
];

export const PROCEDURES: readonly Code[] = [
  sct("80146002", "Appendectomy"),
  sct("38102005", "Cholecystectomy"),
  sct("73761001", "Colonoscopy"),
  sct("11466000", "Cesarean section"),
  sct("232717009", "Coronary artery bypass grafting"),
];

/** The kinds of health-program task (Task.code), in the sandbox's own code system. */
export const TASK_KIND_SYSTEM = "urn:uae-fhir-sandbox:task-kind";

export const TASK_KINDS = ["order", "measure", "assessment"] as const;

export interface TaskTemplate {
  kind: (typeof TASK_KINDS)[number];
  action: string;
  role: Code;
}

export const TASK_TEMPLATES: readonly TaskTemplate[] = [
  { kind: "order", action: "Order HbA1c laboratory test", role: sct("309343006", "Physician") },
  { kind: "measure", action: "Measure blood pressure at home for 7 days", role: sct("224535009", "Registered nurse") },
  { kind: "measure", action: "Record body weight weekly", role: sct("224535009", "Registered nurse") },
  { kind: "assessment", action: "Diabetic foot assessment", role: sct("309343006", "Physician") },
  { kind: "assessment", action: "Dietary assessment and counselling", role: sct("159033005", "Dietitian") },
  { kind: "order", action: "Medication review", role: sct("46255001", "Pharmacist") },
];
