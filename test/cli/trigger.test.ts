import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Bundle, MedicationRequest, Task } from "fhir/r4.js";
import { afterEach, describe, expect, it } from "vitest";
import { focusOf, responseHeader } from "../support/messages.js";
import { closedPort, type Received, startReceiver } from "../support/receiver.js";
import { http, killStray, PROCESS_TIMEOUT_MS, runToExit, startCli } from "./cli-process.js";

// Real processes and sockets: a `serve` child with fixture pharmacies whose endpoints are
// local receivers, and `trigger order` run as a second child against it.

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

/**
 * A sandbox process whose scenario folder holds one fixture pharmacy per
 * licence, each pushing to its own local receiver.
 */
async function sandboxWithPharmacies(licences: readonly string[], args: readonly string[] = []) {
  const dir = mkdtempSync(join(tmpdir(), "trigger-order-"));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  const receivers = new Map<string, Awaited<ReturnType<typeof startReceiver>>>();
  for (const licence of licences) {
    const receiver = await startReceiver();
    cleanups.push(receiver.close);
    receivers.set(licence, receiver);
  }
  const yaml = [
    "fixtures:",
    `  pharmacies:${licences.length === 0 ? " []" : ""}`,
    ...licences.flatMap((licence) => [
      `    - licence: ${licence}`,
      `      name: Pharmacy ${licence}`,
      `      endpoint: ${receivers.get(licence)?.url}`,
      `      headers: { X-Pharmacy-Key: key-${licence} }`,
    ]),
  ].join("\n");
  writeFileSync(join(dir, "pharmacies.yaml"), `${yaml}\n`);
  const { url } = await startCli(["--scenarios", dir, "--no-watch", ...args]);
  return {
    url,
    receiver: (licence: string) => receivers.get(licence) as NonNullable<ReturnType<typeof receivers.get>>,
  };
}

/** The admin call that waits for `count` outbound pushes to be recorded. */
async function outboundRecorded(url: string, count: number, token?: string) {
  const reply = await http(`${url}/__admin/calls/wait`, {
    method: "POST",
    headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: JSON.stringify({ operation: "order-fulfillment-request", direction: "outbound", count, timeoutMs: 5000 }),
  });
  expect(reply.json).toMatchObject({ ok: true, matched: count });
  const calls = await http(`${url}/__admin/calls?direction=outbound`, {
    headers: token ? { authorization: `Bearer ${token}` } : {},
  });
  return calls.json.calls as Array<{ target: string; attempt: number; response: { status: number } | null }>;
}

const CREATED = /^Order (\S+) \((medication|device)\) created: open$/m;

describe("uae-fhir-sandbox trigger order", { timeout: 30_000 }, () => {
  it("creates a generated order on the sandbox at SANDBOX_URL: exit 0, a summary, the pharmacy gets the push", async () => {
    const { url, receiver } = await sandboxWithPharmacies(["PH-TRIGGER-1"]);
    const run = await runToExit(["trigger", "order"], { SANDBOX_URL: url });
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).toBe("");
    const [, id] = CREATED.exec(run.stdout) ?? [];
    expect(id, run.stdout).toBeDefined();
    expect(run.stdout).toMatch(/^ {2}confirm before: \d{4}-\d\d-\d\dT/m);
    expect(run.stdout).toMatch(/^ {4}- PH-TRIGGER-1 \(sent\)$/m);
    expect(run.stdout).toContain(`GET ${url}/__admin/orders/${id}`);

    const order = await http(`${url}/__admin/orders/${id}`);
    expect(order.status).toBe(200);
    // Every item the sandbox generated is listed in the summary, with its code and quantity.
    for (const item of order.json.items as Array<{ code: string; quantity: { value: number } | null }>) {
      expect(run.stdout).toMatch(new RegExp(`^ {4}- ${item.code} .*× ${item.quantity?.value ?? ""}`, "m"));
    }

    const push = await nextPush(receiver("PH-TRIGGER-1"));
    expect(push.headers["x-pharmacy-key"]).toBe("key-PH-TRIGGER-1");
    expect(responseHeader(push.bundle as Bundle).eventCoding?.code).toBe("order-fulfillment-request");
    const task = focusOf(push.bundle as Bundle)[0] as Task;
    expect(task).toMatchObject({ resourceType: "Task", status: "requested", groupIdentifier: { value: id } });
  });

  it("passes --pharmacy, --item, --deadline and --patient through; --json prints the order", async () => {
    const { url, receiver } = await sandboxWithPharmacies(["PH-A", "PH-B"]);
    const patient = "urn:ae:emirates-id|784-1990-1234567-6";
    const run = await runToExit([
      "trigger",
      "order",
      "--url",
      `${url}/`,
      "--pharmacy",
      "PH-B",
      "--item",
      "861007:60",
      "--item",
      "243670",
      "--deadline",
      "30s",
      "--patient",
      patient,
      "--json",
    ]);
    expect(run.code, run.stderr).toBe(0);
    const order = JSON.parse(run.stdout);
    expect(order.pharmacies.map((p: { licence: string }) => p.licence)).toEqual(["PH-B"]);
    expect(order.items.map((i: { code: string; quantity: { value: number } }) => [i.code, i.quantity.value])).toEqual([
      ["861007", 60],
      ["243670", 30],
    ]);
    expect(Date.parse(order.deadline) - Date.parse(order.createdAt)).toBe(30_000);
    expect(order.patient.identifier).toContainEqual({ system: "urn:ae:emirates-id", value: "784-1990-1234567-6" });

    const push = await nextPush(receiver("PH-B"));
    const task = focusOf(push.bundle as Bundle)[0] as Task;
    expect(task.restriction?.period?.end).toBe(order.deadline);
    const requests = (push.bundle as Bundle).entry
      ?.map((e) => e.resource)
      .filter((r): r is MedicationRequest => r?.resourceType === "MedicationRequest");
    expect(
      requests?.map((r) => [r.medicationCodeableConcept?.coding?.[0]?.code, r.dispenseRequest?.quantity?.value]),
    ).toEqual([
      ["861007", 60],
      ["243670", 30],
    ]);
    // Only PH-B was targeted: the one recorded push went to its receiver.
    const outbound = await outboundRecorded(url, 1);
    expect(outbound.map((c) => c.target)).toEqual([receiver("PH-B").url]);
    expect(receiver("PH-A").received).toEqual([]);
  });

  it("sends --token (or ADMIN_TOKEN) to a sandbox with --admin-token; without it: exit 1 naming the fix", async () => {
    const { url, receiver } = await sandboxWithPharmacies(["PH-T"], ["--admin-token", "s3cret"]);

    const without = await runToExit(["trigger", "order", "--url", url]);
    expect(without.code).toBe(1);
    expect(without.stdout).toBe("");
    expect(without.stderr).toContain("HTTP 401");
    expect(without.stderr).toMatch(/--token or ADMIN_TOKEN/);

    const wrong = await runToExit(["trigger", "order", "--url", url, "--token", "nope"]);
    expect(wrong.code).toBe(1);

    const withFlag = await runToExit(["trigger", "order", "--url", url, "--token", "s3cret"]);
    expect(withFlag.code, withFlag.stderr).toBe(0);
    expect(withFlag.stdout).toMatch(CREATED);

    const withEnv = await runToExit(["trigger", "order", "--url", url], { ADMIN_TOKEN: "s3cret" });
    expect(withEnv.code, withEnv.stderr).toBe(0);

    // Two orders were created (flag, env), none by the refused runs.
    const orders = await http(`${url}/__admin/orders`, { headers: { authorization: "Bearer s3cret" } });
    expect(orders.json.orders).toHaveLength(2);
    await nextPush(receiver("PH-T"));
    await nextPush(receiver("PH-T"));
  });

  it.each([
    [
      "an unknown pharmacy",
      ["PH-R"],
      ["--pharmacy", "PH-NOPE"],
      /HTTP 404\):\n {2}not-found: Unknown pharmacy licence\(s\): PH-NOPE\./,
    ],
    ["no subscribed pharmacy", [], [], /HTTP 409\):\n {2}business-rule: No pharmacy has an active subscription/],
  ] as const)("exits 1 with the sandbox's diagnostics for %s", async (_, licences, args, message) => {
    const { url } = await sandboxWithPharmacies(licences);
    const run = await runToExit(["trigger", "order", "--url", url, ...args]);
    expect(run.code).toBe(1);
    expect(run.stdout).toBe("");
    expect(run.stderr).toMatch(/^The sandbox refused the order/);
    expect(run.stderr).toMatch(message);
    const orders = await http(`${url}/__admin/orders`);
    expect(orders.json.orders).toEqual([]);
  });

  it("exits 1 with a readable message when nothing answers at --url", async () => {
    const port = await closedPort();
    const run = await runToExit(["trigger", "order", "--url", `http://127.0.0.1:${port}`]);
    expect(run.code).toBe(1);
    expect(run.stdout).toBe("");
    expect(run.stderr).toContain(`Could not reach the sandbox at http://127.0.0.1:${port}/__admin/orders: `);
    expect(run.stderr).toContain("ECONNREFUSED");
    expect(run.stderr).toMatch(/--url or SANDBOX_URL/);
    expect(run.stderr).not.toMatch(/\n\s+at /); // no stack trace
  });

  it.each([
    [["trigger"], /trigger needs what to trigger/],
    [["trigger", "shipment"], /Unknown trigger: shipment/],
    [["trigger", "order", "--item", "aspirin"], /--item "aspirin": expected an RxNorm code/],
    [["trigger", "order", "--item", "861007:0"], /--item "861007:0"/],
    [["trigger", "order", "--deadline", "soon"], /--deadline "soon": expected a duration/],
    [["trigger", "order", "--url", "ftp://example.ae"], /--url "ftp:\/\/example.ae"/],
    [["trigger", "order", "--url", "not a url"], /--url "not a url"/],
    [["trigger", "order", "--frobnicate"], /frobnicate/],
    [["trigger", "order", "--pharmacy"], /--pharmacy/],
  ] as const)("exits 2 on bad usage: %j", async (args, message) => {
    const port = await closedPort();
    // SANDBOX_URL points nowhere: a usage error must be found before any request is tried.
    const run = await runToExit(args, { SANDBOX_URL: `http://127.0.0.1:${port}` });
    expect(run.code).toBe(2);
    expect(run.stdout).toBe("");
    expect(run.stderr).toMatch(message);
    expect(run.stderr).toContain("trigger order --help");
    expect(run.stderr).not.toContain("Could not reach");
  });

  it("--help prints its options and exits 0; the main --help lists the command", async () => {
    const help = await runToExit(["trigger", "order", "--help"]);
    expect(help.code).toBe(0);
    for (const option of ["--url", "--token", "--pharmacy", "--item", "--deadline", "--patient", "--json"]) {
      expect(help.stdout).toMatch(new RegExp(`^ {2}${option} `, "m"));
    }
    expect(help.stdout).toContain("SANDBOX_URL");
    expect(help.stdout).toContain("ADMIN_TOKEN");
    const main = await runToExit(["--help"]);
    expect(main.stdout).toMatch(/^ {2}uae-fhir-sandbox trigger order \[options\]/m);
  });
});
