import type { AllergyIntolerance, Bundle, MessageHeader, OperationOutcome, Patient, Resource } from "fhir/r4.js";
import fhirpath from "fhirpath";
import r4 from "fhirpath/fhir-context/r4";
import type { Hono } from "hono";
import { describe, expect, it } from "vitest";
import { createApp, type SandboxApp } from "../../src/app.js";
import type { SandboxOptions } from "../../src/config/options.js";
import { compilePath } from "../../src/fhir/fhirpath.js";
import type { IssueCode } from "../../src/fhir/outcome.js";
import {
  ALTERNATE,
  envelope,
  example,
  focusOf,
  messageBundle,
  post,
  responseHeader,
  STANDARD,
} from "../support/messages.js";

/**
 * The bad-input table (CONTRACT §5): every malformed, misrouted or oversized
 * request is answered with a bare OperationOutcome that says what is wrong
 * and how to fix it, is journalled, changes no state and stops nothing.
 */

/** Every bad message carries this MessageHeader.id; a later valid message with it must not be a replay. */
const BAD_ID = "bad-message-1";
const HEADER = "Bundle.entry[0].resource";

/** A small valid add-allergy focus (fits under a 1000-byte --max-body). */
const cashew = (): AllergyIntolerance => ({
  resourceType: "AllergyIntolerance",
  // ait-1: an allergy that is not entered-in-error has a clinical status.
  clinicalStatus: {
    coding: [{ system: "http://terminology.hl7.org/CodeSystem/allergyintolerance-clinical", code: "active" }],
  },
  code: { text: "cashew nut" },
  patient: { reference: "Patient/example" },
});

const allergyMessage = (options: Parameters<typeof messageBundle>[2] = {}): Bundle =>
  messageBundle("add-allergy", [example<AllergyIntolerance>("allergyintolerance-example.json")], {
    id: BAD_ID,
    ...options,
  });

/** The add-allergy message with its MessageHeader changed by `edit`. */
function withHeader(edit: (header: MessageHeader & Record<string, unknown>) => void): Bundle {
  const bundle = allergyMessage();
  edit(bundle.entry?.[0]?.resource as MessageHeader & Record<string, unknown>);
  return bundle;
}

const deepArray = (levels: number): string => `${"[".repeat(levels)}${"]".repeat(levels)}`;
const deepObject = (levels: number): string => `${'{"a":'.repeat(levels)}1${"}".repeat(levels)}`;

interface ExpectedIssue {
  code: IssueCode;
  /** Each must occur in diagnostics: what is wrong and how to fix it. */
  says: RegExp[];
  /** The FHIRPath the issue points at; `true`: some FHIRPath, whichever. */
  at?: string | true;
}

interface BadInput {
  name: string;
  /** Raw body text; a Bundle is sent inside the documented envelope. */
  body?: string | Bundle;
  method?: string;
  path?: string;
  /** null: no Content-Type header. */
  contentType?: string | null;
  options?: Partial<SandboxOptions>;
  status: number;
  issues: ExpectedIssue[];
  /** What the journal records as the call's operation. */
  operation?: string | null;
  /** Expected Allow header (405). */
  allow?: string;
}

const cases: BadInput[] = [
  // --- the body is not the envelope
  {
    name: "body not JSON",
    body: '{"content": ',
    status: 400,
    issues: [{ code: "structure", says: [/not valid JSON/, /"content"/] }],
  },
  ...(
    [
      ["an array", "[]"],
      ["a number", "42"],
      ["a string", '"hello"'],
      ["null", "null"],
    ] as const
  ).map(
    ([kind, body]): BadInput => ({
      name: `body JSON but ${kind}`,
      body,
      status: 400,
      issues: [{ code: "structure", says: [new RegExp(`is ${kind}, not a JSON object`), /\{"content": /] }],
    }),
  ),
  {
    name: "content missing",
    body: "{}",
    status: 400,
    issues: [{ code: "required", says: [/"content" is missing/, /\{"content": /] }],
  },
  {
    name: "content misspelt",
    body: JSON.stringify({ contents: JSON.stringify(allergyMessage()) }),
    status: 400,
    issues: [
      { code: "required", says: [/"content" is missing, but the body has "contents"/, /did you mean "content"/] },
    ],
  },
  {
    name: "content capitalised (JSON keys are case-sensitive)",
    body: JSON.stringify({ Content: JSON.stringify(allergyMessage()) }),
    status: 400,
    issues: [{ code: "required", says: [/the body has "Content"/, /case-sensitive/, /lower case, "content"/] }],
  },
  {
    name: "content a number",
    body: JSON.stringify({ content: 42 }),
    status: 400,
    issues: [{ code: "structure", says: [/"content" must be a string, found a number/] }],
  },
  {
    name: "content an object (the Bundle embedded, not serialized)",
    body: JSON.stringify({ content: allergyMessage() }),
    status: 400,
    issues: [{ code: "structure", says: [/must be a string, found an object/, /JSON\.stringify/] }],
  },
  {
    name: "content an empty string",
    body: JSON.stringify({ content: "" }),
    status: 400,
    issues: [{ code: "required", says: [/"content" is empty/, /Bundle/] }],
  },
  {
    name: "content not valid JSON",
    body: JSON.stringify({ content: '{"resourceType": "Bundle",' }),
    status: 400,
    issues: [{ code: "structure", says: [/"content" is not valid JSON/, /serialized FHIR Bundle/] }],
  },
  {
    name: "content JSON but an array",
    body: JSON.stringify({ content: "[1, 2]" }),
    status: 400,
    issues: [{ code: "structure", says: [/holds an array, not a FHIR resource/, /"message"/] }],
  },
  {
    name: "content JSON but a number",
    body: JSON.stringify({ content: "7" }),
    status: 400,
    issues: [{ code: "structure", says: [/holds a number/] }],
  },
  {
    name: "bare Bundle without --lenient-envelope",
    body: JSON.stringify(allergyMessage()),
    status: 400,
    issues: [{ code: "structure", says: [/bare Bundle/, /JSON\.stringify/, /--lenient-envelope/] }],
  },
  {
    name: "Parameters without --lenient-envelope",
    body: JSON.stringify({
      resourceType: "Parameters",
      parameter: [{ name: "content", valueString: JSON.stringify(allergyMessage()) }],
    }),
    status: 400,
    issues: [{ code: "structure", says: [/Parameters/, /--lenient-envelope/] }],
  },

  // --- the content is not a message Bundle (every issue carries a FHIRPath)
  {
    name: "content a Patient, not a Bundle",
    body: envelope(example<Patient>("patient-example.json")),
    status: 400,
    issues: [{ code: "structure", says: [/must be a FHIR Bundle of type "message"/, /found a Patient/], at: true }],
  },
  {
    name: "Bundle of type collection",
    body: { ...allergyMessage(), type: "collection" },
    status: 400,
    operation: "add-allergy",
    issues: [{ code: "value", says: [/Bundle.type must be "message", found "collection"/], at: "Bundle.type" }],
  },
  {
    name: "Bundle without entry",
    body: { resourceType: "Bundle", type: "message" } as Bundle,
    status: 400,
    issues: [{ code: "required", says: [/Bundle.entry is missing or empty/, /MessageHeader/], at: "Bundle" }],
  },
  {
    name: "Bundle with an empty entry list",
    body: { resourceType: "Bundle", type: "message", entry: [] } as Bundle,
    status: 400,
    issues: [{ code: "required", says: [/Bundle.entry is missing or empty/], at: "Bundle" }],
  },
  {
    name: "no MessageHeader",
    body: { ...allergyMessage(), entry: allergyMessage().entry?.slice(1) },
    status: 400,
    issues: [{ code: "structure", says: [/first entry must be a MessageHeader/, /none was found/], at: HEADER }],
  },
  {
    name: "MessageHeader not first",
    body: { ...allergyMessage(), entry: [...(allergyMessage().entry ?? [])].reverse() },
    status: 400,
    issues: [{ code: "structure", says: [/must be the first entry/, /Bundle\.entry\[1\]/, /Move it/], at: HEADER }],
  },
  {
    name: "MessageHeader without id",
    body: withHeader((h) => {
      delete h.id;
    }),
    status: 400,
    operation: "add-allergy",
    issues: [{ code: "required", says: [/MessageHeader.id is missing/, /unique id/], at: HEADER }],
  },
  {
    name: "MessageHeader without source.endpoint",
    body: withHeader((h) => {
      h.source = {} as MessageHeader["source"];
    }),
    status: 400,
    operation: "add-allergy",
    issues: [
      {
        code: "required",
        says: [/source.endpoint is missing/, /URL of the sending system/],
        at: `${HEADER}.source`,
      },
    ],
  },
  {
    name: "MessageHeader without event",
    body: withHeader((h) => {
      delete h.eventCoding;
    }),
    status: 400,
    issues: [{ code: "required", says: [/no usable event/, /eventCoding.code/, /eventUri/], at: HEADER }],
  },
  {
    // R4 has no MessageHeader.event: the choice event[x] is spelt eventCoding or eventUri.
    name: "MessageHeader with `event` instead of eventCoding",
    body: withHeader((h) => {
      h.event = h.eventCoding;
      delete h.eventCoding;
    }),
    status: 400,
    issues: [
      {
        code: "required",
        says: [/no usable event/, /has an element "event"/, /R4 spells.*eventCoding.*eventUri/],
        at: HEADER,
      },
    ],
  },
  {
    name: "MessageHeader.eventUri not a string",
    body: withHeader((h) => {
      delete h.eventCoding;
      h.eventUri = 42 as unknown as string;
    }),
    status: 400,
    issues: [
      { code: "required", says: [/no usable event \(eventUri is a number\)/], at: `${HEADER}.event.ofType(uri)` },
    ],
  },
  {
    name: "MessageHeader without id, source.endpoint and event: three issues at once",
    body: withHeader((h) => {
      delete h.id;
      delete (h as Record<string, unknown>).source;
      delete h.eventCoding;
    }),
    status: 400,
    issues: [
      { code: "required", says: [/MessageHeader.id is missing/], at: HEADER },
      { code: "required", says: [/source.endpoint is missing/], at: HEADER },
      { code: "required", says: [/no usable event/], at: HEADER },
    ],
  },
  {
    name: "MessageHeader.id not a valid FHIR id",
    body: withHeader((h) => {
      h.id = "message #1 (retry)";
    }),
    status: 400,
    operation: "add-allergy",
    issues: [{ code: "value", says: [/not a valid FHIR id/, /UUID/], at: `${HEADER}.id` }],
  },
  {
    name: "unknown event",
    body: messageBundle("make-coffee", [cashew()], { id: BAD_ID }),
    status: 400,
    issues: [
      {
        code: "not-supported",
        says: [/Unknown event "make-coffee"/, /add-allergy/, /cancel-task/, /remove-allergy/],
        at: `${HEADER}.event.ofType(Coding).code`,
      },
    ],
  },
  {
    name: "focus pointing nowhere",
    body: allergyMessage({ header: { focus: [{ reference: "urn:uuid:00000000-0000-0000-0000-000000000000" }] } }),
    status: 400,
    operation: "add-allergy",
    issues: [
      {
        code: "not-found",
        says: [/urn:uuid:00000000-0000-0000-0000-000000000000/, /not in the Bundle/, /fullUrl/],
        at: `${HEADER}.focus[0].reference`,
      },
    ],
  },
  {
    name: "focus of the wrong resource type",
    body: messageBundle("add-allergy", [example<Patient>("patient-example.json")], { id: BAD_ID }),
    status: 400,
    operation: "add-allergy",
    issues: [
      { code: "invalid", says: [/expects focus of type AllergyIntolerance/, /a Patient/], at: `${HEADER}.focus[0]` },
      { code: "required", says: [/needs a AllergyIntolerance as the message focus/], at: `${HEADER}.focus` },
    ],
  },
  {
    name: "focus resource without its required elements",
    body: messageBundle("add-allergy", [{ resourceType: "AllergyIntolerance" } as Resource], { id: BAD_ID }),
    status: 400,
    operation: "add-allergy",
    issues: [
      {
        code: "required",
        says: [/AllergyIntolerance.code is required/, /SNOMED/],
        at: "Bundle.entry[1].resource",
      },
      { code: "required", says: [/AllergyIntolerance.patient is required/], at: "Bundle.entry[1].resource" },
      { code: "invariant", says: [/^ait-1: /, /clinicalStatus/], at: "Bundle.entry[1].resource" },
    ],
  },
  {
    name: "several problems at once: Bundle.type, source.endpoint, unresolved focus",
    body: (() => {
      const bundle = withHeader((h) => {
        h.source = {} as MessageHeader["source"];
        h.focus = [{ reference: "AllergyIntolerance/not-here" }];
      });
      return { ...bundle, type: "collection" } as Bundle;
    })(),
    status: 400,
    operation: "add-allergy",
    issues: [
      { code: "value", says: [/Bundle.type must be "message"/], at: "Bundle.type" },
      { code: "required", says: [/source.endpoint is missing/], at: `${HEADER}.source` },
      { code: "not-found", says: [/AllergyIntolerance\/not-here/], at: `${HEADER}.focus[0].reference` },
    ],
  },
  {
    name: "focus resource with mistyped elements (R4 JSON shape)",
    body: messageBundle(
      "add-allergy",
      [{ ...cashew(), code: { text: 5, coding: { code: "227493005" } }, onsetDateTime: 2020 } as Resource],
      { id: BAD_ID },
    ),
    status: 400,
    operation: "add-allergy",
    issues: [
      {
        code: "structure",
        says: [/must be a JSON string/, /found a number/],
        at: "Bundle.entry[1].resource.code.text",
      },
      { code: "structure", says: [/must be a JSON array/, /wrap/], at: "Bundle.entry[1].resource.code.coding" },
      {
        code: "structure",
        says: [/must be a JSON string \(FHIR dateTime\)/],
        at: "Bundle.entry[1].resource.onset.ofType(dateTime)",
      },
    ],
  },
  {
    name: "a non-focus entry with a mistyped element",
    body: (() => {
      const bundle = allergyMessage();
      bundle.entry?.push({
        fullUrl: "urn:uuid:patient",
        resource: { resourceType: "Patient", birthDate: 1990 } as Resource,
      });
      return bundle;
    })(),
    status: 400,
    operation: "add-allergy",
    issues: [{ code: "structure", says: [/FHIR date/], at: "Bundle.entry[2].resource.birthDate" }],
  },

  // --- hostile JSON
  {
    name: "10,000 nested arrays as the body",
    body: deepArray(10_000),
    status: 400,
    issues: [{ code: "structure", says: [/nesting deeper than/] }],
  },
  {
    name: "10,000 nested objects as the body",
    body: deepObject(10_000),
    status: 400,
    issues: [{ code: "structure", says: [/nesting deeper than/] }],
  },
  {
    name: "10,000 nested arrays inside content",
    body: JSON.stringify({ content: deepArray(10_000) }),
    status: 400,
    issues: [{ code: "structure", says: [/"content" is not valid JSON/, /nesting deeper than/] }],
  },
  {
    name: "10,000 nested objects inside a resource of the message",
    body: JSON.stringify({
      content: JSON.stringify(allergyMessage()).replace('"resourceType":"AllergyIntolerance"', () => {
        return `"resourceType":"AllergyIntolerance","extension":${deepObject(10_000)}`;
      }),
    }),
    status: 400,
    issues: [{ code: "structure", says: [/nesting deeper than/] }],
  },

  // --- size and media type
  {
    name: "a 5 MiB body (default limit 1 MiB)",
    body: JSON.stringify({ content: "x".repeat(5 * 1024 * 1024) }),
    status: 413,
    issues: [{ code: "too-long", says: [/larger than 1048576 bytes/, /--max-body/] }],
  },
  {
    name: "a body over --max-body 1000",
    options: { maxBody: 1000 },
    body: allergyMessage(),
    status: 413,
    issues: [{ code: "too-long", says: [/larger than 1000 bytes/, /--max-body/] }],
  },
  ...["text/plain", "application/xml", "application/fhir+xml", "application/x-www-form-urlencoded"].map(
    (contentType): BadInput => ({
      name: `Content-Type ${contentType}`,
      body: allergyMessage(),
      contentType,
      status: 415,
      issues: [
        {
          code: "not-supported",
          says: [new RegExp(`${contentType.replace("+", "\\+")} is not supported`), /application\/json/],
        },
      ],
    }),
  ),

  // --- methods and paths
  ...(["GET", "PUT", "DELETE", "PATCH"] as const).flatMap((method) =>
    [STANDARD, ALTERNATE].map(
      (path): BadInput => ({
        name: `${method} ${path}`,
        method,
        path,
        body: method === "GET" ? undefined : allergyMessage(),
        status: 405,
        allow: "POST",
        issues: [{ code: "not-supported", says: [new RegExp(`${method} is not allowed`), /POST/] }],
      }),
    ),
  ),
  {
    name: "add-allergy on the alternate path",
    path: ALTERNATE,
    body: allergyMessage(),
    status: 404,
    operation: "add-allergy",
    issues: [
      {
        code: "not-found",
        says: [/add-allergy is served at POST \/uae-fhir\/r4\/\$process-message/, /not at \/fhir\/\$process-message/],
        at: `${HEADER}.event.ofType(Coding).code`,
      },
    ],
  },
  {
    name: "remove-allergy on the standard path",
    body: messageBundle("remove-allergy", [example<AllergyIntolerance>("allergyintolerance-example.json")], {
      id: BAD_ID,
    }),
    status: 404,
    operation: "remove-allergy",
    issues: [
      {
        code: "not-found",
        says: [/remove-allergy is served at POST \/fhir\/\$process-message/],
        at: `${HEADER}.event.ofType(Coding).code`,
      },
    ],
  },
  ...["/uae-fhir/r4/Patient", "/uae-fhir/r4/$process-message/extra", "/", "/fhir/$PROCESS-MESSAGE"].map(
    (path): BadInput => ({
      name: `unknown path ${path}`,
      path,
      body: allergyMessage(),
      status: 404,
      issues: [{ code: "not-found", says: [/Nothing is served/, /POST \/uae-fhir\/r4\/\$process-message/] }],
    }),
  ),

  // --- lenient envelope: what it still refuses
  {
    name: "lenient: Parameters without a content parameter",
    options: { lenientEnvelope: true },
    body: JSON.stringify({ resourceType: "Parameters", parameter: [{ name: "message", valueString: "{}" }] }),
    status: 400,
    issues: [{ code: "required", says: [/no parameter named "content"/] }],
  },
  {
    name: "lenient: Parameters whose content parameter holds neither a string nor a resource",
    options: { lenientEnvelope: true },
    body: JSON.stringify({ resourceType: "Parameters", parameter: [{ name: "content", valueInteger: 3 }] }),
    status: 400,
    issues: [{ code: "required", says: [/valueString" is missing/] }],
  },
  {
    name: "lenient: a bare Bundle that is not a message",
    options: { lenientEnvelope: true },
    body: JSON.stringify({ ...allergyMessage(), type: "collection" }),
    status: 400,
    operation: "add-allergy",
    issues: [{ code: "value", says: [/Bundle.type must be "message"/], at: "Bundle.type" }],
  },
];

interface Sent {
  status: number;
  headers: Headers;
  text: string;
}

async function send(app: Hono, c: BadInput): Promise<Sent> {
  const headers: Record<string, string> = {};
  if (c.contentType !== null) headers["content-type"] = c.contentType ?? "application/json";
  const body = c.body === undefined ? undefined : typeof c.body === "string" ? c.body : envelope(c.body);
  const res = await app.request(c.path ?? STANDARD, { method: c.method ?? "POST", headers, body });
  return { status: res.status, headers: res.headers, text: await res.text() };
}

/** Checks a reply against its row: status, media type, and one OperationOutcome issue per expected issue. */
function expectOutcome(c: BadInput, reply: Sent): void {
  expect(reply.status, reply.text.slice(0, 500)).toBe(c.status);
  expect(reply.headers.get("content-type")).toMatch(/^application\/fhir\+json/);
  expect(reply.headers.get("allow")).toBe(c.allow ?? null);

  const outcome = JSON.parse(reply.text) as OperationOutcome;
  expect(outcome.resourceType).toBe("OperationOutcome");
  const shown = JSON.stringify(outcome.issue, null, 2);
  expect(outcome.issue, shown).toHaveLength(c.issues.length);
  for (const found of outcome.issue) {
    expect(["fatal", "error", "warning", "information"]).toContain(found.severity);
    expect(found.code).toMatch(/^[a-z-]+$/);
    expect(typeof found.diagnostics === "string" && found.diagnostics.length > 20, shown).toBe(true);
    for (const path of found.expression ?? []) {
      expect(compilePath(path).ok, `expression ${path} is not FHIRPath`).toBe(true);
      // CONTRACT §11: it evaluates (R4 model) to the offending node, or the parent of a missing element.
      if (sentBundle(c))
        expect(evaluateOn(sentBundle(c), path), `${path} finds nothing in the request`).not.toEqual([]);
    }
  }
  for (const wanted of c.issues) {
    const match = outcome.issue.find(
      (found) =>
        found.code === wanted.code &&
        wanted.says.every((re) => re.test(found.diagnostics ?? "")) &&
        (wanted.at === undefined ||
          (wanted.at === true ? (found.expression?.length ?? 0) > 0 : found.expression?.join() === wanted.at)),
    );
    expect(
      match,
      `no issue ${wanted.code} saying ${wanted.says.join(" and ")} at ${wanted.at} in ${shown}`,
    ).toBeDefined();
  }
}

/** The message Bundle a row sends, when it sends one. */
function sentBundle(c: BadInput): Record<string, unknown> | undefined {
  if (c.body === undefined) return undefined;
  if (typeof c.body !== "string") return c.body as unknown as Record<string, unknown>;
  try {
    const parsed = JSON.parse(c.body) as Record<string, unknown>;
    const inner = typeof parsed.content === "string" ? JSON.parse(parsed.content) : parsed;
    return inner?.resourceType === "Bundle" ? inner : undefined;
  } catch {
    return undefined;
  }
}

function evaluateOn(bundle: unknown, path: string): unknown[] {
  return fhirpath.evaluate(bundle as never, path, undefined, r4 as never) as unknown[];
}

async function postMessage(app: Hono, bundle: Bundle): Promise<Bundle> {
  const res = await app.request(STANDARD, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: envelope(bundle),
  });
  const text = await res.text();
  expect(res.status, text.slice(0, 500)).toBe(200);
  const reply = JSON.parse(text) as Bundle;
  expect(responseHeader(reply).response?.code).toBe("ok");
  return reply;
}

/** The AllergyIntolerances that Patient/example's profile lists (the patient the table's messages are about). */
async function profileAllergies(app: Hono): Promise<AllergyIntolerance[]> {
  const view = await postMessage(
    app,
    messageBundle("view-patient-profile", [{ resourceType: "Patient", id: "example" } as Resource]),
  );
  return (view.entry ?? [])
    .map((e) => e.resource)
    .filter((r): r is AllergyIntolerance => r?.resourceType === "AllergyIntolerance");
}

/**
 * A valid add-allergy reusing the bad messages' id: it is processed afresh
 * (no bad message was remembered as a replay) and lands in the profile (the
 * sandbox still serves).
 */
/** Checks a valid message under BAD_ID is processed afresh; returns it, for a resend. */
async function expectStillServing(sandbox: SandboxApp, before: AllergyIntolerance[]): Promise<Bundle> {
  const sent = messageBundle("add-allergy", [cashew()], { id: BAD_ID });
  const added = await postMessage(sandbox.app, sent);
  expect(responseHeader(added).response?.identifier).toBe(BAD_ID);
  expect(sandbox.journal.list().at(-1)).toMatchObject({ operation: "add-allergy", messageId: BAD_ID });
  expect(sandbox.journal.list().at(-1)?.duplicate).toBeUndefined();

  const stored = focusOf(added)[0] as AllergyIntolerance;
  const after = await profileAllergies(sandbox.app);
  expect(after.map((r) => r.id).sort()).toEqual([...before.map((r) => r.id), stored.id].sort());
  return sent;
}

describe("bad input is refused with an OperationOutcome and changes nothing (CONTRACT §2, §5)", () => {
  it.each(cases.map((c) => [c.name, c] as const))("%s", async (_name, c) => {
    const sandbox = createApp(c.options);
    const before = await profileAllergies(sandbox.app);

    expectOutcome(c, await send(sandbox.app, c));

    expect(sandbox.journal.size).toBe(2);
    expect(sandbox.journal.list()[1]).toMatchObject({
      direction: "inbound",
      operation: c.operation ?? null,
      request: { method: c.method ?? "POST", path: c.path ?? STANDARD },
      response: { status: c.status },
    });
    expect(await profileAllergies(sandbox.app)).toEqual(before);
    await expectStillServing(sandbox, before);
  });

  it("one app takes the whole table in a row, then still serves", async () => {
    const sandbox = createApp();
    const before = await profileAllergies(sandbox.app);
    const shared = cases.filter((c) => c.options === undefined);
    for (const c of shared) expectOutcome(c, await send(sandbox.app, c));

    expect(
      sandbox.journal.list({ limit: shared.length }).map((call) => [call.operation, call.response?.status]),
    ).toEqual(shared.map((c) => [c.operation ?? null, c.status]));
    expect(await profileAllergies(sandbox.app)).toEqual(before);
    const valid = await expectStillServing(sandbox, before);
    // Sent again (an exact resend), the valid message is a replay: proof that the fresh-processing check above can fail.
    await postMessage(sandbox.app, valid);
    expect(sandbox.journal.list().at(-1)?.duplicate).toBe(true);
  });
});

describe("--lenient-envelope accepts a bare Bundle or a Parameters resource (CONTRACT §2)", () => {
  const bundle = (): Bundle => messageBundle("add-allergy", [cashew()], { id: "lenient-1" });
  const forms: Array<[string, () => unknown]> = [
    ["a bare Bundle", bundle],
    [
      "Parameters with content as valueString",
      () => ({ resourceType: "Parameters", parameter: [{ name: "content", valueString: JSON.stringify(bundle()) }] }),
    ],
    [
      "Parameters with content as resource",
      () => ({ resourceType: "Parameters", parameter: [{ name: "content", resource: bundle() }] }),
    ],
    ["the documented envelope", () => ({ content: JSON.stringify(bundle()) })],
  ];

  it.each(forms)("%s", async (_name, body) => {
    const { app, journal } = createApp({ lenientEnvelope: true });
    const res = await app.request(STANDARD, {
      method: "POST",
      headers: { "content-type": "application/fhir+json" },
      body: JSON.stringify(body()),
    });
    const text = await res.text();

    expect(res.status, text.slice(0, 500)).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^application\/fhir\+json/);
    const reply = JSON.parse(text) as Bundle;
    expect(reply).toMatchObject({ resourceType: "Bundle", type: "message" });
    expect(responseHeader(reply).response).toEqual({ identifier: "lenient-1", code: "ok" });
    expect(journal.list()[0]).toMatchObject({ operation: "add-allergy", messageId: "lenient-1" });
  });
});

describe("JSON nesting: 128 levels are read, 129 are refused (README: where the contract is silent)", () => {
  /** Nesting depth as the README counts it: the outermost object or array is level 1. */
  const depthOf = (value: unknown): number =>
    value !== null && typeof value === "object"
      ? 1 + Math.max(0, ...Object.values(value as Record<string, unknown>).map(depthOf))
      : 0;

  /**
   * A valid add-allergy message whose AllergyIntolerance has `levels` complex extensions nested in one
   * another (R4 allows it), the innermost with a valueString (its object is the deepest level) or a
   * valueCoding (one level deeper).
   */
  function nestedExtensions(levels: number, leaf: "valueString" | "valueCoding"): Bundle {
    let extension: Record<string, unknown> =
      leaf === "valueString"
        ? { url: "urn:example:leaf", valueString: "deep" }
        : { url: "urn:example:leaf", valueCoding: { system: "urn:example:codes", code: "deep" } };
    for (let i = 1; i < levels; i++) extension = { url: `urn:example:level-${i}`, extension: [extension] };
    return messageBundle("add-allergy", [{ ...cashewWithPatient(), extension: [extension] } as Resource]);
  }
  const cashewWithPatient = (): AllergyIntolerance => ({
    ...cashew(),
    patient: { identifier: { system: "urn:ae:emirates-id", value: "784-1990-1234567-6" } },
  });

  it("a message nested 128 levels deep is processed", async () => {
    const bundle = nestedExtensions(62, "valueString");
    expect(depthOf(bundle)).toBe(128);
    const reply = await post(createApp().app, bundle);
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    expect(responseHeader(reply.body).response?.code).toBe("ok");
  });

  it("a message nested 129 levels deep is a 400 that names the limit", async () => {
    const bundle = nestedExtensions(62, "valueCoding");
    expect(depthOf(bundle)).toBe(129);
    const reply = await post(createApp().app, bundle);
    expect(reply.status).toBe(400);
    expect(JSON.stringify(reply.body)).toMatch(/nesting deeper than 128 levels/);
  });

  it.each([
    [128, false],
    [129, true],
  ])("a body of %i nested arrays: refused for its nesting %s", async (levels, refused) => {
    expect(depthOf(JSON.parse(deepArray(levels)))).toBe(levels);
    const res = await createApp().app.request(STANDARD, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: deepArray(levels),
    });
    expect(res.status).toBe(400);
    expect((await res.text()).includes("nesting deeper than")).toBe(refused);
  });
});
