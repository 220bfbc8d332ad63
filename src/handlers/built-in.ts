import type { HandlerTable } from "./handler.js";
import { viewPatientProfile } from "./patient-profile.js";
import { profileRecordHandlers } from "./profile-records.js";
import { statelessHandlers } from "./stateless.js";
import { taskHandlers } from "./tasks.js";

/** The sandbox's own behaviour per operation id, when no scenario rule answers. */
export const builtInHandlers: HandlerTable = {
  ...statelessHandlers,
  ...profileRecordHandlers,
  ...taskHandlers,
  "view-patient-profile": viewPatientProfile,
};
