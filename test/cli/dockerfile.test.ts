import { execFileSync, spawn } from "node:child_process";
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import type { AllergyIntolerance, Bundle, Patient } from "fhir/r4.js";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { envelope, messageBundle, responseHeader, STANDARD } from "../support/messages.js";
import { Child, childEnv, http, killStray, LISTENING, ROOT } from "./cli-process.js";

// No container engine in CI (scripts/verify-image.sh runs the real image where there is one): the Dockerfile is
// parsed, its runtime stage's files are laid out in a temporary folder, and its CMD and HEALTHCHECK run there.
afterEach(killStray);

interface Instruction {
  keyword: string;
  args: string;
  line: number;
}

/** Dockerfile → instructions: comments and blank lines dropped, `\` continuations joined. */
function parseDockerfile(text: string): Instruction[] {
  const out: Instruction[] = [];
  let pending: { text: string; line: number } | undefined;
  text.split("\n").forEach((raw, i) => {
    const line = raw.trim();
    if (pending === undefined && (line === "" || line.startsWith("#"))) return;
    if (pending !== undefined && line.startsWith("#")) return;
    const continued = line.endsWith("\\");
    const part = continued ? line.slice(0, -1).trim() : line;
    pending = pending ? { text: `${pending.text} ${part}`, line: pending.line } : { text: part, line: i + 1 };
    if (continued) return;
    const [, keyword = "", args = ""] = /^(\S+)\s*(.*)$/.exec(pending.text) ?? [];
    out.push({ keyword: keyword.toUpperCase(), args, line: pending.line });
    pending = undefined;
  });
  return out;
}

/** The stages, each starting at its FROM. */
function stages(instructions: Instruction[]): Instruction[][] {
  const out: Instruction[][] = [];
  for (const i of instructions) {
    if (i.keyword === "FROM") out.push([]);
    out.at(-1)?.push(i);
  }
  return out;
}

/** `KEY=value KEY2="value 2"` → a record. */
function envPairs(args: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const m of args.matchAll(/([A-Za-z_][A-Za-z0-9_]*)=("(?:[^"\\]|\\.)*"|\S+)/g)) {
    const value = m[2] as string;
    out[m[1] as string] = value.startsWith('"') ? (JSON.parse(value) as string) : value;
  }
  return out;
}

/** An exec-form command (`["node", ...]`); shell form is not accepted. */
function execForm(args: string): string[] {
  expect(args.trim().startsWith("["), `expected exec form, found ${args}`).toBe(true);
  return JSON.parse(args) as string[];
}

const dockerfile = parseDockerfile(readFileSync(`${ROOT}Dockerfile`, "utf8"));
const [build, runtime] = [stages(dockerfile)[0] ?? [], stages(dockerfile).at(-1) ?? []];
const all = (stage: Instruction[], keyword: string) => stage.filter((i) => i.keyword === keyword);
const one = (stage: Instruction[], keyword: string): Instruction => {
  const found = all(stage, keyword);
  expect(found, `exactly one ${keyword} in the stage`).toHaveLength(1);
  return found[0] as Instruction;
};

const workdir = one(runtime, "WORKDIR").args;
const imageEnv = Object.assign({}, ...all(runtime, "ENV").map((i) => envPairs(i.args))) as Record<string, string>;
const cmd = execForm(one(runtime, "CMD").args);
const healthcheck = (() => {
  const args = one(runtime, "HEALTHCHECK").args;
  const at = args.indexOf("CMD ");
  expect(at, "HEALTHCHECK ... CMD [...]").toBeGreaterThanOrEqual(0);
  return { options: args.slice(0, at), command: execForm(args.slice(at + 4)) };
})();

/** The runtime stage's RUN that makes the code cache: its bind mount (`--mount=k=v,...`) and its command. */
function codeCacheRun() {
  const instruction = all(runtime, "RUN").find((i) => i.args.includes("write-code-cache.mjs"));
  expect(instruction, "a RUN with scripts/write-code-cache.mjs in the runtime stage").toBeDefined();
  const [mountArg = "", ...command] = (instruction as Instruction).args.split(/\s+/);
  expect(mountArg.startsWith("--mount=")).toBe(true);
  const mount = Object.fromEntries(
    mountArg
      .slice("--mount=".length)
      .split(",")
      .map((pair) => pair.split("=")),
  ) as Record<string, string>;
  return { instruction: instruction as Instruction, mount, command };
}

describe("the Dockerfile", () => {
  it("builds in a node:24-alpine stage: npm ci, then npm run build (which bundles)", () => {
    expect(stages(dockerfile).length).toBeGreaterThanOrEqual(2);
    expect(build[0]?.args).toMatch(/^node:24-alpine[\d.]*\s+AS\s+build$/i);
    const runs = all(build, "RUN").map((i) => i.args);
    const ci = runs.findIndex((r) => /^npm ci\b/.test(r));
    const bundle = runs.indexOf("npm run build");
    expect(ci).toBeGreaterThanOrEqual(0);
    expect(bundle).toBeGreaterThan(ci);
  });

  it("gives the build what npm run build reads: the sources, scripts/, and the README and docs/ it renders", () => {
    const copied = all(build, "COPY").flatMap((i) => i.args.split(/\s+/).slice(0, -1));
    for (const needed of ["tsconfig.json", "src", "scripts", "README.md", "docs", "scenarios/README.md"])
      expect(copied, needed).toContain(needed);
    const ignored = readFileSync(`${ROOT}.dockerignore`, "utf8").split("\n");
    expect(ignored).not.toContain("docs");
    expect(ignored).not.toContain("scripts");
  });

  it("runs on Alpine with the build stage's Node 24 binary alone: the bundle, its data files, the dashboard's assets, scenarios/, conformance/", () => {
    expect(runtime[0]?.args).toMatch(/^alpine:[\d.]+\s+AS\s+runtime$/i);
    // The same Alpine release the node binary was built for (it links against that release's libstdc++).
    expect(runtime[0]?.args.split(/[:\s]/)[1]).toBe(build[0]?.args.match(/alpine([\d.]+)/)?.[1]);
    const runs = all(runtime, "RUN").map((i) => i.args);
    expect(runs.join(" ")).not.toMatch(/\bnpm\b/);
    const copies = all(runtime, "COPY").map((i) => i.args.split(/\s+/));
    expect(copies).toEqual([
      ["--from=build", "/usr/local/bin/node", "/usr/local/bin/node"],
      [
        "--from=build",
        "/app/bundle/uae-fhir-sandbox.mjs",
        "/app/bundle/server.cjs",
        "/app/bundle/r4-definitions.json",
        "/app/bundle/fhirpath-trees.json",
        "./bundle/",
      ],
      ["--from=build", "/app/bundle/assets", "./bundle/assets"],
      ["scenarios", "./scenarios"],
      // The conformance plans, found beside the bundle as the scenarios are (src/conformance/load-plans.ts).
      ["conformance", "./conformance"],
    ]);
  });

  it("makes the code cache in the runtime stage, as root, with the image's node and NODE_OPTIONS, after the files it runs", () => {
    const run = codeCacheRun();
    expect(run.mount).toMatchObject({ type: "bind", from: "build", source: "/app/scripts/write-code-cache.mjs" });
    expect(run.command).toEqual(["node", run.mount.target, "bundle"]);
    // V8 takes a cache made under the same flags only: the ENV that sets NODE_OPTIONS comes first.
    const at = runtime.indexOf(run.instruction);
    const nodeOptions = runtime.findIndex((i) => i.keyword === "ENV" && "NODE_OPTIONS" in envPairs(i.args));
    const lastCopy = runtime.findLastIndex((i) => i.keyword === "COPY");
    expect(nodeOptions).toBeGreaterThanOrEqual(0);
    expect(at).toBeGreaterThan(nodeOptions);
    expect(at).toBeGreaterThan(lastCopy);
    expect(at).toBeLessThan(runtime.findIndex((i) => i.keyword === "USER"));
  });

  it("runs as a non-root user, exposes 8080 and has no VOLUME", () => {
    const user = one(runtime, "USER").args;
    expect(user).not.toMatch(/^(root|0)(:|$)/);
    expect(user).toBe("node");
    expect(all(runtime, "EXPOSE").map((i) => i.args)).toEqual(["8080"]);
    expect(all(dockerfile, "VOLUME")).toEqual([]);
  });

  it("makes /data for a state file, owned by node and private, as root; no VOLUME, as the state file is opt-in", () => {
    const runs = all(runtime, "RUN");
    const data = runs.findIndex((i) => /\bchown node:node \/data(\s|$)/.test(i.args));
    expect(data, "a RUN that gives /data to node").toBeGreaterThanOrEqual(0);
    expect(runs[data]?.args).toMatch(/\bmkdir -m 700 \/data\b/);
    // After the user exists, before USER drops root (Docker copies this owner and mode into a new named volume).
    const user = runs.findIndex((i) => /\badduser\b.* -u 1000 /.test(i.args));
    expect(user).toBeGreaterThanOrEqual(0);
    expect(data).toBeGreaterThanOrEqual(user);
    expect(runtime.indexOf(runs[data] as Instruction)).toBeLessThan(runtime.findIndex((i) => i.keyword === "USER"));
    expect(all(dockerfile, "VOLUME")).toEqual([]);
    // The header's run line with a named volume is the README's.
    const line = "docker run --rm -p 8080:8080 -v sandbox-data:/data -e STATE_FILE=/data/sandbox.db uae-fhir-sandbox";
    expect(readFileSync(`${ROOT}Dockerfile`, "utf8")).toContain(`#   ${line}\n`);
    expect(readFileSync(`${ROOT}README.md`, "utf8")).toContain(`${line}   #`);
  });

  it("sets PORT=8080, HOST=0.0.0.0, SCENARIOS under its WORKDIR and NODE_ENV=production", () => {
    expect(workdir).toBe("/app");
    expect(imageEnv).toMatchObject({
      PORT: "8080",
      HOST: "0.0.0.0",
      SCENARIOS: "/app/scenarios",
      NODE_ENV: "production",
    });
  });

  it("limits the V8 heap so that the server fits a 512 MiB container, with room for what is not heap", () => {
    const limit = Number(/--max-old-space-size=(\d+)/.exec(imageEnv.NODE_OPTIONS ?? "")?.[1]);
    expect(limit).toBeGreaterThanOrEqual(256); // a full default journal and store fit
    expect(limit).toBeLessThanOrEqual(512 - 128);
  });

  it("starts the bundled server: the entry npm run bundle writes (last step of npm run build), with serve", () => {
    const pkg = JSON.parse(readFileSync(`${ROOT}package.json`, "utf8")) as { scripts: Record<string, string> };
    // The bundle is the last step that builds; only the up-to-date stamp (scripts/build-stamp.mjs) comes after it.
    expect(pkg.scripts.build).toMatch(/ && npm run bundle && node scripts\/build-stamp\.mjs done$/);
    expect(cmd).toEqual(["node", "bundle/uae-fhir-sandbox.mjs", "serve"]);
    expect(readFileSync(`${ROOT}scripts/bundle.mjs`, "utf8")).toContain('"uae-fhir-sandbox.mjs"');
  });

  it("has a node HEALTHCHECK against /__admin/health that reads PORT", () => {
    expect(healthcheck.command[0]).toBe("node");
    const script = healthcheck.command.join(" ");
    expect(script).toContain("/__admin/health");
    expect(script).toContain("process.env.PORT");
    expect(healthcheck.options).toMatch(/--timeout=\d+s/);
  });

  it("is described step by step in the README: each FROM, each RUN and the CMD, verbatim", () => {
    const readme = readFileSync(`${ROOT}README.md`, "utf8");
    const docker = /^## Running in Docker\n([\s\S]*?)^## /m.exec(readme)?.[1] ?? "";
    const steps = [
      ...all(dockerfile, "FROM").map((i) => `FROM ${i.args}`),
      ...all(dockerfile, "RUN").map((i) => i.args),
      `CMD ${JSON.stringify(cmd).replaceAll(",", ", ")}`,
    ];
    expect(steps.filter((step) => !docker.includes(`\`${step}\``))).toEqual([]);
  });

  it(".dockerignore keeps node_modules, dist, bundle, .git and coverage out of the build context", () => {
    const ignored = readFileSync(`${ROOT}.dockerignore`, "utf8")
      .split("\n")
      .map((l) => l.trim());
    expect(ignored).toEqual(expect.arrayContaining(["node_modules", "dist", "bundle", ".git", "coverage"]));
  });
});

describe("the Dockerfile's CMD and HEALTHCHECK, run in the image's layout", { timeout: 30_000 }, () => {
  // The runtime stage's files (COPY lines) in a temporary WORKDIR with no node_modules anywhere above it: what the
  // bundle needs and does not find there fails here as it would in the image.
  let app = "";
  beforeAll(() => {
    app = mkdtempSync(join(tmpdir(), "image-app-"));
    for (const [source, ...rest] of all(runtime, "COPY").map((i) => i.args.split(/\s+/))) {
      const fromBuild = source === "--from=build";
      const sources = fromBuild ? rest.slice(0, -1) : [source as string];
      const target = rest.at(-1) as string;
      for (const from of sources) {
        // The build stage's /app is this repository (npm test bundles before vitest); its node is this node.
        if (from === "/usr/local/bin/node") continue;
        const path = fromBuild ? `${ROOT}${from.slice(`${workdir}/`.length)}` : `${ROOT}${from}`;
        const to = target.endsWith("/") ? join(app, target, basename(from)) : join(app, target);
        cpSync(path, to, { recursive: true });
      }
    }
    // The RUN that makes the code cache, as in the image: its mounted script is the build stage's (this repository's).
    const { mount, command } = codeCacheRun();
    const script = `${ROOT}${(mount.source as string).slice(`${workdir}/`.length)}`;
    execFileSync(
      process.execPath,
      command.slice(1).map((arg) => (arg === mount.target ? script : arg)),
      {
        cwd: app,
        env: childEnv(env()),
        stdio: "pipe",
        timeout: 25_000,
      },
    );
  });
  afterAll(() => rmSync(app, { recursive: true, force: true }));

  const env = () => {
    // The image's ENV, its WORKDIR mapped onto the temporary folder.
    const out: Record<string, string> = {};
    for (const [key, value] of Object.entries(imageEnv)) {
      out[key] = value === workdir || value.startsWith(`${workdir}/`) ? join(app, value.slice(workdir.length)) : value;
    }
    return out;
  };
  const run = (command: string[], extra: Record<string, string>) =>
    new Child(
      spawn(process.execPath, command.slice(1), {
        cwd: app,
        env: childEnv({ ...env(), ...extra }),
        stdio: ["ignore", "pipe", "pipe"],
      }),
    );

  it("has only the bundle, its data files, the dashboard's assets, the scenarios and the conformance plans: no node_modules or source maps", () => {
    expect(readdirSync(app).sort()).toEqual(["bundle", "conformance", "scenarios"]);
    expect(readdirSync(join(app, "bundle")).sort()).toEqual([
      "assets",
      "fhirpath-trees.json",
      "r4-definitions.json",
      "server.cjs",
      "server.code-cache",
      "uae-fhir-sandbox.mjs",
    ]);
    const files = readdirSync(app, { recursive: true, encoding: "utf8" });
    expect(files.filter((f) => /\.(map|d\.ts|ts|tsx)$/.test(f))).toEqual([]);
    expect(existsSync(join(app, "node_modules")), "no node_modules in the image").toBe(false);
  });

  it("CMD --version prints package.json's version (written into the bundle)", async () => {
    const pkg = JSON.parse(readFileSync(`${ROOT}package.json`, "utf8")) as { version: string };
    const child = run([...cmd.slice(0, -1), "--version"], {});
    expect(await child.waitForExit()).toEqual({ code: 0, signal: null });
    expect(child.stdout.trim()).toBe(pkg.version);
  });

  it("CMD compiles the server with the code cache the image's RUN made, under the image's NODE_OPTIONS", async () => {
    expect(env().NODE_OPTIONS).toMatch(/--max-old-space-size=/);
    const child = run([...cmd.slice(0, -1), "--version"], { NODE_DEBUG: "code-cache" });
    expect(await child.waitForExit()).toEqual({ code: 0, signal: null });
    expect(child.stderr).toContain("cache used");
  });

  it("CMD serves the dashboard: its page, the script and stylesheet that page loads, the docs and their images", async () => {
    const server = run(cmd, { PORT: "0", HOST: "127.0.0.1" });
    const [, url = ""] = await server.waitForOutput(LISTENING);
    const page = await http(`${url}/__admin/ui/`);
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toMatch(/^text\/html/);
    // What the page loads, by its own (relative) addresses: the files the build wrote, byte for byte.
    const loads = [...page.text.matchAll(/\b(?:href|src)="([^"]+\.(?:js|css))"/g)].map((m) => m[1] as string);
    expect(loads.map((a) => basename(a)).sort()).toEqual(["dashboard.css", "dashboard.js"]);
    for (const address of loads) {
      const res = await http(new URL(address, `${url}/__admin/ui/`).href);
      expect(res.status, address).toBe(200);
      expect(res.text, address).toBe(readFileSync(`${ROOT}dist/ui/assets/${basename(address)}`, "utf8"));
    }
    // The README as the docs' first page, a guide, and an image a guide shows.
    const readme = await http(`${url}/__admin/ui/docs/`);
    expect(readme.status).toBe(200);
    expect(readme.text).toContain('<h1 id="uae-fhir-sandbox">uae-fhir-sandbox</h1>');
    const guide = await http(`${url}/__admin/ui/docs/dashboard`);
    expect(guide.status).toBe(200);
    const image = /<img src="(images\/[a-z0-9-]+\.png)"/.exec(guide.text)?.[1];
    expect(image, "docs/dashboard.md shows a screenshot").toBeDefined();
    const png = await fetch(new URL(image as string, `${url}/__admin/ui/docs/dashboard`));
    expect(png.status).toBe(200);
    expect(png.headers.get("content-type")).toBe("image/png");
    expect((await png.arrayBuffer()).byteLength).toBeGreaterThan(0);
    server.process.kill("SIGTERM");
    expect(await server.waitForExit()).toEqual({ code: 0, signal: null });
  });

  it("CMD serves health and messages (R4 validation with FHIRPath, generated profiles), HEALTHCHECK follows it", async () => {
    const server = run(cmd, { PORT: "0", HOST: "127.0.0.1" });
    const [, url = ""] = await server.waitForOutput(LISTENING);
    const health = await http(`${url}/__admin/health`);
    expect(health.status).toBe(200);
    expect(health.json).toMatchObject({ status: "ok" });

    // A message the shipped scenarios do not script: answered by the built-in behaviour, generated profile and all.
    const patient: Patient = {
      resourceType: "Patient",
      identifier: [{ system: "urn:ae:emirates-id", value: "784-1990-1234567-6" }],
    };
    const send = (bundle: Bundle) =>
      http(`${url}${STANDARD}`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: envelope(bundle),
      });
    const profile = await send(messageBundle("view-patient-profile", [patient]));
    expect(profile.status).toBe(200);
    expect(responseHeader(profile.json).response?.code).toBe("ok");
    const generated = (profile.json as Bundle).entry?.filter((e) => e.resource?.resourceType === "AllergyIntolerance");
    expect(generated?.length).toBeGreaterThan(0);

    // ait-2 (R4 allergyintolerance.html#invariants): no clinicalStatus on an entered-in-error allergy. It is a
    // FHIRPath invariant, so this answer needs fhirpath working inside the bundle.
    const allergy: AllergyIntolerance = {
      resourceType: "AllergyIntolerance",
      clinicalStatus: {
        coding: [{ system: "http://terminology.hl7.org/CodeSystem/allergyintolerance-clinical", code: "active" }],
      },
      verificationStatus: {
        coding: [
          { system: "http://terminology.hl7.org/CodeSystem/allergyintolerance-verification", code: "entered-in-error" },
        ],
      },
      code: { text: "penicillin" },
      patient: { reference: "Patient/1" },
    };
    const refused = await send(messageBundle("add-allergy", [allergy, patient], { focus: [0] }));
    expect(refused.status).toBeGreaterThanOrEqual(400);
    expect(refused.text).toContain("ait-2");

    const port = new URL(url).port;
    const check = () => run(healthcheck.command, { PORT: port }).waitForExit();
    expect(await check()).toEqual({ code: 0, signal: null });

    server.process.kill("SIGTERM");
    expect(await server.waitForExit()).toEqual({ code: 0, signal: null });
    expect(server.stdout).toContain("stopped");
    expect((await check()).code).toBe(1);
  });
});
