import { describe, expect, it } from "vitest";
import { newCallState } from "../../src/http/call-state.js";
import { RawHeaders } from "../../src/http/raw-headers.js";
import { callDraft, unsavedCall } from "../../src/http/record-calls.js";

// A message whose changes could not be saved is answered 503 instead of its built answer, and recorded again: nothing
// the built answer left in the call's state may go into that record (the journal measures an answer by the bytes the
// edge wrote, so the built answer's bytes would give the 503's record the built answer's size).

describe("a call whose message could not be saved", () => {
  it("is recorded without the built answer's texts, bytes, rule or response code", () => {
    const call = newCallState("9", new Date(0), new RawHeaders(["Host", "sandbox.test"]));
    call.rule = "a-rule";
    call.responseCode = "ok";
    call.responseBytes = Buffer.from('{"resourceType":"Bundle"}');
    call.kept = {};
    expect(unsavedCall(call)).toBe(true);
    call.responseText = '{"resourceType":"OperationOutcome"}';
    const draft = callDraft(call, 1, { method: "POST", url: "http://sandbox.test/p", path: "/p" }, () => ({
      status: 503,
      headers: {},
    }));
    expect(draft.kept).toBeUndefined();
    expect(draft.rule).toBeNull();
    expect(draft.responseCode).toBeNull();
    expect(draft.response).toEqual({ status: 503, headers: {}, body: '{"resourceType":"OperationOutcome"}' });
  });
});
