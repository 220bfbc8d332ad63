import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { AllergyIntolerance, Bundle, MessageHeader } from "fhir/r4.js";
import { describe, expect, it } from "vitest";
import { createApp } from "../../src/app.js";
import { SERVE_FLAGS } from "../../src/cli/flags.js";
import { DEFAULT_OPERATIONS, STANDARD_PATH } from "../../src/routing/default-operations.js";
import { post, responseHeader } from "../support/messages.js";
import { ROOT } from "./cli-process.js";

// The README is part of the product: its tables are checked against the code they describe.
const README = readFileSync(`${ROOT}README.md`, "utf8");

/** The text of a `##`/`###` section, up to the next heading of the same or a higher level. */
function section(title: string): string {
  const match = new RegExp(`^(#{2,3}) ${title.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}\\s*$`, "m").exec(README);
  if (!match) throw new Error(`README has no section "${title}"`);
  const level = (match[1] as string).length;
  const rest = README.slice(match.index + match[0].length);
  const next = new RegExp(`^#{2,${level}} `, "m").exec(rest);
  return next ? rest.slice(0, next.index) : rest;
}

/** The body rows of the first Markdown table in `text`, as cells (`\|` stays inside a cell). */
function tableRows(text: string): string[][] {
  const lines = text.split("\n").filter((l) => l.startsWith("|"));
  return lines.slice(2).map((line) =>
    line
      .slice(1, line.endsWith("|") ? -1 : undefined)
      .split(/(?<!\\)\|/)
      .map((cell) => cell.trim().replaceAll("\\|", "|")),
  );
}

/** The Bundles the README writes with `cat > file.json <<'EOF' ... EOF`. */
function heredocBundles(): Array<{ file: string; bundle: Bundle }> {
  return [...README.matchAll(/cat > (\S+\.json) <<'EOF'\n([\s\S]*?)\nEOF\n/g)].map((m) => ({
    file: m[1] as string,
    bundle: JSON.parse(m[2] as string) as Bundle,
  }));
}

describe("README", () => {
  it("states the two commands, and .ci/run runs exactly its test command, then the other Node versions", () => {
    expect(README).toContain("npm ci && npm start");
    expect(README).toContain("npm ci && npm test");
    expect(README).toContain("npm run test:node-versions");
    const commands = readFileSync(`${ROOT}.ci/run`, "utf8")
      .split("\n")
      .filter((line) => line !== "" && !line.startsWith("#"))
      .slice(-2);
    expect(commands).toEqual(["npm ci && npm test", "npm run test:node-versions"]);
  });

  it("lists exactly the serve flags in its options table, with their environment variables and defaults", () => {
    const rows = tableRows(section("Options"));
    const documented = rows.map(([flag = "", env = "", def = ""]) => ({
      name: /^`--([a-z-]+)/.exec(flag)?.[1],
      env: /^`([A-Z_]+)`$/.exec(env)?.[1],
      def,
    }));
    expect(documented.map(({ name, env }) => ({ name, env }))).toEqual(
      SERVE_FLAGS.map(({ name, env }) => ({ name, env })),
    );
    for (const f of SERVE_FLAGS) {
      const row = documented.find((d) => d.name === f.name);
      if (f.default) expect(row?.def, `default of --${f.name}`).toBe(`\`${f.default}\``);
    }
  });

  it("lists the 18 operations with their event codes and paths, as the catalogue has them", () => {
    const rows = tableRows(section("Operations and event codes"));
    const documented = rows.map(([, code = "", path = ""]) => ({ event: code.replaceAll("`", ""), path }));
    expect(documented).toEqual(
      DEFAULT_OPERATIONS.map((op) => ({
        event: op.event,
        path: op.path === STANDARD_PATH ? "standard" : "**alternate**",
      })),
    );
    expect(documented).toHaveLength(18);
  });

  it("marks as available only admin endpoints that exist", async () => {
    const { app } = createApp();
    const available = tableRows(section("Admin API")).filter((row) => row[2] === "available");
    expect(available.length).toBeGreaterThanOrEqual(8);
    for (const [endpoint = ""] of available) {
      const [, method = "", path = ""] = /^`(GET|POST|DELETE) (\/__admin\/[^`]*)`$/.exec(endpoint) ?? [];
      expect(method, endpoint).not.toBe("");
      const res = await app.request(path.replace(/\{[a-z]+\}/, "1"), {
        method,
        ...(method === "POST"
          ? { body: JSON.stringify({ timeoutMs: 0 }), headers: { "content-type": "application/json" } }
          : {}),
      });
      // An event stream never ends: its headers tell it is there.
      const streams = res.headers.get("content-type")?.startsWith("text/event-stream");
      if (streams) await res.body?.cancel();
      const text = streams ? "" : await res.text();
      expect(text, `${method} ${path}`).not.toContain("No admin endpoint");
      expect(res.status, `${method} ${path}`).toBeLessThan(405);
    }
  });

  it("has quick-start Bundles that work in order: the allergy added shows in the profile viewed", async () => {
    const bundles = heredocBundles();
    expect(bundles.map((b) => b.file)).toEqual(["add-allergy.json", "view-profile.json"]);
    const { app } = createApp();
    const replies = [];
    for (const { file, bundle } of bundles) {
      const reply = await post(app, bundle);
      expect(reply.status, file).toBe(200);
      const sent = bundle.entry?.[0]?.resource as MessageHeader;
      expect(responseHeader(reply.body)).toMatchObject({
        eventCoding: sent.eventCoding,
        response: { identifier: sent.id, code: "ok" },
      });
      replies.push(reply.body as Bundle);
    }
    const added = replies[0]?.entry?.[1]?.resource as AllergyIntolerance;
    const profile = (replies[1]?.entry ?? []).map((e) => e.resource);
    expect(profile).toContainEqual(expect.objectContaining({ resourceType: "AllergyIntolerance", id: added.id }));
    // The output the README shows for its jq filter is what the sandbox answers (the profile is generated from the seed).
    const shown = /"allergies": (\[[^\]]*\])/.exec(README)?.[1];
    const listed = profile
      .filter((r): r is AllergyIntolerance => r?.resourceType === "AllergyIntolerance")
      .map((a) => a.code?.coding?.[0]?.display);
    expect(listed).toEqual(JSON.parse(shown ?? "null"));
  });

  it("has an operations file example that loads and does what the README says", async () => {
    const yaml = /```yaml\n([\s\S]*?)```/.exec(section("Operations file"))?.[1];
    expect(yaml).toBeDefined();
    const dir = mkdtempSync(join(tmpdir(), "readme-operations-"));
    try {
      const file = join(dir, "operations.yaml");
      writeFileSync(file, yaml as string);
      const { app, catalogue } = createApp({ operationsFile: file });
      expect(catalogue.byEvent("AllergyIntolerance-Create")?.id).toBe("add-allergy");
      expect(catalogue.byEvent("add-allergy")?.id).toBe("add-allergy");
      expect(catalogue.byId("remove-allergy")?.path).toBe(STANDARD_PATH);
      const [add] = heredocBundles();
      const header = add?.bundle.entry?.[0]?.resource as MessageHeader;
      header.eventCoding = { ...header.eventCoding, code: "AllergyIntolerance-Create" };
      expect((await post(app, add?.bundle as Bundle)).status).toBe(200);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("shows the Docker run with the scenarios mount, the state file's volume and the image's health check", () => {
    const docker = section("Running in Docker");
    expect(docker).toContain("docker build -t uae-fhir-sandbox .");
    expect(docker).toContain('-v "$PWD/scenarios:/app/scenarios:ro"');
    expect(docker).toContain("-v sandbox-data:/data -e STATE_FILE=/data/sandbox.db");
    expect(docker).toContain("/__admin/health");
    expect(docker).toContain("podman build --format docker -t uae-fhir-sandbox .");
    expect(docker).toContain("bash scripts/verify-image.sh");
  });
});
