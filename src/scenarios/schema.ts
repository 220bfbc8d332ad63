import { z } from "zod";
import { ISSUE_CODES } from "../fhir/outcome.js";
import { orderSpecSchema } from "../orders/order-spec.js";
import { headerNameProblem, headerValueProblem } from "../text/http-field.js";
import { durationSchema } from "./duration.js";

/**
 * The scenario file format, as one schema: it validates files, types the
 * loader, and is emitted as the JSON Schema editors use
 * (`uae-fhir-sandbox schema > scenarios/scenario.schema.json`).
 */

const oneOrMany = <T extends z.ZodType>(item: T) => z.union([item, z.array(item).min(1)]);

const delaySchema = z
  .union([durationSchema, z.object({ min: durationSchema, max: durationSchema }).strict()])
  .describe("wait this long before answering: a duration, or {min, max} for a random one in between");

/** A response's asynchronous leg (`$process-message?async=true`): the answer POSTed later, not the 202. */
const asyncLegSchema = z
  .object({
    delay: delaySchema
      .optional()
      .describe(
        "wait this long after the 202 before the response message is sent (at most 5m): a duration, or {min, max} for a random one in between",
      ),
    drop: z
      .literal(true)
      .optional()
      .describe("accept the message (202) but never send its response message: a lost answer"),
  })
  .strict()
  .describe(
    "with $process-message?async=true: how the response message is sent later (its delay, or never); ignored for a synchronous call",
  );

const headerConditionSchema = z.union([
  z.string().describe("the header's exact value"),
  z
    .object({
      matches: z
        .string()
        .describe(
          "a regular expression the value must match (JavaScript syntax, not anchored; no backreferences or lookaround)",
        ),
    })
    .strict(),
  z.object({ absent: z.literal(true) }).strict(),
]);

export const whenSchema = z
  .object({
    operation: oneOrMany(z.string().min(1))
      .optional()
      .describe("operation id(s), e.g. add-allergy (see GET /__admin/operations)"),
    // A regex, not startsWith: zod emits startsWith as `"format": "starts_with"`, no JSON Schema format.
    path: oneOrMany(z.string().regex(/^\//, "a path starting with /"))
      .optional()
      .describe("message path(s) without the base path"),
    headers: z
      .record(z.string(), headerConditionSchema)
      .optional()
      .describe("request headers (names case-insensitive)"),
    patient: oneOrMany(z.string().min(1))
      .optional()
      .describe("patient key(s): system|value of an identifier, or an id, of a patient the message is about"),
    fhirpath: oneOrMany(z.string().min(1))
      .optional()
      .describe("FHIRPath expression(s) over the request Bundle that must all be true"),
    invalid: z
      .boolean()
      .optional()
      .describe(
        "true: match only messages the sandbox would refuse as invalid (R4 validation, the operation's checks), to script the exchange's own rejection; rules without it never see invalid messages",
      ),
  })
  .strict()
  .describe("every condition given must hold; none given matches every message");

const issueCodes = ISSUE_CODES;

const resourceSchema = z
  .object({ resourceType: z.string().min(1) })
  .catchall(z.unknown())
  .describe("a FHIR resource; string values may hold {{ templates }}");

export const outcomeSchema = z
  .object({
    code: z
      .enum(issueCodes)
      .optional()
      .describe("FHIR issue type; default business-rule (transient for transient errors)"),
    severity: z.enum(["fatal", "error", "warning", "information"]).optional(),
    diagnostics: z.string().min(1).describe("what is wrong and how to fix it; may hold {{ templates }}"),
    expression: oneOrMany(z.string()).optional().describe("FHIRPath(s) into the request Bundle"),
    response: z
      .enum(["fatal-error", "transient-error", "none"])
      .optional()
      .describe(
        "fatal-error or transient-error: a response message with this OperationOutcome; none: a bare OperationOutcome (not processed). Default: transient-error for 5xx and 429, else fatal-error",
      ),
  })
  .strict();

export const faults = ["connection-reset", "empty-body", "malformed-json", "timeout"] as const;

const ANSWERS = ["outcome", "resources", "body", "fault", "builtIn"] as const;

export const responseSchema = z
  .object({
    description: z.string().optional(),
    status: z
      .number()
      .int()
      .min(200, "an HTTP status from 200 to 599")
      .max(599, "an HTTP status from 200 to 599")
      .optional()
      .describe("HTTP status"),
    headers: z.record(z.string(), z.string()).optional().describe("extra response headers"),
    delay: delaySchema.optional(),
    dribble: z
      .object({
        chunks: z
          .number()
          .int()
          .min(2, "at least 2 chunks")
          .max(1000, "at most 1000 chunks")
          .describe("how many pieces"),
        over: durationSchema.describe("the time from the first piece to the last (at most 5m)"),
      })
      .strict()
      .optional()
      .describe("write the body in this many pieces spread over this time, after any delay"),
    outcome: outcomeSchema.optional().describe("answer with an OperationOutcome, in a response message or bare"),
    resources: z
      .array(resourceSchema)
      .optional()
      .describe("answer with an ok response message (correlated to the request) carrying these resources"),
    body: z.unknown().optional().describe("answer with exactly this JSON body (templated)"),
    fault: z
      .enum(faults)
      .optional()
      .describe("connection-reset, empty-body, malformed-json, or timeout (no answer until the client gives up)"),
    builtIn: z.literal(true).optional().describe("let the built-in behaviour answer; the rule adds delay and headers"),
    async: asyncLegSchema.optional(),
  })
  .strict()
  .superRefine((r, ctx) => {
    const given = ANSWERS.filter((k) => r[k] !== undefined);
    if (given.length !== 1) {
      ctx.addIssue({
        code: "custom",
        message:
          given.length === 0
            ? `a response needs one of ${ANSWERS.join(", ")}`
            : `a response takes only one of ${ANSWERS.join(", ")}; found ${given.join(" and ")}`,
      });
    }
  });

export const ruleSchema = z
  .object({
    name: z.string().min(1).optional().describe("shown in GET /__admin/scenarios and in the journal"),
    description: z.string().optional(),
    when: whenSchema.optional(),
    times: z
      .number()
      .int()
      .min(1)
      .optional()
      .describe("answer this many times, then let later rules or the built-in behaviour answer"),
    respond: responseSchema.optional().describe("the response"),
    sequence: z.array(responseSchema).min(1).optional().describe("responses returned in turn, one per matching call"),
    afterSequence: z
      .enum(["repeat-last", "fall-through"])
      .optional()
      .describe("when the sequence is used up: repeat its last response (default), or fall through"),
    probability: z
      .number()
      .gt(0, "a probability above 0, at most 1")
      .lte(1, "a probability above 0, at most 1")
      .optional()
      .describe(
        "answer only this fraction of the calls the rule matches (0 < p ≤ 1), drawn from --seed so that the same calls give the same outcome; the others go on to later rules",
      ),
    scenario: z
      .string()
      .min(1)
      .optional()
      .describe(
        "a named state machine this rule takes part in: rules naming the same scenario share its state (one per state key)",
      ),
    requiredState: z
      .string()
      .min(1)
      .optional()
      .describe(
        `match only when the scenario is in this state for the message's key (each key starts in ${JSON.stringify("Started")})`,
      ),
    newState: z
      .string()
      .min(1)
      .optional()
      .describe("when the rule answers, the scenario moves to this state for the message's key"),
    stateKey: z
      .union([
        z.enum(["patient", "workspace"]),
        z
          .object({
            fhirpath: z.string().min(1).describe("FHIRPath over the request Bundle; its first value is the key"),
          })
          .strict(),
      ])
      .optional()
      .describe(
        "what the scenario's state is kept per: patient (default: the first patient key of the message), workspace (one state), or {fhirpath} (e.g. the order's identifier)",
      ),
    allowAnyContentType: z
      .literal(true)
      .optional()
      .describe(
        "let the responses' Content-Type header be any type; without it only JSON (application/json, application/fhir+json, application/*+json) or text/plain, as a browser runs no script of those",
      ),
  })
  .strict()
  .superRefine((r, ctx) => {
    if ((r.respond === undefined) === (r.sequence === undefined)) {
      ctx.addIssue({ code: "custom", message: "a rule needs exactly one of respond or sequence" });
    }
    if (r.scenario === undefined) {
      // Without a scenario there is no state to require, move or key: a typo'd or forgotten `scenario` would pass in silence.
      for (const key of ["requiredState", "newState", "stateKey"] as const) {
        if (r[key] !== undefined) {
          ctx.addIssue({
            code: "custom",
            path: [key],
            message: `${key} needs scenario: the name of the state machine it belongs to`,
          });
        }
      }
    }
  });

const patientFixtureSchema = z
  .object({
    patient: resourceSchema.describe(
      "the Patient: identifiers (its keys), name, gender, birthDate…; missing demographics are generated",
    ),
    generated: z.boolean().optional().describe("also give it a generated clinical profile (default false)"),
    allergies: z.array(resourceSchema).optional(),
    history: z.array(resourceSchema).optional().describe("Condition and Procedure resources"),
    measurements: z.array(resourceSchema).optional().describe("Observation resources"),
    tasks: z.array(resourceSchema).optional(),
  })
  .strict();

const pharmacyFixtureSchema = z
  .object({
    licence: z.string().min(1).describe("the pharmacy licence: its Organization identifier value"),
    name: z.string().optional(),
    endpoint: z
      .string()
      .regex(/^https?:\/\/\S+$/, "an http:// or https:// URL")
      .optional()
      .describe("rest-hook endpoint that receives pushes"),
    headers: z
      .record(z.string(), z.string())
      .superRefine((headers, ctx) => {
        // A header no push could carry would fail every push to this pharmacy: refused here, at its line.
        for (const [name, value] of Object.entries(headers)) {
          const message = headerNameProblem(name) ?? headerValueProblem(name, value);
          if (message) ctx.addIssue({ code: "custom", path: [name], message });
        }
      })
      .optional()
      .describe("headers sent with every push"),
    clientCertificate: z
      .string()
      .regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/, "a certificate's name: letters, digits, . _ -")
      .optional()
      .describe(
        "the client certificate its HTTPS pushes present: a name of --push-client-certs (default: --push-client-cert)",
      ),
  })
  .strict();

const pushSchema = z
  .object({
    name: z.string().min(1).optional(),
    description: z.string().optional(),
    on: z
      .enum(["start", "subscribed"])
      .optional()
      .describe("start (default): when the sandbox starts or resets; subscribed: each time a pharmacy subscribes"),
    after: durationSchema.optional().describe("wait this long before the first push"),
    every: durationSchema.optional().describe("repeat at this interval, up to `times`"),
    times: z
      .number()
      .int()
      .min(1)
      .max(1000)
      .optional()
      .describe("how many orders per run — each start, each subscription (default 1)"),
    order: orderSpecSchema.optional().describe("the order; default a generated one to every subscribed pharmacy"),
  })
  .strict();

export const scenarioFileSchema = z
  .object({
    name: z.string().optional(),
    description: z.string().optional(),
    fixtures: z
      .object({
        patients: z.array(patientFixtureSchema).optional(),
        pharmacies: z.array(pharmacyFixtureSchema).optional(),
      })
      .strict()
      .optional()
      .describe("loaded into the sandbox on start and on POST /__admin/reset"),
    rules: z.array(ruleSchema).optional().describe("ordered: the first rule that matches answers"),
    push: z.array(pushSchema).optional().describe("scripted orders pushed to pharmacies"),
  })
  .strict();

export type ScenarioFile = z.infer<typeof scenarioFileSchema>;
export type RuleSpec = z.infer<typeof ruleSchema>;
export type ResponseSpec = z.infer<typeof responseSchema>;
export type OutcomeSpec = z.infer<typeof outcomeSchema>;
export type Fault = (typeof faults)[number];
export type PushSpec = z.infer<typeof pushSchema>;

/** The JSON Schema of scenario files, for editors (yaml-language-server) and CI. */
export function scenarioJsonSchema(): Record<string, unknown> {
  return {
    ...z.toJSONSchema(scenarioFileSchema, { target: "draft-2020-12", unrepresentable: "any" }),
    title: "uae-fhir-sandbox scenario file",
  };
}
