import { readFileSync } from "node:fs";
import type { Bundle, MessageHeader, OperationOutcome } from "fhir/r4.js";
import { afterEach, describe, expect, it } from "vitest";
import { killStray } from "../cli/cli-process.js";
import { subscriptionMessage } from "../orders/pharmacy-client.js";
import { startReceiver } from "../support/receiver.js";
import {
  genuineCall,
  type SharedSandbox,
  startSharedSandbox,
  TEAMS,
  type Team,
  timed,
  untouched,
} from "./shared-sandbox.js";

// Issue 21, defect 4: server-side request forgery with the answer readable. A tenant, with only its own
// credentials, subscribes a pharmacy whose channel.endpoint is an internal address of the host, creates an order
// with its admin token, and reads the internal service's answer from its outbound calls in the journal. Here the
// "internal service" is a receiver on 127.0.0.1 holding a secret; the shared sandbox runs as
// docs/shared-sandbox.md sets it up (--auth oauth2, no --push-allow).

afterEach(killStray);

const SECRET = "INTERNAL-SERVICE-SECRET-7f3a";

/** A service of the host, on 127.0.0.1, answering anything with its secret (and a megabyte of more). */
async function internalService() {
  return startReceiver(() => ({ status: 200, body: `{"secret":"${SECRET}"}`, fill: 1024 * 1024 }));
}

const json = { "content-type": "application/json" };

interface Pharmacy {
  licence: string;
  state: string;
}
interface Outbound {
  pharmacy: string;
  attempt: number;
  error?: string;
  response: { body: unknown } | null;
}

/** Creates an order with a team's admin token and waits (bounded) until none of its deliveries is under way. */
async function orderSettled(sandbox: SharedSandbox, team: Team) {
  const admin = TEAMS[team].admin;
  const created = await sandbox.admin(team, "/orders", admin, { method: "POST", headers: json, body: "{}" });
  expect(created.status, created.text).toBe(201);
  const id = created.json.id as string;
  const deadline = Date.now() + 30_000;
  for (;;) {
    const order = await sandbox.admin(team, `/orders/${id}`, admin);
    const states = (order.json.pharmacies as Array<{ state: string }>).map((p) => p.state);
    if (!states.includes("sent")) return order;
    if (Date.now() > deadline) throw new Error(`order ${id} still has deliveries under way: ${states}`);
    await new Promise((resolve) => setImmediate(resolve));
  }
}

/** The fatal-error answer's OperationOutcome diagnostics (CONTRACT §5, processed and refused). */
function refusal(bundle: Bundle): string {
  expect((bundle.entry?.[0]?.resource as MessageHeader | undefined)?.response?.code).toBe("fatal-error");
  const outcome = bundle.entry?.find((e) => e.resource?.resourceType === "OperationOutcome")
    ?.resource as OperationOutcome;
  return outcome.issue.map((i) => i.diagnostics).join(" ");
}

describe("SSRF through a pharmacy's endpoint (issue 21, defect 4)", () => {
  it("team-a aims its pharmacy at an internal service: refused, the secret never in its answers or journal; team-b untouched", {
    timeout: 90_000,
  }, async () => {
    const service = await internalService();
    const sandbox = await startSharedSandbox();
    try {
      const evidence = await genuineCall(sandbox, "team-b");
      const port = new URL(service.url).port;

      // The literal address is refused at once, the name form when the push connects.
      const literal = await sandbox.send("team-a", subscriptionMessage("PH-LITERAL", service.url));
      expect(literal.status, literal.text).toBe(200);
      expect(refusal(literal.json)).toMatch(/127\.0\.0\.1.*loopback.*--push-allow/);
      const mapped = `http://[::ffff:127.0.0.1]:${port}/fhir-hook`;
      expect(refusal((await sandbox.send("team-a", subscriptionMessage("PH-MAPPED", mapped))).json)).toContain(
        "--push-allow",
      );
      const named = await sandbox.send("team-a", subscriptionMessage("PH-NAMED", `http://localhost:${port}/x`));
      expect(named.status, named.text).toBe(200);

      const attack = await timed(() => orderSettled(sandbox, "team-a"));

      // Its subscribed pharmacy; the shipped fixture PH-DXB-0001 (localhost:9090) is refused the same way.
      const delivery = attack.result.json.pharmacies as Pharmacy[];
      expect(delivery.find((p) => p.licence === "PH-NAMED")?.state).toBe("delivery-failed");
      expect(delivery.map((p) => p.licence)).not.toContain("PH-LITERAL");
      expect(service.received).toHaveLength(0);
      const admin = TEAMS["team-a"].admin;
      const outbound = await sandbox.admin("team-a", "/calls?direction=outbound", admin);
      const calls = (outbound.json.calls as Outbound[]).filter((c) => c.pharmacy === "PH-NAMED");
      expect(calls).toHaveLength(1);
      expect(calls[0]).toMatchObject({ attempt: 1, response: null });
      expect(calls[0]?.error).toMatch(/localhost resolves to .*loopback.*--push-allow/);
      const everything = [
        (await sandbox.admin("team-a", "/calls", admin)).text,
        (await sandbox.admin("team-a", "/calls/export?format=ndjson", admin)).text,
        attack.result.text,
        readFileSync(sandbox.journalFile, "utf8"),
      ].join("\n");
      expect(everything).not.toContain(SECRET);
      await untouched(sandbox, evidence);
    } finally {
      sandbox.stop();
      await service.close();
    }
  });

  it("a receiver --push-allow names on the host's network is reached, and only 4 KiB of its answer kept", {
    timeout: 90_000,
  }, async () => {
    const service = await internalService();
    const sandbox = await startSharedSandbox(["--push-allow", "*,127.0.0.1"]);
    try {
      const evidence = await genuineCall(sandbox, "team-b");
      const subscribed = await sandbox.send("team-a", subscriptionMessage("PH-LOCAL", service.url));
      expect((subscribed.json.entry[0].resource as MessageHeader).response?.code, subscribed.text).toBe("ok");

      const order = await orderSettled(sandbox, "team-a");

      expect((order.json.pharmacies as Pharmacy[]).find((p) => p.licence === "PH-LOCAL")?.state).toBe("delivered");
      expect(service.received).toHaveLength(1);
      const outbound = await sandbox.admin("team-a", "/calls?direction=outbound", TEAMS["team-a"].admin);
      const call = (outbound.json.calls as Outbound[]).find((c) => c.pharmacy === "PH-LOCAL");
      const body = String(call?.response?.body);
      expect(body).toContain(SECRET);
      expect(body.length).toBeLessThan(4 * 1024 + 200);
      expect(body).toMatch(/…\[cut: the answer was .* bytes; the journal keeps the first 4096\]$/);
      await untouched(sandbox, evidence);
    } finally {
      sandbox.stop();
      await service.close();
    }
  });
});
