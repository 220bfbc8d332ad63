import type { StepKindName } from "../plan-schema.js";
import type { StepRun } from "../step-context.js";

/** The receiver role's step kinds (the pharmacy under test). */
export const receiverKinds: Partial<Record<StepKindName, StepRun>> = {};
