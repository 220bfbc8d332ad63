import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { SessionReport } from "../../src/conformance/session-report.js";
import { http, killStray, startCli } from "../cli/cli-process.js";
import { allergyMessage, envelope, STANDARD } from "../support/messages.js";

/**
 * The conformance sessions' admin API on a real sandbox: what a bad request is told (400 naming the field), one
 * session per workspace (409), stopping, a reset stopping it, and the rules a session adds answering only its own
 * workspace's messages and going with it.
 */

let url: string;
beforeAll(async () => {
  // Pushes only to example.org: a pharmacy URL elsewhere is refused as a Subscription endpoint would be.
  ({ url } = await startCli(["--push-allow", "example.org"]));
});
afterAll(killStray);

const sessionsOf = (workspace: string) => `${url}/w/${workspace}/__admin/conformance/sessions`;

const start = (workspace: string, body: unknown) =>
  http(sessionsOf(workspace), {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });

const diagnostics = (json: { issue?: Array<{ diagnostics: string }> }) => (json.issue ?? []).map((i) => i.diagnostics);

const send = (workspace: string) =>
  http(`${url}/w/${workspace}${STANDARD}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: envelope(allergyMessage()),
  });

const runtimeRules = async (workspace: string) =>
  (
    (await http(`${url}/w/${workspace}/__admin/scenarios`)).json.rules as Array<{ name: string; source: string }>
  ).filter((r) => r.source.startsWith("runtime-"));

/** Polls the session until `until` holds for its report (bounded). */
async function readUntil(workspace: string, id: string, until: (r: SessionReport) => boolean): Promise<SessionReport> {
  for (let i = 0; i < 200; i++) {
    const report = (await http(`${sessionsOf(workspace)}/${id}`)).json as SessionReport;
    if (until(report)) return report;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`session ${id} never got there`);
}

describe("POST /__admin/conformance/sessions refuses a bad body with a 400 naming the field", () => {
  it.each([
    ["an unknown role", { role: "pharmacy" }, /^role: "pharmacy" is not a role/],
    ["no role", {}, /^role: /],
    ["an unknown plan", { role: "sender", plan: "nope" }, /^plan: no plan "nope"; the plans are .*sender/],
    [
      "a plan of the other role",
      { role: "receiver", plan: "sender" },
      /^plan: plan sender is a sender plan, not one for the receiver role$/,
    ],
    [
      "a time scale below 0.01",
      { role: "sender", timeScale: 0.001 },
      /^timeScale: 0.001 is out of range: give a number from 0.01 to 10$/,
    ],
    ["a time scale above 10", { role: "sender", timeScale: 11 }, /^timeScale: 11 is out of range/],
    [
      "a pharmacy URL that is not http(s)",
      { role: "receiver", pharmacyUrl: "ftp://example.org/hook" },
      /^pharmacyUrl: "ftp:\/\/example.org\/hook" is not an http:\/\/ or https:\/\/ URL$/,
    ],
    [
      "a pharmacy URL --push-allow does not allow",
      { role: "receiver", pharmacyUrl: "http://127.0.0.1:9/hook" },
      /^pharmacyUrl: the sandbox may not push to 127.0.0.1:9: allowed hosts are example.org \(--push-allow\)$/,
    ],
    [
      "an operation the sandbox does not know",
      { role: "sender", operations: ["add-allergy", "fly"] },
      /^operations\[1\]: "fly" is not an operation/,
    ],
    ["an unknown key", { role: "sender", speed: 2 }, /speed/],
  ])("%s", async (_what, body, message) => {
    const answer = await start("bad-bodies", body);
    expect(answer.status).toBe(400);
    expect(answer.json.resourceType).toBe("OperationOutcome");
    expect(diagnostics(answer.json).join("\n")).toMatch(message);
  });

  it("a body that is not JSON", async () => {
    const answer = await start("bad-bodies", "{role:");
    expect(answer.status).toBe(400);
    expect(diagnostics(answer.json)[0]).toMatch(/^The body is not valid JSON/);
  });

  it("starts nothing", async () => {
    expect((await http(sessionsOf("bad-bodies"))).json).toEqual({ sessions: [] });
  });
});

describe("sessions in workspaces", () => {
  it("runs one session per workspace (409 for a second), answers only its own workspace's messages, and its rules go when it is stopped", async () => {
    // A rule of the team's own, added before the session: the session's answer comes before it, and it stays.
    const own = { rules: [{ name: "team rule", when: { operation: "add-allergy" }, respond: { builtIn: true } }] };
    const added = await http(`${url}/w/team-a/__admin/scenarios`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(own),
    });
    expect(added.status).toBe(201);
    const first = await start("team-a", { role: "sender" });
    expect(first.status).toBe(201);
    const a = first.json as SessionReport;
    expect(first.headers.get("location")).toBe(`/w/team-a/__admin/conformance/sessions/${a.id}`);
    expect(a.workspace).toBe("team-a");
    expect(a.participants.sandbox.messageUrl).toBe(`${url}/w/team-a${STANDARD}`);

    const second = await start("team-a", { role: "sender" });
    expect(second.status).toBe(409);
    expect(diagnostics(second.json)[0]).toContain(a.id);

    // The first test passes on any valid message; the second one's rule then answers team-a's next message 503.
    expect((await send("team-a")).status).toBe(200);
    await readUntil("team-a", a.id, (r) => r.tests[1]?.steps[0]?.status === "running");
    expect((await runtimeRules("team-a")).map((r) => r.name)).toEqual([
      expect.stringMatching(/^conformance /),
      "team rule",
    ]);
    expect(await runtimeRules("team-b")).toEqual([]);
    // team-b's message is answered by the sandbox as always, never by team-a's session.
    const b = await send("team-b");
    expect(b.status).toBe(200);
    expect((await http(`${sessionsOf("team-a")}/${a.id}`)).json.tests[1].steps[0].status).toBe("running");
    expect((await send("team-a")).status).toBe(503);

    const listed = (await http(sessionsOf("team-a"))).json.sessions as Array<{ id: string; state: string }>;
    expect(listed.map((s) => [s.id, s.state])).toEqual([[a.id, "running"]]);
    expect((await http(sessionsOf("team-b"))).json.sessions).toEqual([]);
    expect((await http(`${sessionsOf("team-b")}/${a.id}`)).status).toBe(404);

    const stopped = await http(`${sessionsOf("team-a")}/${a.id}`, { method: "DELETE" });
    expect(stopped.status).toBe(200);
    expect(stopped.json.state).toBe("stopped");
    expect(stopped.json.stopReason).toBe("stopped through the admin API");
    expect((await runtimeRules("team-a")).map((r) => r.name)).toEqual(["team rule"]);
    // The workspace is free again.
    const again = await start("team-a", { role: "sender" });
    expect(again.status).toBe(201);
    await http(`${sessionsOf("team-a")}/${again.json.id}`, { method: "DELETE" });
  });

  it("a reset of the workspace stops its session and removes its rules", async () => {
    const started = await start("team-c", { role: "sender" });
    const id = (started.json as SessionReport).id;
    expect((await send("team-c")).status).toBe(200);
    await readUntil("team-c", id, (r) => r.tests[1]?.steps[0]?.status === "running");
    expect(await runtimeRules("team-c")).toHaveLength(1);

    expect((await http(`${url}/w/team-c/__admin/reset`, { method: "POST" })).status).toBe(200);
    const report = (await http(`${sessionsOf("team-c")}/${id}?wait=5s`)).json as SessionReport;
    expect(report.state).toBe("stopped");
    expect(report.stopReason).toBe("the workspace was reset");
    expect(report.tests[1]?.steps[0]?.status).toBe("skip");
    expect(report.tests[2]?.status).toBe("pending");
    expect(await runtimeRules("team-c")).toEqual([]);
  });

  it("deleting the workspace stops its session, and forgets it", async () => {
    const started = await start("team-e", { role: "sender" });
    const id = (started.json as SessionReport).id;
    const ended = http(`${sessionsOf("team-e")}/${id}?wait=10s`);
    expect((await http(`${url}/__admin/workspaces/team-e`, { method: "DELETE" })).status).toBe(200);
    const report = (await ended).json as SessionReport;
    expect(report.state).toBe("stopped");
    expect(report.stopReason).toBe("the workspace was deleted");
    expect((await http(`${sessionsOf("team-e")}/${id}`)).status).toBe(404);
  });

  it("GET …?wait= holds the answer until the session ends", async () => {
    const started = await start("team-d", { role: "sender", timeScale: 0.01 });
    const id = (started.json as SessionReport).id;
    // No message comes: the first test fails after its 60 s, at a hundredth: 0.6 s; and every later one in turn.
    const report = (await http(`${sessionsOf("team-d")}/${id}?wait=30s`)).json as SessionReport;
    expect(report.state).toBe("failed");
    expect(report.tests[0]?.steps[0]?.message).toMatch(
      /^expected a valid message, accepted ok, within 0.6 s; saw no message$/,
    );
    expect(await runtimeRules("team-d")).toEqual([]);
  }, 40_000);

  it("lists the plans and serves each as JSON", async () => {
    const plans = (await http(`${url}/__admin/conformance/plans`)).json.plans as Array<{
      id: string;
      role: string;
      source: string;
      tests: Array<{ id: string }>;
    }>;
    const sender = plans.find((p) => p.id === "sender");
    expect(sender?.role).toBe("sender");
    expect(sender?.source).toBe("conformance/sender.yaml");
    expect(sender?.tests.map((t) => t.id)).toEqual([
      "declared-operations",
      "transient-error-retried",
      "timeout-retried",
      "fatal-error-not-retried",
      "conflict-new-id",
      "retry-after-honoured",
      "expired-token",
    ]);
    const plan = await http(`${url}/__admin/conformance/plans/sender`);
    expect(plan.json.rules["resend-same-id"].ref).toBe("https://hl7.org/fhir/R4/messaging.html#reliable");
    expect((await http(`${url}/__admin/conformance/plans/nope`)).status).toBe(404);
  });
});
