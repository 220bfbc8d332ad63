import type { Bundle, MessageHeader, Resource } from "fhir/r4.js";
import { FHIR_ID } from "../fhir/ids.js";
import { type Issue, issue, moreIssues } from "../fhir/outcome.js";
import { describeJsonType, isObject } from "./json.js";

/** A resource in the request Bundle, with its position for FHIRPath diagnostics. */
export interface EntryRef {
  index: number;
  resource: Resource & Record<string, unknown>;
  /** `Bundle.entry[i].resource`: where diagnostics about this resource point. */
  path: string;
}

/** A message Bundle that passed the structural checks of CONTRACT §2. */
export interface Message {
  bundle: Bundle;
  header: MessageHeader;
  /** The event as sent: eventCoding.code, else the last segment of eventUri. */
  event: string;
  entries: EntryRef[];
  /** The resources MessageHeader.focus points at, in order. */
  focus: EntryRef[];
  /** Resolves a reference within the Bundle (fullUrl, `Type/id`, or an absolute URL ending in `Type/id`). */
  resolve(reference: string): EntryRef | undefined;
}

export type ReadMessage = { message: Message; issues: Issue[] } | { message: undefined; issues: Issue[] };

const HEADER = "Bundle.entry[0].resource";

/** Entries without a resource reported one by one; the rest are counted (as many as the validator walks to). */
const MAX_ENTRY_ISSUES = 1_000;

/**
 * Checks the message Bundle as CONTRACT §2 asks (a message Bundle, its
 * MessageHeader, the focus resolving) and reports every problem found, each
 * with a FHIRPath to the offending node or, for a missing element, to its
 * parent. `message` is present whenever the header can still be routed, so
 * the router can add its own findings to the same list. R4 validation of
 * every element is src/validation's job.
 */
export function readMessage(bundle: Record<string, unknown>): ReadMessage {
  const issues: Issue[] = [];
  if (bundle.resourceType !== "Bundle") {
    const found = typeof bundle.resourceType === "string" ? `a ${bundle.resourceType}` : "no resourceType";
    issues.push(
      issue(
        "structure",
        `The content must be a FHIR Bundle of type "message"; found ${found}. Wrap the resources in a message Bundle whose first entry is a MessageHeader.`,
        typeof bundle.resourceType === "string" ? "resourceType" : undefined,
      ),
    );
    return { message: undefined, issues };
  }
  if (bundle.type !== "message") {
    issues.push(
      issue(
        "value",
        `Bundle.type must be "message", found ${JSON.stringify(bundle.type ?? null)}. $process-message only takes message Bundles.`,
        bundle.type === undefined ? "Bundle" : "Bundle.type",
      ),
    );
  }
  if (!Array.isArray(bundle.entry) || bundle.entry.length === 0) {
    issues.push(
      issue(
        "required",
        "Bundle.entry is missing or empty: a message needs a MessageHeader as its first entry, then the resources it is about.",
        "Bundle",
      ),
    );
    return { message: undefined, issues };
  }

  const entries: EntryRef[] = [];
  const byFullUrl = new Map<string, EntryRef>();
  const byTypeAndId = new Map<string, EntryRef>();
  let withoutResource = 0;
  bundle.entry.forEach((entry: unknown, index: number) => {
    const path = `Bundle.entry[${index}].resource`;
    if (!isObject(entry) || !isObject(entry.resource) || typeof entry.resource.resourceType !== "string") {
      // Past the first ones, counted only: an answer lists 100 issues, and one issue object per entry of 100,000
      // empty entries cost more than the rest of the message's checks.
      if (++withoutResource > MAX_ENTRY_ISSUES) return;
      issues.push(
        issue(
          "structure",
          `Bundle.entry[${index}] has no resource with a resourceType; every entry must carry a FHIR resource.`,
          isObject(entry) ? `Bundle.entry[${index}]` : "Bundle",
        ),
      );
      return;
    }
    const ref: EntryRef = { index, resource: entry.resource as EntryRef["resource"], path };
    entries.push(ref);
    if (typeof entry.fullUrl === "string") byFullUrl.set(entry.fullUrl, ref);
    if (typeof ref.resource.id === "string") byTypeAndId.set(`${ref.resource.resourceType}/${ref.resource.id}`, ref);
  });
  if (withoutResource > MAX_ENTRY_ISSUES) issues.push(moreIssues(withoutResource - MAX_ENTRY_ISSUES, "error"));

  const first = entries[0];
  if (first?.index !== 0 || first.resource.resourceType !== "MessageHeader") {
    const elsewhere = entries.find((e) => e.resource.resourceType === "MessageHeader");
    issues.push(
      issue(
        "structure",
        elsewhere
          ? `The MessageHeader must be the first entry; it is at Bundle.entry[${elsewhere.index}]. Move it to the front.`
          : "The first entry must be a MessageHeader (id, source.endpoint, eventCoding or eventUri, focus); none was found.",
        HEADER,
      ),
    );
    return { message: undefined, issues };
  }

  const header = first.resource as unknown as MessageHeader & Record<string, unknown>;
  issues.push(...headerIssues(header));

  const resolve = (reference: string): EntryRef | undefined => {
    const exact = byFullUrl.get(reference);
    if (exact) return exact;
    const match = /([A-Za-z]+)\/([A-Za-z0-9\-.]{1,64})(?:\/_history\/[^/]+)?$/.exec(reference);
    return match ? byTypeAndId.get(`${match[1]}/${match[2]}`) : undefined;
  };

  const focus: EntryRef[] = [];
  const focusList: unknown = header.focus;
  if (focusList !== undefined && !Array.isArray(focusList)) {
    issues.push(issue("structure", "MessageHeader.focus must be an array of References.", `${HEADER}.focus`));
  } else if (Array.isArray(focusList)) {
    focusList.forEach((f: unknown, i: number) => {
      const at = `${HEADER}.focus[${i}]`;
      const reference = isObject(f) ? f.reference : undefined;
      if (typeof reference !== "string") {
        issues.push(
          issue("required", `MessageHeader.focus[${i}] has no reference; point it at an entry's fullUrl.`, at),
        );
        return;
      }
      const target = resolve(reference);
      if (!target) {
        issues.push(
          issue(
            "not-found",
            `MessageHeader.focus[${i}] refers to "${reference}", which is not in the Bundle. Use the fullUrl of an entry, or ResourceType/id of a resource in the Bundle.`,
            `${at}.reference`,
          ),
        );
        return;
      }
      focus.push(target);
    });
  }

  const event = eventOf(header);
  if (event === undefined) return { message: undefined, issues };
  return {
    message: { bundle: bundle as unknown as Bundle, header, event, entries, focus, resolve },
    issues,
  };
}

function headerIssues(header: Record<string, unknown>): Issue[] {
  const issues: Issue[] = [];
  const id = header.id;
  if (id === undefined || id === "") {
    issues.push(
      issue(
        "required",
        "MessageHeader.id is missing: give every message a unique id; the response echoes it in response.identifier.",
        id === undefined ? HEADER : `${HEADER}.id`,
      ),
    );
  } else if (typeof id !== "string" || !FHIR_ID.test(id)) {
    issues.push(
      issue(
        "value",
        `MessageHeader.id ${JSON.stringify(id)} is not a valid FHIR id (1–64 characters of A–Z, a–z, 0–9, '-' and '.'); a UUID works.`,
        `${HEADER}.id`,
      ),
    );
  }
  const source = header.source;
  if (!isObject(source) || typeof source.endpoint !== "string" || source.endpoint === "") {
    issues.push(
      issue(
        "required",
        "MessageHeader.source.endpoint is missing: give the URL of the sending system; responses are addressed to it.",
        !isObject(source) ? HEADER : source.endpoint === undefined ? `${HEADER}.source` : `${HEADER}.source.endpoint`,
      ),
    );
  }
  if (eventOf(header) === undefined) {
    // What was there instead, so the fix is plain: R4 has no `event` element, only the choice eventCoding | eventUri.
    const found =
      header.eventCoding !== undefined
        ? `eventCoding is ${isObject(header.eventCoding) ? "without a code" : describeJsonType(header.eventCoding)}`
        : header.eventUri !== undefined
          ? `eventUri is ${typeof header.eventUri === "string" ? "without a last segment" : describeJsonType(header.eventUri)}`
          : header.event !== undefined
            ? 'it has an element "event", which R4 spells eventCoding (a Coding) or eventUri'
            : "neither eventCoding nor eventUri is present";
    issues.push(
      issue(
        "required",
        `MessageHeader has no usable event (${found}): set eventCoding.code to the operation's event code, e.g. "add-allergy", or eventUri ending in it.`,
        isObject(header.eventCoding)
          ? `${HEADER}.event.ofType(Coding)`
          : header.eventUri !== undefined
            ? `${HEADER}.event.ofType(uri)`
            : HEADER,
      ),
    );
  }
  return issues;
}

function eventOf(header: Record<string, unknown>): string | undefined {
  const coding = header.eventCoding;
  if (isObject(coding) && typeof coding.code === "string" && coding.code.trim() !== "") return coding.code.trim();
  if (typeof header.eventUri === "string") {
    const last = header.eventUri
      .split(/[/#:]/)
      .filter((s) => s !== "")
      .pop();
    if (last) return last;
  }
  return undefined;
}
