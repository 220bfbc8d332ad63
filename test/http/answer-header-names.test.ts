import { describe, expect, it } from "vitest";
import { newCallState } from "../../src/http/call-state.js";
import { fhirAnswer } from "../../src/http/fhir-response.js";

// An answer's headers as the journal records them and the fast path sends them must be what a web `Headers` holds
// once the recorder has set X-Sandbox-Call-Id and X-Sandbox-Rule (the Hono path's answer): names lower-cased, in
// name order, a name given twice joined with ", ", the call's own id replacing one a rule wrote. The expected
// record is made by `Headers` itself.

function expected(plain: Record<string, string>, callId: string, rule: string): Headers {
  const headers = new Headers();
  for (const [name, value] of Object.entries(plain)) headers.append(name, value);
  headers.set("X-Sandbox-Call-Id", callId);
  headers.set("X-Sandbox-Rule", rule);
  return headers;
}

describe("an answer's header record", () => {
  it.each([
    [
      "names an object has of its own (constructor, toString, hasOwnProperty)",
      { Constructor: "x", toString: "y", hasOwnProperty: "z" },
    ],
    ["a name given twice, in two cases, padded", { "X-Dup": "one", "x-dup": "  two  " }],
    [
      "a rule's own X-Sandbox-Call-Id and X-Sandbox-Rule",
      { "X-Sandbox-Call-Id": "spoofed", "x-sandbox-rule": "other" },
    ],
    ["names out of order", { "Z-Last": "1", "A-First": "2", "content-type": "application/json", "M-Middle": "3" }],
  ])("%s: as web Headers holds them", (_, headers) => {
    const call = newCallState("42", new Date(0), new Headers());
    call.rule = "the-rule";
    const plain = { "content-type": "application/fhir+json; charset=utf-8", ...headers };
    const built = fhirAnswer(call, "{}", plain);
    const web = expected(plain, "42", "the-rule");
    expect(built?.recorded).toEqual(Object.fromEntries(web));
    expect(Object.keys(built?.recorded ?? {})).toEqual([...web.keys()]);
  });
});
