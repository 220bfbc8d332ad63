import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { AllergyIntolerance, Bundle } from "fhir/r4.js";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { http, killStray, ROOT, startCli } from "../cli/cli-process.js";
import { confirmationTask, fromPharmacy, subscriptionMessage, taskOf } from "../orders/pharmacy-client.js";
import { envelope, example, messageBundle, responseHeader, STANDARD } from "../support/messages.js";
import { closedPort, startReceiver } from "../support/receiver.js";
import { WORKSPACE_HEADER } from "./workspace-client.js";

// docs/shared-sandbox.md's nginx configuration, as written there, in front of two sandbox processes: a workspace,
// named by prefix or by header, always reaches the same process; default too; a push's answer comes back to it.
// Debian's nginx (.ci/run installs it when missing).

const NGINX = "/usr/sbin/nginx";
/** Why this file cannot run here, if it cannot: said on each skipped test; under .ci/run (NGINX_REQUIRED) a failure. */
const MISSING = existsSync(NGINX)
  ? undefined
  : `needs nginx at ${NGINX}, which is not installed here: CI runs it (.ci/run installs nginx-light); to run it locally, apt-get install nginx-light`;
const GUIDE = join(ROOT, "docs", "shared-sandbox.md");

/** The guide's nginx block, its upstream servers and listen address replaced by this test's. */
function guideConfig(sandboxes: readonly string[], port: number): string {
  const block = /```nginx\n([\s\S]*?)```/.exec(readFileSync(GUIDE, "utf8"))?.[1];
  if (!block) throw new Error(`no nginx block in ${GUIDE}`);
  expect(block.match(/^\s*server sandbox-\d:8080;$/gm)).toHaveLength(2);
  let next = 0;
  return block
    .replace(/server sandbox-\d:8080;/g, () => `server ${new URL(sandboxes[next++] as string).host};`)
    .replace(/listen 80;/, `listen 127.0.0.1:${port};`);
}

/** nginx in the foreground, one process, everything it writes under `dir`. */
async function startNginx(dir: string, site: string, port: number): Promise<ChildProcess> {
  for (const sub of ["body", "proxy", "fastcgi", "uwsgi", "scgi"]) mkdirSync(join(dir, sub));
  writeFileSync(join(dir, "uae-fhir-sandbox.conf"), site);
  writeFileSync(
    join(dir, "nginx.conf"),
    [
      "daemon off;",
      "master_process off;",
      `pid ${join(dir, "nginx.pid")};`,
      "error_log stderr warn;",
      "events { worker_connections 256; }",
      "http {",
      "  access_log off;",
      ...["body", "proxy", "fastcgi", "uwsgi", "scgi"].map(
        (sub) => `  ${sub === "body" ? "client_body" : sub}_temp_path ${join(dir, sub)};`,
      ),
      `  include ${join(dir, "uae-fhir-sandbox.conf")};`,
      "}",
    ].join("\n"),
  );
  const child = spawn(NGINX, ["-p", dir, "-c", join(dir, "nginx.conf")], { stdio: ["ignore", "ignore", "pipe"] });
  let said = "";
  child.stderr?.on("data", (chunk) => {
    said += chunk;
  });
  // Ready once it answers; connection refusals come back at once, so this loop is bounded by attempts, not sleeps.
  for (let attempt = 0; ; attempt++) {
    if (child.exitCode !== null) throw new Error(`nginx exited (${child.exitCode}): ${said}`);
    try {
      await fetch(`http://127.0.0.1:${port}/__admin/health`, { signal: AbortSignal.timeout(2_000) });
      return child;
    } catch (error) {
      if (attempt >= 2_000) throw new Error(`nginx did not answer on port ${port}: ${said} ${error}`);
    }
  }
}

let dir: string | undefined;
let nginx: ChildProcess | undefined;
let lb: string;
let sandboxes: string[];

beforeAll(async () => {
  if (MISSING) {
    if (process.env.NGINX_REQUIRED) throw new Error(MISSING);
    // The default reporter shows a skipped test's count, not its reason: said once here too.
    console.warn(`test/workspace/nginx-shard.test.ts skipped: ${MISSING}`);
    return;
  }
  const here = mkdtempSync(join(tmpdir(), "uae-nginx-"));
  dir = here;
  const port = await closedPort();
  lb = `http://127.0.0.1:${port}`;
  // Started alike, as the guide says: the same public URL, the load balancer's.
  const started = await Promise.all([0, 1].map(() => startCli(["--no-watch", "--quiet", "--public-url", lb])));
  sandboxes = started.map((s) => s.url);
  nginx = await startNginx(here, guideConfig(sandboxes, port), port);
}, 60_000);

afterAll(async () => {
  if (nginx && nginx.exitCode === null) {
    const exited = once(nginx, "exit");
    nginx.kill("SIGTERM");
    await exited;
  }
  await killStray();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

beforeEach((context) => {
  if (MISSING) context.skip(MISSING);
});

const allergy = () =>
  envelope(messageBundle("add-allergy", [example<AllergyIntolerance>("allergyintolerance-example.json")]));
const message = (path: string, headers: Record<string, string> = {}) =>
  http(`${lb}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: allergy(),
  });

/** Each process's workspaces and their call counts, asked of the process itself. */
async function held(): Promise<Array<Map<string, number>>> {
  return Promise.all(
    sandboxes.map(async (url) => {
      const reply = await http(`${url}/__admin/workspaces`);
      return new Map(reply.json.workspaces.map((w: { id: string; calls: number }) => [w.id, w.calls]));
    }),
  );
}

describe("docs/shared-sandbox.md: nginx hashing on the workspace, two sandbox processes", { timeout: 60_000 }, () => {
  it("a workspace reaches the same process by prefix and by header, again and again; each process has some", async () => {
    const names = Array.from({ length: 16 }, (_, i) => `team-${i}`);
    for (const name of names) {
      expect((await message(`/w/${name}${STANDARD}`)).status).toBe(200);
      expect((await message(STANDARD, { [WORKSPACE_HEADER]: name })).status).toBe(200);
      expect((await message(`/w/${name}${STANDARD}`)).status).toBe(200);
    }
    const [first, second] = (await held()) as [Map<string, number>, Map<string, number>];
    for (const name of names) {
      // On exactly one process, with all three of its calls.
      expect(
        [first.get(name), second.get(name)].filter((n) => n !== undefined),
        name,
      ).toEqual([3]);
    }
    const onFirst = names.filter((n) => first.has(n));
    expect(onFirst.length, "workspaces on the first process").toBeGreaterThan(0);
    expect(onFirst.length, "workspaces on the second process").toBeLessThan(names.length);
  });

  it("a request naming no workspace always reaches the same process (default)", async () => {
    const before = (await held()).map((m) => m.get("default") ?? 0);
    for (let i = 0; i < 4; i++) expect((await message(STANDARD)).status).toBe(200);
    const after = (await held()).map((m) => m.get("default") ?? 0);
    expect(after.map((n, i) => n - (before[i] as number)).sort()).toEqual([0, 4]);
  });

  it("a workspace's push names the load balancer and its prefix; the pharmacy's answer there reaches its process", async () => {
    const receiver = await startReceiver();
    try {
      const base = `${lb}/w/pharmacy-team`;
      const subscribed = await http(`${base}${STANDARD}`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: envelope(subscriptionMessage("PH-LB-1", receiver.url)),
      });
      expect(subscribed.status).toBe(200);
      const order = await http(`${base}/__admin/orders`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ pharmacies: ["PH-LB-1"] }),
      });
      expect(order.status).toBe(201);

      const push = await receiver.next();
      const source = responseHeader(push.bundle as Bundle).source?.endpoint;
      expect(source).toBe(`${base}${STANDARD}`);
      const confirm = fromPharmacy("confirm-drugs-availability", "PH-LB-1", [
        confirmationTask(taskOf(push.bundle as Bundle), { availability: "available" }),
      ]);
      const confirmed = await http(source as string, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: envelope(confirm),
      });
      expect(responseHeader(confirmed.json).response?.code).toBe("ok");
      // Allocated by the process that holds the order: the allocation is pushed.
      expect(responseHeader((await receiver.next()).bundle as Bundle).eventCoding?.code).toBe("order-allocation");
    } finally {
      await receiver.close();
    }
  });
});
