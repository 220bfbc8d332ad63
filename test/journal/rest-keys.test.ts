import { describe, expect, it } from "vitest";
import { keyOf, restKeysOf } from "../../src/journal/rest-keys.js";
import { example } from "../support/messages.js";

// The reference: the two patterns the index was first written with, read the obvious way. The hand-written reader
// must find the same fullUrls in the same order, whatever the body holds.
const FULL_URL = /fullUrl\\?"\s*:\s*\\?"([^"\\]*)/g;
const REST_TAIL = /\/([A-Z][A-Za-z]{1,63})\/([A-Za-z0-9\-.]{1,64})$/;

function reference(body: string): number[] {
  const keys: number[] = [];
  for (const match of body.matchAll(FULL_URL)) {
    const tail = REST_TAIL.exec(match[1] as string);
    if (tail) keys.push(referenceKey(tail[1] as string, tail[2] as string));
  }
  return keys;
}

/** FNV-1a of `type/id`, 30 bits, written out again. */
function referenceKey(type: string, id: string): number {
  let hash = 0x811c9dc5;
  for (const c of `${type}/${id}`) hash = Math.imul(hash ^ (c.codePointAt(0) as number), 0x01000193);
  return hash & 0x3fffffff;
}

const read = (body: string) => {
  const keys: number[] = [];
  restKeysOf(body, keys);
  return keys;
};

const BASE = "http://localhost:8080/uae-fhir/r4";

describe("the RESTful fullUrls a body names", () => {
  it("keys type/id as FNV-1a over the text, 30 bits", () => {
    expect(keyOf("Patient", "p.1")).toBe(referenceKey("Patient", "p.1"));
    expect(keyOf("OperationOutcome", "3f2-a")).toBe(referenceKey("OperationOutcome", "3f2-a"));
  });

  it.each([
    ["a Bundle", JSON.stringify({ entry: [{ fullUrl: `${BASE}/Patient/p.1` }, { fullUrl: "urn:uuid:1" }] })],
    ["a pretty Bundle", JSON.stringify({ entry: [{ fullUrl: `${BASE}/Patient/p.1` }] }, null, 2)],
    ["the envelope", JSON.stringify({ content: JSON.stringify({ entry: [{ fullUrl: `${BASE}/Condition/c-9` }] }) })],
    ["a _history URL", `{"fullUrl":"${BASE}/Patient/p/_history/2"}`],
    ["a lower-case type", `{"fullUrl":"${BASE}/patient/p"}`],
    ["a one-letter type", `{"fullUrl":"${BASE}/P/p"}`],
    [
      "an id of 64 and of 65",
      `{"fullUrl":"${BASE}/Patient/${"a".repeat(64)}"},{"fullUrl":"${BASE}/Patient/${"a".repeat(65)}"}`,
    ],
    ["a type of 64 and of 65", `{"fullUrl":"/A${"b".repeat(63)}/x"},{"fullUrl":"/A${"b".repeat(64)}/x"}`],
    ["no slash before the type", `{"fullUrl":"Patient/p"}`],
    ["an escape in the value", `{"fullUrl":"${BASE}/Patient/p\\u0041"}`],
    ["spaces around the colon", `{"fullUrl" \t:\n "${BASE}/Patient/p"}`],
    ["a non-breaking space and U+3000", `{"fullUrl"\u00a0:\u3000"${BASE}/Patient/p"}`],
    ["a value at the very end", `{"fullUrl":"${BASE}/Patient/p`],
    ["the member name at the very end", `{"x":"fullUrl`],
    ["fullUrl inside a text", `{"text":"see fullUrl\\": \\"${BASE}/Patient/q\\" here"}`],
    ["an empty id", `{"fullUrl":"${BASE}/Patient/"}`],
  ])("reads %s as the patterns do", (_, body) => {
    expect(read(body)).toEqual(reference(body));
  });

  it("reads the HL7 examples and their envelopes as the patterns do", () => {
    for (const file of ["message-request-link.json", "message-response-link.json", "patient-example.json"]) {
      const text = JSON.stringify(example(file));
      expect(read(text)).toEqual(reference(text));
      expect(read(JSON.stringify({ content: text }))).toEqual(reference(JSON.stringify({ content: text })));
    }
    expect(read(JSON.stringify(example("message-response-link.json"))).length).toBeGreaterThan(0);
  });

  it("reads 3,000 random bodies built of the tricky pieces as the patterns do", () => {
    const pieces = [
      "fullUrl",
      '"',
      '\\"',
      ":",
      " ",
      "\u00a0",
      "/",
      "Patient",
      "patient",
      "P",
      "p.1",
      "-",
      "x".repeat(70),
      "é",
      "\\",
      "{",
      "}",
      ",",
    ];
    let seed = 22;
    const random = () => {
      seed = (Math.imul(seed, 1_103_515_245) + 12_345) >>> 0;
      return seed / 2 ** 32;
    };
    for (let n = 0; n < 3_000; n++) {
      let body = "";
      const length = 1 + Math.floor(random() * 30);
      for (let i = 0; i < length; i++) body += pieces[Math.floor(random() * pieces.length)];
      expect(read(body), body).toEqual(reference(body));
    }
  });
});
