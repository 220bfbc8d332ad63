import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { AllergyIntolerance } from "fhir/r4.js";
import { afterEach, describe, expect, it } from "vitest";
import { createApp, type SandboxApp } from "../../src/app.js";
import { quietLogger } from "../orders/pharmacy-client.js";
import { loggedSandbox } from "../support/log-output.js";
import { example, messageBundle, post, STANDARD } from "../support/messages.js";
import { within } from "../support/within.js";
import { WORKSPACE_HEADER } from "./workspace-client.js";

// What observes the whole sandbox hears every workspace, each call naming its own: one sequence of call ids
// (X-Sandbox-Call-Id, --journal-file), the request log. What observes one workspace hears only it: the
// dashboard's event stream.

const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

const allergy = () => messageBundle("add-allergy", [example<AllergyIntolerance>("allergyintolerance-example.json")]);
const inWorkspace = (app: SandboxApp["app"], name: string) =>
  post(app, allergy(), name === "default" ? {} : { path: `/w/${name}${STANDARD}` });

describe("call ids across workspaces", () => {
  it("are one sequence: every answer's X-Sandbox-Call-Id is new, and --journal-file names each call's workspace", async () => {
    const dir = mkdtempSync(join(tmpdir(), "workspace-journal-"));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const file = join(dir, "calls.ndjson");
    const s = createApp({ journalFile: file }, { logger: quietLogger });
    cleanups.push(s.close);

    const order = ["default", "team-a", "team-b", "team-a", "default", "team-b"];
    const ids: string[] = [];
    for (const name of order) ids.push((await inWorkspace(s.app, name)).headers.get("x-sandbox-call-id") as string);
    // Numbered 1, 2, 3… across workspaces, as one journal would.
    expect(ids).toEqual(["1", "2", "3", "4", "5", "6"]);

    s.close();
    const lines = readFileSync(file, "utf8")
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { id: string; workspace: string });
    expect(lines.map((l) => [l.id, l.workspace])).toEqual(order.map((name, i) => [String(i + 1), name]));
    // And each workspace's journal holds its own.
    expect(s.journal.list().map((c) => c.id)).toEqual(["1", "5"]);
  });

  it("a call of another workspace is not found by id in this one", async () => {
    const s = createApp({}, { logger: quietLogger });
    cleanups.push(s.close);
    const id = (await inWorkspace(s.app, "team-a")).headers.get("x-sandbox-call-id");
    expect((await s.app.request(`/__admin/calls/${id}`)).status).toBe(404);
    expect((await s.app.request(`/w/team-a/__admin/calls/${id}`)).status).toBe(200);
  });
});

describe("the request log names the workspace of a call when it is not the default one", () => {
  it("as JSON: a workspace key on other workspaces' lines only", async () => {
    const { sandbox, out } = loggedSandbox({ format: "json" });
    cleanups.push(sandbox.close);
    const a = await inWorkspace(sandbox.app, "team-a");
    const d = await inWorkspace(sandbox.app, "default");
    await out.waitFor(new RegExp(`"callId":"${d.headers.get("x-sandbox-call-id")}"`));
    const calls = out.events().filter((e) => e.event === "call");
    expect(calls.map((e) => [e.callId, e.workspace])).toEqual([
      [a.headers.get("x-sandbox-call-id"), "team-a"],
      [d.headers.get("x-sandbox-call-id"), undefined],
    ]);
  });

  it("pretty: [team-a] on its line", async () => {
    const { sandbox, out } = loggedSandbox({ format: "pretty" });
    cleanups.push(sandbox.close);
    const id = (await inWorkspace(sandbox.app, "team-a")).headers.get("x-sandbox-call-id");
    await out.waitFor(new RegExp(`IN  add-allergy .* #${id} +\\[team-a\\]$`, "m"));
  });
});

/** The data of the `call` events of an event stream, read until `count` of them came. */
async function callEvents(body: ReadableStream<Uint8Array>, count: number): Promise<Array<{ id: string }>> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let text = "";
  const found: Array<{ id: string }> = [];
  while (found.length < count) {
    const { done, value } = await within(reader.read(), "the next event");
    if (done) break;
    text += decoder.decode(value, { stream: true });
    for (let end = text.indexOf("\n\n"); end >= 0; end = text.indexOf("\n\n")) {
      const frame = text.slice(0, end);
      text = text.slice(end + 2);
      const data = /^data: (.*)$/m.exec(frame)?.[1];
      if (/^event: call$/m.test(frame) && data) found.push(JSON.parse(data));
    }
  }
  await reader.cancel();
  return found;
}

describe("GET /__admin/events (the dashboard's live stream) of a workspace", () => {
  it.each([
    ["prefix", (app: SandboxApp["app"]) => app.request("/w/team-a/__admin/events")],
    [
      "header",
      (app: SandboxApp["app"]) => app.request("/__admin/events", { headers: { [WORKSPACE_HEADER]: "team-a" } }),
    ],
  ])("named by %s, streams that workspace's calls only", async (_, open) => {
    const s = createApp({}, { logger: quietLogger });
    cleanups.push(s.close);
    const res = await open(s.app);
    expect(res.status).toBe(200);
    const events = callEvents(res.body as ReadableStream<Uint8Array>, 1);

    await inWorkspace(s.app, "team-b");
    await inWorkspace(s.app, "default");
    const mine = (await inWorkspace(s.app, "team-a")).headers.get("x-sandbox-call-id");

    expect((await events).map((e) => e.id)).toEqual([mine]);
  });
});
