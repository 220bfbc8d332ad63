import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Bundle } from "fhir/r4.js";
import { afterEach, describe, expect, it } from "vitest";
import { envelope, example, messageBundle, responseHeader } from "../support/messages.js";
import { type Received, startReceiver } from "../support/receiver.js";
import { http, killStray, PROCESS_TIMEOUT_MS, runToExit, startCli } from "./cli-process.js";

// Real processes and sockets: which Content-Type each body the sandbox sends carries. The `{"content": …}` envelope
// is JSON that holds a FHIR Bundle as a string, not a FHIR resource: application/json. A FHIR body (a response
// message, an OperationOutcome, the CapabilityStatement) is application/fhir+json. Both with charset=utf-8.

const ENVELOPE_TYPE = "application/json; charset=utf-8";
const FHIR_TYPE = "application/fhir+json; charset=utf-8";

const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  await killStray();
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A receiver's next push, or a rejection when none comes in time. */
function nextPush(receiver: Awaited<ReturnType<typeof startReceiver>>): Promise<Received> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no push within ${PROCESS_TIMEOUT_MS} ms`)), PROCESS_TIMEOUT_MS);
  });
  return Promise.race([receiver.next(), late]).finally(() => clearTimeout(timer));
}

/** A sandbox process with one fixture pharmacy whose endpoint is a receiver on 127.0.0.1. */
async function sandboxWithPharmacy(args: readonly string[]) {
  const dir = mkdtempSync(join(tmpdir(), "content-types-"));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  const receiver = await startReceiver();
  cleanups.push(receiver.close);
  writeFileSync(
    join(dir, "pharmacies.yaml"),
    [
      "fixtures:",
      "  pharmacies:",
      "    - licence: PH-CT",
      "      name: Pharmacy CT",
      `      endpoint: ${receiver.url}`,
      "",
    ].join("\n"),
  );
  const { url } = await startCli(["--scenarios", dir, "--no-watch", ...args]);
  return { url, receiver };
}

const send = (url: string, body: string) =>
  http(`${url}/uae-fhir/r4/$process-message`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body,
  });

describe("Content-Type of what the sandbox sends", { timeout: 40_000 }, () => {
  it("a push to a pharmacy is the envelope: application/json", async () => {
    const { url, receiver } = await sandboxWithPharmacy([]);
    const run = await runToExit(["trigger", "order"], { SANDBOX_URL: url });
    expect(run.code, run.stderr).toBe(0);
    const push = await nextPush(receiver);
    expect(push.headers["content-type"]).toBe(ENVELOPE_TYPE);
    // It is the envelope indeed: a Bundle as a JSON string under "content".
    expect(responseHeader(push.bundle as Bundle).eventCoding?.code).toBe("order-fulfillment-request");
  });

  it("--response-envelope: the enveloped answer is application/json; FHIR bodies stay application/fhir+json", async () => {
    const { url } = await sandboxWithPharmacy(["--response-envelope"]);
    const ok = await send(url, envelope(messageBundle("add-allergy", [example("allergyintolerance-example.json")])));
    expect(ok.status).toBe(200);
    expect(Object.keys(ok.json)).toEqual(["content"]);
    expect(ok.headers.get("content-type")).toBe(ENVELOPE_TYPE);

    // Not processed: a bare OperationOutcome, not enveloped, is FHIR.
    const refused = await send(
      url,
      envelope(messageBundle("make-coffee", [example("allergyintolerance-example.json")])),
    );
    expect(refused.status).toBe(400);
    expect(refused.json.resourceType).toBe("OperationOutcome");
    expect(refused.headers.get("content-type")).toBe(FHIR_TYPE);

    const metadata = await http(`${url}/uae-fhir/r4/metadata`);
    expect(metadata.json.resourceType).toBe("CapabilityStatement");
    expect(metadata.headers.get("content-type")).toBe(FHIR_TYPE);
  });

  it("without --response-envelope the response message is FHIR: application/fhir+json", async () => {
    const { url } = await startCli([]);
    const ok = await send(url, envelope(messageBundle("add-allergy", [example("allergyintolerance-example.json")])));
    expect(ok.status).toBe(200);
    expect(ok.json.resourceType).toBe("Bundle");
    expect(ok.headers.get("content-type")).toBe(FHIR_TYPE);
  });
});
