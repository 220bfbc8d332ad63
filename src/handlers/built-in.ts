import type { HandlerTable } from "./handler.js";
import { viewPatientProfile } from "./patient-profile.js";
import { profileRecordHandlers } from "./profile-records.js";
import { taskHandlers } from "./tasks.js";

/** The sandbox's own patient-profile and task behaviour per operation id (drug orders: drugOrderHandlers). */
export const builtInHandlers: HandlerTable = {
  ...profileRecordHandlers,
  ...taskHandlers,
  "view-patient-profile": viewPatientProfile,
};
