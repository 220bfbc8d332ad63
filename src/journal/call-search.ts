import { decodeEnvelope } from "../envelope/envelope.js";
import { readMessage } from "../envelope/message.js";
import { patientKeysOf } from "../matching/patient-keys.js";
import type { CallRecord } from "./call-record.js";
import { type ResponseCode, responseCode } from "./call-summary.js";

/** What a person looks for in the journal, besides the operation and direction (GET /__admin/calls). */
export interface CallSearch {
  /** HTTP status of the answer: `404`, or a class, `4xx`. */
  status?: string;
  /** MessageHeader.response.code of the answer. */
  code?: ResponseCode;
  /** A patient: a key (`system|value`), an identifier value alone, or a server id. */
  patient?: string;
  /** Text anywhere in the call: path, operation, message id, rule, error, target, request or response body. */
  text?: string;
}

const patientKeys = new WeakMap<CallRecord, string[]>();

/** The keys of the patients a call's request message is about; decoded once per call, only the keys kept. */
function keysOf(call: CallRecord): string[] {
  let keys = patientKeys.get(call);
  if (keys === undefined) {
    // Lenient: a bare Bundle recorded under --lenient-envelope is about patients too.
    const decoded = decodeEnvelope(call.request.body, true);
    const message = decoded.ok ? readMessage(decoded.bundle).message : undefined;
    keys = message ? patientKeysOf(message) : [];
    patientKeys.set(call, keys);
  }
  return keys;
}

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/**
 * Compiles a search into one predicate over recorded calls, or undefined when
 * it asks for nothing. Free text is case-insensitive and read from the bodies
 * as they were recorded.
 *
 * @example
 *   const where = callSearch({ status: "4xx", patient: "784-1990-1234567-6" });
 *   journal.page({ where, order: "desc", limit: 50 });
 */
export function callSearch(search: CallSearch): ((call: CallRecord) => boolean) | undefined {
  const tests: Array<(call: CallRecord) => boolean> = [];
  const { status, code, patient, text } = search;
  if (status !== undefined) {
    const klass = /^([1-5])xx$/i.exec(status)?.[1];
    tests.push((call) => {
      const got = call.response?.status;
      if (got === undefined) return false;
      return klass !== undefined ? Math.floor(got / 100) === Number(klass) : String(got) === status;
    });
  }
  if (code !== undefined) tests.push((call) => responseCode(call) === code);
  if (patient !== undefined) {
    tests.push((call) => keysOf(call).some((key) => key === patient || key.slice(key.indexOf("|") + 1) === patient));
  }
  if (text !== undefined && text !== "") {
    const pattern = new RegExp(escapeRegExp(text), "i");
    tests.push((call) =>
      [
        call.request.path,
        call.operation,
        call.messageId,
        call.rule,
        call.error,
        call.target,
        call.request.body,
        call.response?.body,
      ].some((field) => typeof field === "string" && pattern.test(field)),
    );
  }
  if (tests.length === 0) return undefined;
  return (call) => tests.every((t) => t(call));
}
