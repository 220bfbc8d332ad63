import { readdirSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import type { AllergyIntolerance, Bundle, BundleEntry, MessageHeader, Resource } from "fhir/r4.js";
import type { Hono } from "hono";

export const STANDARD = "/uae-fhir/r4/$process-message";
export const ALTERNATE = "/fhir/$process-message";

const EXAMPLES = fileURLToPath(new URL("../fixtures/fhir-examples/", import.meta.url));

/** An HL7 R4 specification example resource (test/fixtures/fhir-examples, CC0), freshly parsed. */
export function example<T extends Resource = Resource>(file: string): T {
  return JSON.parse(readFileSync(`${EXAMPLES}${file}`, "utf8")) as T;
}

export function exampleFiles(): string[] {
  return readdirSync(EXAMPLES).filter((f) => f.endsWith(".json"));
}

export interface MessageOptions {
  /** MessageHeader.id; default a fresh UUID. */
  id?: string;
  source?: string;
  /** Send the event as eventUri instead of eventCoding. */
  eventUri?: boolean;
  /** Which resources MessageHeader.focus points at (indexes into `resources`); default all. */
  focus?: number[];
  /** Extra MessageHeader fields (sender, …). */
  header?: Partial<MessageHeader>;
}

/**
 * A FHIR message Bundle for `event`, with `resources` as entries after the
 * MessageHeader. Entries get urn:uuid fullUrls and focus refers to them.
 */
export function messageBundle(event: string, resources: Resource[], options: MessageOptions = {}): Bundle {
  const entries: BundleEntry[] = resources.map((resource) => ({
    fullUrl: `urn:uuid:${crypto.randomUUID()}`,
    resource,
  }));
  const focus = (options.focus ?? resources.map((_, i) => i)).map((i) => ({
    reference: entries[i]?.fullUrl as string,
  }));
  const header: MessageHeader = {
    resourceType: "MessageHeader",
    id: options.id ?? crypto.randomUUID(),
    ...(options.eventUri
      ? { eventUri: `https://sandbox.example.ae/events/${event}` }
      : { eventCoding: { system: "https://sandbox.example.ae/events", code: event } }),
    source: { endpoint: options.source ?? "https://clinic.example.ae/fhir" },
    ...(focus.length > 0 ? { focus } : {}),
    ...options.header,
  } as MessageHeader;
  return {
    resourceType: "Bundle",
    id: crypto.randomUUID(),
    type: "message",
    timestamp: new Date().toISOString(),
    entry: [{ fullUrl: `urn:uuid:${header.id}`, resource: header }, ...entries],
  };
}

/** A valid add-allergy message (a fresh MessageHeader id each call) for a fixed test patient: traffic that is accepted. */
export function allergyMessage(text = "sesame"): Bundle {
  return messageBundle("add-allergy", [
    {
      resourceType: "AllergyIntolerance",
      clinicalStatus: {
        coding: [{ system: "http://terminology.hl7.org/CodeSystem/allergyintolerance-clinical", code: "active" }],
      },
      code: { text },
      patient: { identifier: { system: "urn:ae:emirates-id", value: "784-1987-7777777-6" } },
    } as AllergyIntolerance,
  ]);
}

/** The documented envelope: {"content": "<bundle JSON>"}. */
export function envelope(bundle: unknown): string {
  return JSON.stringify({ content: JSON.stringify(bundle) });
}

export interface Reply {
  status: number;
  headers: Headers;
  // biome-ignore lint/suspicious/noExplicitAny: tests read arbitrary FHIR JSON
  body: any;
}

/** POSTs a body (a Bundle is wrapped in the envelope; a string is sent as is) and parses the answer. */
export async function post(
  app: Hono,
  body: Bundle | string,
  options: { path?: string; contentType?: string | null; headers?: Record<string, string> } = {},
): Promise<Reply> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.contentType !== null) headers["content-type"] = options.contentType ?? "application/json";
  const res = await app.request(options.path ?? STANDARD, {
    method: "POST",
    headers,
    body: typeof body === "string" ? body : envelope(body),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text === "" ? null : JSON.parse(text) };
}

/** The response MessageHeader of a response message. */
export function responseHeader(bundle: Bundle): MessageHeader {
  return bundle.entry?.[0]?.resource as MessageHeader;
}

/** The resources MessageHeader.focus points at in a response message. */
export function focusOf(bundle: Bundle): Resource[] {
  const byUrl = new Map((bundle.entry ?? []).map((e) => [e.fullUrl, e.resource]));
  return (responseHeader(bundle).focus ?? []).map((f) => byUrl.get(f.reference) as Resource);
}
