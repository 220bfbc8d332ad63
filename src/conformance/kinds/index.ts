import type { StepKindName } from "../plan-schema.js";
import type { StepRun } from "../step-context.js";
import { receiverKinds } from "./receiver.js";
import { senderKinds } from "./sender.js";

/**
 * Each step kind's implementation, by its name. A kind missing here fails its step ("not implemented"): a plan
 * never passes a step nobody checked.
 */
export const STEP_RUNS: Partial<Record<StepKindName, StepRun>> = { ...senderKinds, ...receiverKinds };
