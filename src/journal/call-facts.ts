import { readMessage } from "../envelope/message.js";
import type { RequestFacts } from "../matching/matcher.js";
import { patientKeysOf } from "../matching/patient-keys.js";
import type { CallRecord } from "./call-record.js";
import { requestBundle } from "./call-view.js";

/** A recorded call as the matching core sees it. */
export function factsOfCall(call: CallRecord): RequestFacts {
  let keys: string[] | undefined;
  return {
    operation: call.operation,
    direction: call.direction,
    path: call.request.path,
    header: (name) => call.request.headers[name.toLowerCase()],
    bundle: () => requestBundle(call),
    patientKeys: () => {
      if (keys === undefined) {
        const bundle = requestBundle(call);
        const message = bundle ? readMessage(bundle).message : undefined;
        keys = message ? patientKeysOf(message) : [];
      }
      return keys;
    },
  };
}
