import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { AllergyIntolerance, Bundle, BundleEntry, Patient } from "fhir/r4.js";
import { emiratesId } from "../support/emirates-id.js";
import { envelope, messageBundle, STANDARD } from "../support/messages.js";

/** A fresh directory for a test's state file, removed by the returned function. */
export function tempDir(prefix = "sandbox-state-"): { dir: string; file: string; remove(): void } {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  return { dir, file: join(dir, "sandbox.db"), remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/** The n-th test patient's Emirates ID (birth year 1985, serials 5000001…): valid, computed by the test's own Luhn. */
export const patientId = (n: number) => emiratesId(1985, 5_000_000 + n);

/**
 * An add-allergy message for a patient, its MessageHeader id `id`; the allergy's code text carries the id too, so
 * the allergy can be found in the patient's profile whether or not its answer came back.
 */
export function allergyMessage(id: string, patient: string): Bundle {
  return messageBundle(
    "add-allergy",
    [
      {
        resourceType: "AllergyIntolerance",
        clinicalStatus: {
          coding: [{ system: "http://terminology.hl7.org/CodeSystem/allergyintolerance-clinical", code: "active" }],
        },
        code: { text: `marker ${id}` },
        patient: { identifier: { system: "urn:ae:emirates-id", value: patient } },
      } as AllergyIntolerance,
    ],
    { id },
  );
}

/** A view-patient-profile message for a patient. */
export function profileMessage(patient: string): Bundle {
  return messageBundle("view-patient-profile", [
    { resourceType: "Patient", identifier: [{ system: "urn:ae:emirates-id", value: patient }] } as Patient,
  ]);
}

export interface Posted {
  status: number;
  headers: Headers;
  text: string;
}

/** POSTs an envelope to a running sandbox, bounded. */
export async function postTo(url: string, bundle: Bundle | string, timeoutMs = 10_000): Promise<Posted> {
  const res = await fetch(`${url}${STANDARD}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: typeof bundle === "string" ? bundle : envelope(bundle),
    signal: AbortSignal.timeout(timeoutMs),
  });
  return { status: res.status, headers: res.headers, text: await res.text() };
}

/** The AllergyIntolerance resources of a response message (or any Bundle). */
export function allergiesIn(bundle: Bundle): AllergyIntolerance[] {
  return (bundle.entry ?? [])
    .map((e: BundleEntry) => e.resource)
    .filter((r): r is AllergyIntolerance => r?.resourceType === "AllergyIntolerance");
}

/** The allergies of a patient's view-patient-profile on a running sandbox: server id → code text. */
export async function profileAllergies(url: string, patient: string): Promise<Map<string, string>> {
  const reply = await postTo(url, profileMessage(patient));
  if (reply.status !== 200) throw new Error(`view-patient-profile answered ${reply.status}: ${reply.text}`);
  return new Map(allergiesIn(JSON.parse(reply.text) as Bundle).map((a) => [a.id as string, a.code?.text ?? ""]));
}

/** A recorded call as GET /__admin/calls?view=summary lists it (the fields the tests read). */
export interface ListedCall {
  id: string;
  messageId: string | null;
  operation: string | null;
  status: number | null;
  duplicate?: boolean;
}

/** Every call GET /__admin/calls lists (its summary view), paged oldest first. */
export async function allCalls(url: string, query = "", headers: Record<string, string> = {}): Promise<ListedCall[]> {
  const calls: ListedCall[] = [];
  let cursor: string | null = "0";
  while (cursor !== null) {
    const res = await fetch(`${url}/__admin/calls?view=summary&limit=500&cursor=${cursor}${query ? `&${query}` : ""}`, {
      headers,
      signal: AbortSignal.timeout(10_000),
    });
    if (res.status !== 200) throw new Error(`GET /__admin/calls answered ${res.status}: ${await res.text()}`);
    const page = (await res.json()) as { calls: ListedCall[]; next: string | null };
    calls.push(...page.calls);
    cursor = page.next;
  }
  return calls;
}
