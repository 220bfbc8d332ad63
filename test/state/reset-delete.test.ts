import { DatabaseSync } from "node:sqlite";
import { afterEach, describe, expect, it } from "vitest";
import { killStray } from "../cli/cli-process.js";
import { startReceiver } from "../support/receiver.js";
import { exampleOf, type PharmacyPlan, StateSandbox, tempDir } from "./state-sandbox.js";

/**
 * POST /__admin/reset and DELETE /__admin/workspaces/{id} change the state file too: after a restart a reset
 * workspace is at its fixtures (as one never used is), and a deleted one starts afresh.
 */

afterEach(killStray);
const receivers: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  for (const r of receivers.splice(0)) await r.close();
});

const PATIENT = "784-1990-1234567-6";

const RULES = `name: runtime rule
rules:
  - name: no-tasks
    when: { operation: add-task }
    respond: { outcome: { code: business-rule, diagnostics: "No tasks today." } }
`;

/** A workspace's state as a user sees it: its journal, patients, pharmacies, orders and rules. */
async function stateOf(s: StateSandbox, workspace: string) {
  const get = async (path: string) => {
    const reply = await s.admin(path, { workspace });
    expect(reply.status, reply.text).toBe(200);
    return reply.json;
  };
  const { loadedAt: _loadedAt, ...scenarios } = await get("/scenarios");
  return {
    calls: (await get("/calls")).calls,
    patients: await get("/patients?limit=10000"),
    pharmacies: await get("/pharmacies"),
    orders: (await get("/orders")).orders,
    scenarios,
  };
}

/** Rows the state file holds of each workspace, read beside the running sandbox (WAL lets a reader in). */
function rowsByWorkspace(path: string): Record<string, number> {
  const db = new DatabaseSync(path, { readOnly: true });
  try {
    const rows = db.prepare("SELECT workspace, count(*) AS n FROM items GROUP BY workspace").all() as Array<{
      workspace: string;
      n: number;
    }>;
    return Object.fromEntries(rows.map((r) => [r.workspace, Number(r.n)]));
  } finally {
    db.close();
  }
}

/** Messages, a subscription, an order and a runtime rule that was hit, in `workspace`. */
async function use(s: StateSandbox, workspace: string, endpoint: string) {
  const url = workspace === "default" ? s.url : `${s.url}/w/${workspace}`;
  const into = workspace === "default" ? {} : { workspace };
  for (const operation of ["view-patient-profile", "add-allergy", "add-measurement", "add-task"]) {
    const reply = await s.send(exampleOf(operation, { url, patient: PATIENT }), { operation, ...into });
    expect(reply.status, reply.text).toBe(200);
  }
  const pharmacy: PharmacyPlan = { licence: "PH-A", name: "Pharmacy A", endpoint };
  const subscribed = await s.send(
    exampleOf("subscribe-order-notifications", { url, patient: PATIENT, pharmacy }),
    into,
  );
  expect(subscribed.status, subscribed.text).toBe(200);
  const order = await s.admin("/orders", { method: "POST", body: { pharmacies: ["PH-A"] }, ...into });
  expect(order.status, order.text).toBe(201);
  await s.orderWhen(order.json.id, (o) => o.pharmacies[0]?.delivery.deliveredAt != null, workspace);
  expect((await s.addScenario(RULES, workspace === "default" ? undefined : workspace)).status).toBe(201);
  const refused = await s.send(exampleOf("add-task", { url, patient: PATIENT }), { operation: "add-task", ...into });
  expect(refused.headers.get("x-sandbox-rule")).toBe("no-tasks");
}

describe("reset and delete on the state file", { timeout: 30_000 }, () => {
  for (const signal of ["SIGTERM", "SIGKILL"] as const) {
    it(`after ${signal}: a reset workspace is at its fixtures, a deleted one starts afresh`, async () => {
      const receiver = await startReceiver();
      receivers.push(receiver);
      const file = `${tempDir()}/state.db`;
      const first = await StateSandbox.start(["--state-file", file]);
      await use(first, "default", receiver.url);
      await use(first, "team-c", receiver.url);
      const made = (await first.admin("/workspaces")).json.workspaces.find((w: { id: string }) => w.id === "team-c");
      expect(made).toMatchObject({ named: false });

      expect((await first.admin("/reset", { method: "POST", body: {} })).status).toBe(200);
      const reset = await stateOf(first, "default");
      // Reset keeps the rules added at run time, with their counts back at zero; nothing else of what was done.
      expect(reset.calls).toEqual([]);
      expect(reset.orders).toEqual([]);
      expect(reset.scenarios.rules.find((r: { name: string }) => r.name === "no-tasks")).toMatchObject({
        matched: 0,
        answered: 0,
      });
      expect((await first.admin("/workspaces/team-c", { method: "DELETE" })).status).toBe(200);
      // Nothing of team-c is left in the file.
      expect(rowsByWorkspace(file)["team-c"]).toBeUndefined();
      await first.stop(signal);

      const second = await first.restart();
      expect(await stateOf(second, "default")).toEqual(reset);
      // As a workspace that was never used, but for the rule default was given at run time.
      const pristine = await stateOf(second, "never-used");
      expect({ ...(await stateOf(second, "default")), scenarios: null }).toEqual({ ...pristine, scenarios: null });

      const listed = (await second.admin("/workspaces")).json.workspaces.map((w: { id: string }) => w.id);
      expect(listed).not.toContain("team-c");
      const startedAgain = Date.now();
      const fresh = await stateOf(second, "team-c");
      expect(fresh).toEqual(pristine);
      const again = (await second.admin("/workspaces")).json.workspaces.find((w: { id: string }) => w.id === "team-c");
      expect(Date.parse(again.createdAt)).toBeGreaterThanOrEqual(startedAgain);
    });
  }

  it("a push of a deleted workspace that ends after the delete brings nothing of it back", async () => {
    // The pharmacy holds its answer until the workspace is gone.
    const receiver = await startReceiver(() => "hang");
    receivers.push(receiver);
    const file = `${tempDir()}/state.db`;
    const first = await StateSandbox.start(["--state-file", file]);
    const url = `${first.url}/w/team-c`;
    const pharmacy: PharmacyPlan = { licence: "PH-A", name: "Pharmacy A", endpoint: receiver.url };
    const subscribed = await first.send(
      exampleOf("subscribe-order-notifications", { url, patient: PATIENT, pharmacy }),
      {
        workspace: "team-c",
      },
    );
    expect(subscribed.status, subscribed.text).toBe(200);
    const order = await first.admin("/orders", { method: "POST", body: { pharmacies: ["PH-A"] }, workspace: "team-c" });
    expect(order.status, order.text).toBe(201);
    await receiver.next();

    expect((await first.admin("/workspaces/team-c", { method: "DELETE" })).status).toBe(200);
    receiver.release();
    // The push has ended (and been recorded, if anywhere) once the dispatcher holds none.
    const until = Date.now() + 10_000;
    while ((await first.admin("/health")).json.pushes.pending > 0) {
      if (Date.now() > until) throw new Error("the push did not end");
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(rowsByWorkspace(file)["team-c"]).toBeUndefined();
    await first.stop("SIGKILL");

    const second = await first.restart();
    const listed = (await second.admin("/workspaces")).json.workspaces.map((w: { id: string }) => w.id);
    expect(listed).toEqual(["default"]);
  });
});
