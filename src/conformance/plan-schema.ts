import { z } from "zod";
import { durationSchema } from "../scenarios/duration.js";
import { responseSchema } from "../scenarios/schema.js";

/**
 * The conformance plan format (conformance/*.yaml), as one schema: it validates the shipped plans and a host's own
 * (--conformance DIR), types the runner, and is emitted as conformance/conformance.schema.json for editors.
 *
 * A plan is a list of tests for one role; a test is a list of steps run in order; a step is exactly one kind:
 * an action of the sandbox (answer the next message, push an order) or an expectation of the system under test
 * (a retry with the same id, an acknowledgement within a limit).
 */

const operationsSchema = z
  .union([z.literal("declared"), z.array(z.string().min(1)).min(1)])
  .describe('"declared": the operations the session was started with (--operations); or a list of operation ids');

const within = durationSchema.describe("how long to wait for it (scaled by the session's time scale)");
const windowFor = durationSchema.describe(
  "how long to watch for it not to happen (scaled by the session's time scale)",
);

/** Sender role: the sandbox answers the system's next message as scripted. */
const answerNext = z
  .object({
    operation: z
      .union([z.string().min(1), z.array(z.string().min(1)).min(1)])
      .optional()
      .describe("only a message of this operation (or these); default the next message of any operation"),
    respond: responseSchema.describe("the answer, written as a scenario rule's respond"),
    within: within.optional(),
  })
  .strict()
  .describe("answer the system's next message so (a one-time rule), and wait for that message");

const expectOperations = z
  .object({ operations: operationsSchema, within: within.optional() })
  .strict()
  .describe("each of these operations is sent valid and accepted at least once");

const expectRetry = z
  .object({
    sameId: z.boolean().default(true).describe("the retry carries the MessageHeader id of the answered message"),
    sameContent: z.boolean().default(true).describe("and the same content"),
    newToken: z.boolean().optional().describe("and another bearer token than the answered message"),
    within: within.optional(),
  })
  .strict()
  .describe("the message answered by the last answerNext is sent again");

const expectRetryAfterHonoured = z
  .object({})
  .strict()
  .describe("the retry found by the last expectRetry came no sooner than the Retry-After of the answer it retried");

const expectNoRetry = z
  .object({ for: windowFor })
  .strict()
  .describe("the message answered by the last answerNext is not sent again (same MessageHeader id) in this window");

const expectNewId = z
  .object({ within: within.optional() })
  .strict()
  .describe("the system's next message of the same operation carries another MessageHeader id");

/** Receiver role: the sandbox drives the order flow against the pharmacy. */
const expectSubscription = z
  .object({ within: within.optional() })
  .strict()
  .describe(
    "the pharmacy subscribes (subscribe-order-notifications); passes at once when --pharmacy-url registered it",
  );

const pushOrder = z
  .object({
    deadline: durationSchema.optional().describe("the order's confirmation deadline (scaled)"),
    items: z
      .array(z.record(z.string(), z.unknown()))
      .optional()
      .describe("the order's items, as POST /__admin/orders takes them"),
  })
  .strict()
  .describe("create an order for the pharmacy: its order-fulfillment-request is pushed");

const allocate = z
  .object({})
  .strict()
  .describe("allocate the current order to the pharmacy (if not already): the order-allocation is pushed");
const pushAgain = z
  .object({})
  .strict()
  .describe("deliver the current order's last push again: the same Bundle and MessageHeader id");
const pushUnknownOrder = z
  .object({ event: z.enum(["order-fulfillment-request", "order-allocation"]).default("order-allocation") })
  .strict()
  .describe("push a message about an order the pharmacy was never sent");

const expectAck = z
  .object({ within: within.optional() })
  .strict()
  .describe("the last push's first attempt is answered 2xx within the limit");

const expectRefused = z
  .object({ within: within.optional() })
  .strict()
  .describe("the last push is refused: a 4xx, or a fatal-error response message");

const aboutSchema = z
  .enum(["task", "order", "unknown-order"])
  .describe(
    "task: the pushed Task of the current order; order: any of its resources; unknown-order: the order of the last pushUnknownOrder",
  );

const expectMessage = z
  .object({
    operation: z.string().min(1),
    about: aboutSchema.default("task"),
    beforeDeadline: z.boolean().optional().describe("sent before the current order's confirmation deadline"),
    within: within.optional(),
  })
  .strict()
  .describe("the system sends a message of this operation about the current order, and the sandbox accepts it");

const expectNoMessage = z
  .object({
    operation: z.union([z.string().min(1), z.array(z.string().min(1)).min(1)]),
    about: aboutSchema.default("task"),
    for: windowFor,
    after: z
      .enum(["step", "first"])
      .default("step")
      .describe("step: none from this step on; first: no second one besides the one an earlier step found"),
  })
  .strict()
  .describe("the system sends no (further) message of this operation about the current order in this window");

/** Each kind, by the key that names it in a step. */
export const STEP_KINDS = {
  answerNext,
  expectOperations,
  expectRetry,
  expectRetryAfterHonoured,
  expectNoRetry,
  expectNewId,
  expectSubscription,
  pushOrder,
  allocate,
  pushAgain,
  pushUnknownOrder,
  expectAck,
  expectRefused,
  expectMessage,
  expectNoMessage,
} as const;

export type StepKindName = keyof typeof STEP_KINDS;
export type StepSpecOf<K extends StepKindName> = z.infer<(typeof STEP_KINDS)[K]>;

/** The kinds that are actions of the sandbox (TestScript operations); the others are expectations (asserts). */
export const ACTION_KINDS: ReadonlySet<StepKindName> = new Set([
  "answerNext",
  "pushOrder",
  "allocate",
  "pushAgain",
  "pushUnknownOrder",
]);

const stepCommon = {
  id: z
    .string()
    .regex(/^[a-z0-9][a-z0-9-]*$/)
    .describe("unique in its test: names it in reports"),
  title: z.string().min(1).describe("what the step checks or does, for people"),
  required: z.boolean().optional().describe("false: a failure is a warning and does not fail the session"),
  fix: z.string().optional().describe("what to change in the system when the step fails"),
};

export const stepSchema = z.union(
  (Object.entries(STEP_KINDS) as Array<[StepKindName, z.ZodType]>).map(([name, spec]) =>
    z.object({ ...stepCommon, [name]: spec }).strict(),
  ) as unknown as [z.ZodType, z.ZodType, ...z.ZodType[]],
);

export const ruleRefSchema = z
  .object({
    source: z
      .enum(["fhir-r4", "sandbox", "host"])
      .describe(
        "fhir-r4: the R4 specification; sandbox: the sandbox's documented behaviour; host: a rule of whoever runs it",
      ),
    ref: z.string().min(1).describe("where it is written: a URL"),
    text: z.string().min(1).describe("the rule, quoted or in short"),
  })
  .strict();

export const testSchema = z
  .object({
    id: z.string().regex(/^[a-z0-9][a-z0-9-]*$/),
    title: z.string().min(1),
    description: z.string().optional(),
    rule: z.string().min(1).describe("the id of a rule in the plan's rules"),
    required: z.boolean().default(true).describe("false: its failures are warnings"),
    steps: z.array(stepSchema).min(1),
  })
  .strict();

export const planSchema = z
  .object({
    id: z
      .string()
      .regex(/^[a-z0-9][a-z0-9-]*$/)
      .describe("unique among the plans: --plan names it"),
    title: z.string().min(1),
    version: z.string().min(1),
    role: z.enum(["sender", "receiver"]),
    description: z.string().optional(),
    rules: z.record(z.string(), ruleRefSchema).describe("the rules the tests check, by id"),
    tests: z.array(testSchema).min(1),
  })
  .strict();

export type Plan = z.infer<typeof planSchema>;
export type PlanTest = z.infer<typeof testSchema>;
export type RuleRef = z.infer<typeof ruleRefSchema>;
/** A step as written: its common keys and exactly one kind key. */
export type PlanStep = { id: string; title: string; required?: boolean; fix?: string } & Partial<{
  [K in StepKindName]: StepSpecOf<K>;
}>;

/** The kind a step is: the one key of STEP_KINDS it has. */
export function stepKind(step: PlanStep): StepKindName {
  for (const name of Object.keys(STEP_KINDS) as StepKindName[]) if (name in step) return name;
  throw new Error(`step ${step.id} has no kind`);
}
