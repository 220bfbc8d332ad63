import { INITIAL_TASK_STATUSES } from "../domain/task-transitions.js";
import { LOINC, UCUM, VITAL_SIGNS, type VitalSign } from "../domain/vital-signs.js";
import { TASK_KINDS } from "../generate/clinical-codes.js";
import type { OperationSpec, Requirement } from "./operation.js";

/** The two message-processing paths of the real service (CONTRACT §1). */
export const STANDARD_PATH = "/uae-fhir/r4/$process-message";
export const ALTERNATE_PATH = "/fhir/$process-message";
/** The FHIR base of the standard path: /uae-fhir/r4. */
export const STANDARD_FHIR_BASE = STANDARD_PATH.slice(0, STANDARD_PATH.lastIndexOf("/"));
/** The FHIR bases of the two message paths, e.g. /uae-fhir/r4: each publishes the sandbox's capability. */
export const FHIR_BASES = [STANDARD_PATH, ALTERNATE_PATH].map((path) => path.slice(0, path.lastIndexOf("/")));

const need = (
  fhirpath: string,
  element: string,
  says: string,
  code: Requirement["code"] = "required",
): Requirement => ({
  fhirpath,
  element,
  says,
  code,
});

const hasId = (type: string) =>
  need(
    "id.exists()",
    "id",
    `${type}.id is required: the id of the existing ${type} this message is about (as the sandbox returned or sent it).`,
  );

const patientKey = need(
  "identifier.where(value.exists()).exists() or id.exists()",
  "identifier",
  "Patient needs an identifier (system and value, e.g. an Emirates ID under urn:ae:emirates-id) or an id to tell who it is.",
);

const allergy = [
  need(
    "code.exists()",
    "code",
    "AllergyIntolerance.code is required: the substance or product, coded in SNOMED CT or RxNorm.",
  ),
  need(
    "patient.exists()",
    "patient",
    "AllergyIntolerance.patient is required: reference the Patient (an entry of this Bundle or Patient/{id}).",
  ),
];

const history = (type: "Condition" | "Procedure") => [
  // code is 0..1 in R4: a record told only in its narrative (HL7's procedure-example-appendectomy-narrative) is valid.
  need(
    "code.exists() or text.`div`.exists()",
    "code",
    `${type}.code is required: the diagnosis or procedure, in SNOMED CT or ICD-10 (or, at least, a narrative in text.div).`,
  ),
  need("subject.exists()", "subject", `${type}.subject is required: reference the Patient it is about.`),
];

const list = (values: readonly string[]) => values.map((v) => `'${v}'`).join(" | ");
const coded = (sign: VitalSign) => `code.coding.where(system = '${LOINC}' and code = '${sign.loinc}').exists()`;
const unitText = (sign: VitalSign) => `${sign.display} (LOINC ${sign.loinc}) is measured in ${sign.units.join(", ")}`;

/** Units that fit each known LOINC code, generated from the vital-signs table. */
const unitChecks: Requirement[] = VITAL_SIGNS.flatMap((sign) =>
  sign.components
    ? sign.components.map((part) =>
        need(
          `${coded(sign)} implies component.where(${coded(part)}).valueQuantity.all(system = '${UCUM}' and code in (${list(part.units)}))`,
          "component.value.ofType(Quantity).code",
          `${unitText(part)}: give each component's valueQuantity a UCUM code (system ${UCUM}) among those.`,
          "value",
        ),
      )
    : [
        need(
          `${coded(sign)} implies valueQuantity.all(system = '${UCUM}' and code in (${list(sign.units)}))`,
          "value.ofType(Quantity).code",
          `${unitText(sign)}: give valueQuantity a UCUM code (system ${UCUM}) among those.`,
          "value",
        ),
      ],
);

const measurement = [
  need(
    "code.exists()",
    "code",
    "Observation.code is required: the LOINC code of what was measured, e.g. 29463-7 body weight.",
  ),
  need("subject.exists()", "subject", "Observation.subject is required: reference the Patient that was measured."),
  need(
    "value.exists() or component.value.exists()",
    "value",
    "Observation needs a value (valueQuantity with a UCUM unit), or component values for a panel such as blood pressure.",
  ),
  ...unitChecks,
];

const task = [
  need(
    `status in (${list(INITIAL_TASK_STATUSES)})`,
    "status",
    `A new Task must start as ${INITIAL_TASK_STATUSES.join(", ")}.`,
    "value",
  ),
  need("intent.exists()", "intent", "Task.intent is required, e.g. order or plan."),
  need(
    "code.exists()",
    "code",
    `Task.code is required: the kind of task (${TASK_KINDS.join(", ")}) and the required action.`,
  ),
  need(
    `code.empty() or code.coding.where(code in (${list(TASK_KINDS)})).exists() or code.text.lower() in (${list(TASK_KINDS)})`,
    "code",
    `Task.code must say the kind of task, ${TASK_KINDS.join(", ")} (a coding code, e.g. system urn:uae-fhir-sandbox:task-kind), and its text the required action.`,
    "value",
  ),
  need("for.exists()", "for", "Task.for is required: reference the Patient the task is for."),
  need(
    "performerType.exists()",
    "performerType",
    "Task.performerType is required: the practitioner role that must work on the task.",
  ),
];

/**
 * The operation catalogue as data: one row per operation of CONTRACT §3.
 * An operations file (`--operations`) may rename event codes, add aliases or
 * move paths; handlers are looked up by `id`, so those changes need no code.
 */
export const DEFAULT_OPERATIONS: readonly OperationSpec[] = [
  {
    id: "view-patient-profile",
    area: "patient-profile",
    scope: "patient-profile.read",
    path: STANDARD_PATH,
    event: "view-patient-profile",
    aliases: [],
    category: "currency",
    summary:
      "Reads a patient's clinician summary: answers with the Patient and a Composition whose International Patient Summary sections (allergies, problems, procedures, vital signs) reference the resources that follow.",
    focus: { single: ["Patient"], types: ["Patient"], required: ["Patient"], checks: { Patient: [patientKey] } },
  },
  {
    id: "add-allergy",
    area: "patient-profile",
    scope: "patient-profile.write",
    path: STANDARD_PATH,
    event: "add-allergy",
    aliases: [],
    category: "consequence",
    summary:
      "Stores new allergies for the patient each one names; answers with them as stored (server id, meta.versionId 1).",
    focus: { types: ["AllergyIntolerance"], required: ["AllergyIntolerance"], checks: { AllergyIntolerance: allergy } },
  },
  {
    id: "update-allergy",
    area: "patient-profile",
    scope: "patient-profile.write",
    path: STANDARD_PATH,
    event: "update-allergy",
    aliases: [],
    category: "consequence",
    summary: "Replaces stored allergies, by id; answers with them as stored (meta.versionId + 1).",
    focus: {
      types: ["AllergyIntolerance"],
      required: ["AllergyIntolerance"],
      checks: { AllergyIntolerance: [hasId("AllergyIntolerance"), ...allergy] },
    },
  },
  {
    id: "remove-allergy",
    area: "patient-profile",
    scope: "patient-profile.write",
    path: ALTERNATE_PATH,
    event: "remove-allergy",
    aliases: [],
    category: "consequence",
    summary:
      "Marks stored allergies entered-in-error (verificationStatus entered-in-error, no clinicalStatus); answers with them as now stored.",
    focus: {
      types: ["AllergyIntolerance"],
      required: ["AllergyIntolerance"],
      checks: { AllergyIntolerance: [hasId("AllergyIntolerance")] },
    },
  },
  {
    id: "add-history",
    area: "patient-profile",
    scope: "patient-profile.write",
    path: STANDARD_PATH,
    event: "add-history",
    aliases: [],
    category: "consequence",
    summary: "Stores new Conditions or Procedures for the patient each one names; answers with them as stored.",
    focus: {
      types: ["Condition", "Procedure"],
      checks: { Condition: history("Condition"), Procedure: history("Procedure") },
    },
  },
  {
    id: "update-history",
    area: "patient-profile",
    scope: "patient-profile.write",
    path: STANDARD_PATH,
    event: "update-history",
    aliases: [],
    category: "consequence",
    summary: "Replaces stored Conditions or Procedures, by id; answers with them as stored.",
    focus: {
      types: ["Condition", "Procedure"],
      checks: {
        Condition: [hasId("Condition"), ...history("Condition")],
        Procedure: [hasId("Procedure"), ...history("Procedure")],
      },
    },
  },
  {
    id: "remove-history",
    area: "patient-profile",
    scope: "patient-profile.write",
    path: STANDARD_PATH,
    event: "remove-history",
    aliases: [],
    category: "consequence",
    summary: "Marks stored Conditions or Procedures entered-in-error; answers with them as now stored.",
    focus: {
      types: ["Condition", "Procedure"],
      checks: { Condition: [hasId("Condition")], Procedure: [hasId("Procedure")] },
    },
  },
  {
    id: "add-measurement",
    area: "patient-profile",
    scope: "patient-profile.write",
    path: STANDARD_PATH,
    event: "add-measurement",
    aliases: [],
    category: "consequence",
    summary:
      "Stores new Observations (weight, height, vital signs; LOINC codes, UCUM units) for the patient each one names; answers with them as stored.",
    focus: { types: ["Observation"], required: ["Observation"], checks: { Observation: measurement } },
  },
  {
    id: "update-measurement",
    area: "patient-profile",
    scope: "patient-profile.write",
    path: STANDARD_PATH,
    event: "update-measurement",
    aliases: [],
    category: "consequence",
    summary: "Replaces stored Observations, by id; answers with them as stored.",
    focus: {
      types: ["Observation"],
      required: ["Observation"],
      checks: { Observation: [hasId("Observation"), ...measurement] },
    },
  },
  {
    id: "remove-measurement",
    area: "patient-profile",
    scope: "patient-profile.write",
    path: STANDARD_PATH,
    event: "remove-measurement",
    aliases: [],
    category: "consequence",
    summary: "Marks stored Observations entered-in-error; answers with them as now stored.",
    focus: { types: ["Observation"], required: ["Observation"], checks: { Observation: [hasId("Observation")] } },
  },
  {
    id: "subscribe-order-notifications",
    area: "drug-orders",
    scope: "drug-orders",
    path: STANDARD_PATH,
    event: "subscribe-order-notifications",
    aliases: [],
    category: "consequence",
    summary:
      "Registers a pharmacy (its Organization's identifier is the licence) for order-fulfillment-request pushes to the Subscription's rest-hook endpoint; answers with the active Subscription.",
    focus: {
      single: ["Subscription", "Organization"],
      types: ["Subscription", "Organization"],
      required: ["Subscription"],
      checks: {
        Subscription: [
          need(
            "channel.type = 'rest-hook'",
            "channel.type",
            "Subscription.channel.type must be rest-hook: the sandbox POSTs fulfillment requests to channel.endpoint.",
            "value",
          ),
          need(
            "channel.endpoint.exists()",
            "channel.endpoint",
            "Subscription.channel.endpoint is required: the http(s) URL that receives order-fulfillment-request messages.",
          ),
          need(
            "channel.endpoint.empty() or channel.endpoint.matches('^https?://.+')",
            "channel.endpoint",
            "Subscription.channel.endpoint must be an http:// or https:// URL; other schemes are refused.",
            "value",
          ),
        ],
        Organization: [
          need(
            "identifier.where(value.exists()).exists()",
            "identifier",
            "The pharmacy Organization needs an identifier holding its licence number.",
          ),
        ],
      },
    },
  },
  {
    id: "confirm-drugs-availability",
    area: "drug-orders",
    scope: "drug-orders",
    path: STANDARD_PATH,
    event: "confirm-drugs-availability",
    aliases: [],
    category: "consequence",
    summary:
      "Answers a fulfillment request: availability in Task.businessStatus, delivery options in Task.output; answers with the Task in its new state.",
    focus: {
      single: ["Task"],
      types: ["Task"],
      required: ["Task"],
      checks: {
        Task: [
          hasId("Task"),
          need(
            "status in ('accepted' | 'rejected')",
            "status",
            "The confirmation Task.status must be accepted (something is available) or rejected (nothing is).",
            "value",
          ),
          need(
            "businessStatus.coding.where(code in ('available' | 'partial' | 'unavailable')).exists()",
            "businessStatus",
            "Task.businessStatus must be coded available, partial or unavailable.",
            "value",
          ),
        ],
      },
    },
  },
  {
    id: "receive-allocation",
    area: "drug-orders",
    scope: "drug-orders",
    path: STANDARD_PATH,
    event: "receive-allocation",
    aliases: [],
    category: "currency",
    summary:
      "Fetches an allocated fulfillment Task; answers with the Task, the order's requests and the identified patient.",
    focus: { single: ["Task"], types: ["Task"], required: ["Task"], checks: { Task: [hasId("Task")] } },
  },
  {
    id: "send-dispense-summary",
    area: "drug-orders",
    scope: "drug-orders",
    path: STANDARD_PATH,
    event: "send-dispense-summary",
    aliases: [],
    category: "consequence",
    summary:
      "Reports what was handed over (MedicationDispenses, or a device order's completed Task); answers with what was recorded and ends the order.",
    focus: {
      single: ["Task"],
      types: ["MedicationDispense", "Task"],
      checks: {
        MedicationDispense: [
          need(
            "authorizingPrescription.exists()",
            "authorizingPrescription",
            "MedicationDispense.authorizingPrescription is required: reference the allocated MedicationRequest.",
          ),
          need(
            "whenHandedOver.exists()",
            "whenHandedOver",
            "MedicationDispense.whenHandedOver is required: when the medication was handed to the patient.",
          ),
        ],
        Task: [
          hasId("Task"),
          need(
            "status = 'completed'",
            "status",
            "A device order's dispense summary is its fulfillment Task with status completed.",
            "value",
          ),
        ],
      },
    },
  },
  {
    id: "get-pending-tasks",
    area: "health-programs",
    scope: "health-programs",
    path: STANDARD_PATH,
    event: "get-pending-tasks",
    aliases: [],
    category: "currency",
    summary:
      "Lists a patient's pending health-program Tasks (not completed, cancelled, failed, rejected or entered-in-error), most urgent first.",
    focus: { single: ["Patient"], types: ["Patient"], required: ["Patient"], checks: { Patient: [patientKey] } },
  },
  {
    id: "add-task",
    area: "health-programs",
    scope: "health-programs",
    path: STANDARD_PATH,
    event: "add-task",
    aliases: [],
    category: "consequence",
    summary: "Stores new health-program Tasks (draft, requested or ready); answers with them as stored.",
    focus: { types: ["Task"], required: ["Task"], checks: { Task: task } },
  },
  {
    id: "update-task",
    area: "health-programs",
    scope: "health-programs",
    path: STANDARD_PATH,
    event: "update-task",
    aliases: [],
    category: "consequence",
    summary:
      "Moves stored Tasks along the R4 Task state machine, or changes them keeping their status; answers with them as stored.",
    focus: {
      types: ["Task"],
      required: ["Task"],
      checks: {
        Task: [
          hasId("Task"),
          need("status.exists()", "status", "Task.status is required (the task's new or unchanged status)."),
        ],
      },
    },
  },
  {
    id: "cancel-task",
    area: "health-programs",
    scope: "health-programs",
    path: STANDARD_PATH,
    event: "cancel-task",
    aliases: [],
    category: "consequence",
    summary: "Cancels stored Tasks; answers with them as stored.",
    focus: {
      types: ["Task"],
      required: ["Task"],
      checks: {
        Task: [
          hasId("Task"),
          need(
            "status = 'cancelled'",
            "status",
            "cancel-task needs Task.status cancelled (and a statusReason saying why).",
            "value",
          ),
        ],
      },
    },
  },
];
