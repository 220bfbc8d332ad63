import type { Bundle, MessageHeader, OperationOutcome, Resource } from "fhir/r4.js";
import type { Hono } from "hono";
import { expect } from "vitest";
import { focusOf, post, type Reply, responseHeader } from "../support/messages.js";

/** Where `app.request` places the sandbox: its URL for a message path. */
export const sandboxUrl = (path: string): string => `http://localhost${path}`;

/**
 * Asserts the CONTRACT §4 shape of a response message answering `request`
 * that was POSTed to `path`, whatever its response code; returns the Bundle.
 */
export function expectResponseMessage(reply: Reply, request: Bundle, path: string): Bundle {
  const sent = responseHeader(request);
  expect(reply.headers.get("content-type")).toMatch(/^application\/fhir\+json/);
  const bundle = reply.body as Bundle;
  expect(bundle).toMatchObject({ resourceType: "Bundle", type: "message" });
  const header = responseHeader(bundle);
  expect(header.resourceType).toBe("MessageHeader");
  expect(header.id).toEqual(expect.any(String));
  expect(header.id).not.toBe(sent.id);
  if (sent.eventCoding) expect(header.eventCoding).toEqual(sent.eventCoding);
  else expect(header.eventUri).toBe(sent.eventUri);
  expect(header.source.endpoint).toBe(sandboxUrl(path));
  expect(header.destination?.[0]?.endpoint).toBe(sent.source.endpoint);
  expect(header.response?.identifier).toBe(sent.id);
  // Every focus reference (and response.details) names an entry after the header.
  const later = new Set((bundle.entry ?? []).slice(1).map((e) => e.fullUrl));
  for (const f of header.focus ?? []) expect(later).toContain(f.reference);
  return bundle;
}

/** A §4 `ok` response message (200); returns its focus resources. */
export function expectOk(reply: Reply, request: Bundle, path: string): Resource[] {
  expect(reply.status, JSON.stringify(reply.body)).toBe(200);
  const bundle = expectResponseMessage(reply, request, path);
  expect(responseHeader(bundle).response?.code).toBe("ok");
  return focusOf(bundle);
}

/** A processed-and-refused response message (§5): fatal-error, details → an OperationOutcome in the Bundle. */
export function expectRefusal(bundle: Bundle): OperationOutcome {
  const header: MessageHeader = responseHeader(bundle);
  expect(header.response?.code).toBe("fatal-error");
  const details = header.response?.details?.reference;
  expect(details).toEqual(expect.any(String));
  const entry = (bundle.entry ?? []).slice(1).find((e) => e.fullUrl === details);
  expect(entry?.resource?.resourceType).toBe("OperationOutcome");
  return entry?.resource as OperationOutcome;
}

/** The journal's view of the inbound call that carried message `messageId`. */
// biome-ignore lint/suspicious/noExplicitAny: the admin API returns arbitrary JSON
export async function journalledCall(app: Hono, messageId: string): Promise<any> {
  const res = await app.request(`/__admin/calls?messageId=${encodeURIComponent(messageId)}`);
  expect(res.status).toBe(200);
  const { calls } = (await res.json()) as { calls: unknown[] };
  expect(calls).toHaveLength(1);
  return calls[0];
}

/** POSTs a message that must be answered `ok` and returns its first focus resource. */
export async function stored<T extends Resource>(app: Hono, request: Bundle, path?: string): Promise<T> {
  const reply = await post(app, request, path ? { path } : {});
  const [first] = expectOk(reply, request, path ?? "/uae-fhir/r4/$process-message");
  expect(first?.id).toEqual(expect.any(String));
  return first as T;
}
