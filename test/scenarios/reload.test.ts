import { EventEmitter } from "node:events";
import { mkdirSync, mkdtempSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Patient } from "fhir/r4.js";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createApp, type SandboxApp, type SandboxDeps } from "../../src/app.js";
import { formatProblem, type YamlProblem } from "../../src/config/yaml-file.js";
import type { SandboxEvents } from "../../src/events.js";
import { admin } from "../admin/admin-client.js";
import { example, messageBundle, post } from "../support/messages.js";

// The scenario lifecycle: load at start, reload on change (watch) or on request,
// an invalid file reported while the previous set keeps serving; and safe YAML.

const QUIET = { info: () => undefined, error: () => undefined };
/** Longest a reload may take to be announced before the test gives up. */
const RELOAD_TIMEOUT_MS = 5_000;

/** A rule that lets the built-in behaviour answer and tags the answer with X-Version. */
const versioned = (version: string) => `name: versioned
rules:
  - name: rule-${version}
    respond:
      builtIn: true
      headers: { X-Version: ${version} }
`;

/** A rule with its delay at the wrong level: an unknown key "delay" on line 5, column 5. */
const INVALID = `name: versioned
rules:
  - name: rule-broken
    respond: { builtIn: true }
    delay: 2s
`;

let dir: string;
let sandbox: SandboxApp | undefined;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "scenarios-reload-"));
});

afterEach(() => {
  sandbox?.close();
  sandbox = undefined;
  rmSync(dir, { recursive: true, force: true });
});

const write = (file: string, text: string) => writeFileSync(join(dir, file), text);

function start(watch: boolean, options: { scenarios?: string; log?: string[]; deps?: Partial<SandboxDeps> } = {}) {
  const { log, scenarios = dir, deps } = options;
  const logger = log ? { info: (m: string) => log.push(m), error: (m: string) => log.push(m) } : QUIET;
  sandbox = createApp({ scenarios, watch }, { logger, ...deps });
  return sandbox;
}

/** The next "scenarios:loaded" event; subscribe before changing files. */
function nextLoad(events: SandboxEvents): Promise<{ ok: boolean; problems: YamlProblem[] }> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      events.off("scenarios:loaded", onLoad);
      reject(new Error(`no scenarios:loaded event within ${RELOAD_TIMEOUT_MS} ms`));
    }, RELOAD_TIMEOUT_MS);
    const onLoad = (result: { ok: boolean; problems: YamlProblem[] }) => {
      clearTimeout(timer);
      resolve(result);
    };
    events.once("scenarios:loaded", onLoad);
  });
}

/** Which rule's X-Version tags the answer to a message (null: no rule answered). */
async function answeringVersion(s: SandboxApp): Promise<string | null> {
  const reply = await post(s.app, messageBundle("view-patient-profile", [example<Patient>("patient-example.json")]));
  expect(reply.status).toBe(200);
  return reply.headers.get("x-version");
}

describe("scenario reload (CONTRACT §7)", { timeout: 15_000 }, () => {
  it("a changed file reloads, and the new rule answers", async () => {
    write("10-rules.yaml", versioned("v1"));
    const s = start(true);
    expect(await answeringVersion(s)).toBe("v1");

    const loaded = nextLoad(s.events);
    write("10-rules.yaml", versioned("v2"));
    expect(await loaded).toEqual({ ok: true, problems: [] });

    expect(await answeringVersion(s)).toBe("v2");
    const view = await admin(s.app, "GET", "/scenarios");
    expect(view.body.rules.map((r: { name: string }) => r.name)).toEqual(["rule-v2"]);
  });

  it("an invalid file is reported with file:line, the previous rules keep answering, a fix reloads", async () => {
    write("10-rules.yaml", versioned("v1"));
    const s = start(true);

    const rejected = nextLoad(s.events);
    write("10-rules.yaml", INVALID);
    const result = await rejected;
    expect(result.ok).toBe(false);
    expect(result.problems).toEqual([
      expect.objectContaining({ file: "10-rules.yaml", line: 5, column: 5, message: expect.stringContaining("delay") }),
    ]);

    expect(await answeringVersion(s)).toBe("v1");
    const view = await admin(s.app, "GET", "/scenarios");
    expect(view.status).toBe(200);
    expect(view.body.problems).toEqual([expect.objectContaining({ file: "10-rules.yaml", line: 5, column: 5 })]);
    expect(view.body.rules.map((r: { name: string }) => r.name)).toEqual(["rule-v1"]);

    const fixed = nextLoad(s.events);
    write("10-rules.yaml", versioned("v3"));
    expect(await fixed).toEqual({ ok: true, problems: [] });
    expect(await answeringVersion(s)).toBe("v3");
    expect((await admin(s.app, "GET", "/scenarios")).body.problems).toEqual([]);
  });

  it("a new file in the folder is picked up", async () => {
    write("10-rules.yaml", versioned("v1"));
    const s = start(true);

    const loaded = nextLoad(s.events);
    // Files load in path order: 05-… comes before 10-…, so its rule answers first.
    write("05-earlier.yaml", versioned("early"));
    expect(await loaded).toEqual({ ok: true, problems: [] });

    expect(await answeringVersion(s)).toBe("early");
    const view = await admin(s.app, "GET", "/scenarios");
    expect(view.body.files.map((f: { source: string }) => f.source)).toEqual(["05-earlier.yaml", "10-rules.yaml"]);
  });

  it("POST /__admin/scenarios/reload of an invalid folder answers 400 and the previous set keeps serving", async () => {
    write("10-rules.yaml", versioned("v1"));
    const s = start(false);
    write("10-rules.yaml", INVALID);

    const loaded = nextLoad(s.events);
    const reply = await admin(s.app, "POST", "/scenarios/reload");
    expect((await loaded).ok).toBe(false);

    expect(reply.status).toBe(400);
    expect(reply.headers.get("content-type")).toMatch(/^application\/fhir\+json/);
    expect(reply.body.resourceType).toBe("OperationOutcome");
    expect(reply.body.issue).toEqual([
      expect.objectContaining({ code: "invalid", diagnostics: expect.stringMatching(/^10-rules\.yaml:5:5: .*delay/) }),
    ]);
    expect(await answeringVersion(s)).toBe("v1");

    write("10-rules.yaml", versioned("v2"));
    const ok = await admin(s.app, "POST", "/scenarios/reload");
    expect(ok.status).toBe(200);
    expect(ok.body.problems).toEqual([]);
    expect(await answeringVersion(s)).toBe("v2");
  });

  it("a folder created under it is watched from the reload that found it (the re-watch after a reload)", async () => {
    write("10-rules.yaml", versioned("v1"));
    const s = start(true);
    const found = nextLoad(s.events);
    mkdirSync(join(dir, "00-more"));
    expect(await found).toEqual({ ok: true, problems: [] });

    // Only a watcher on the new folder sees a file written inside it.
    const loaded = nextLoad(s.events);
    writeFileSync(join(dir, "00-more", "rules.yaml"), versioned("more"));
    expect(await loaded).toEqual({ ok: true, problems: [] });
    expect(await answeringVersion(s)).toBe("more");
  });

  it("createApp with an invalid file at start throws, naming file:line:column", () => {
    write("10-rules.yaml", INVALID);
    expect(() => start(false)).toThrow(/10-rules\.yaml:5:5: .*delay/);
  });
});

/** Writes a file whole at once, as editors and `git checkout` replace files: a new file renamed over the old. */
function replace(file: string, text: string): void {
  const staged = `${file}.staged-${process.pid}`;
  writeFileSync(staged, text);
  renameSync(staged, file);
}

describe("scenario reload when the folder or file goes away (watch)", { timeout: 15_000 }, () => {
  it("a deleted folder leaves the last good set serving, with a warning; moved back, it is loaded again", async () => {
    write("10-rules.yaml", versioned("v1"));
    const log: string[] = [];
    const s = start(true, { log });

    const gone = nextLoad(s.events);
    rmSync(dir, { recursive: true, force: true });
    const result = await gone;
    expect(result.ok).toBe(false);
    expect(result.problems.map(formatProblem)).toEqual([
      `${dir}: the scenarios folder is gone; the rules loaded before keep serving, and it is loaded again when it is back`,
    ]);
    expect(log.filter((l) => l.includes("is gone"))).toHaveLength(1);
    expect(log.find((l) => l.includes("is gone"))).toMatch(/^scenarios not reloaded, the previous set keeps serving/);
    expect(await answeringVersion(s)).toBe("v1");

    // Restored the way a backup is: prepared elsewhere, then moved into place.
    const staged = mkdtempSync(join(tmpdir(), "scenarios-staged-"));
    writeFileSync(join(staged, "10-rules.yaml"), versioned("v2"));
    const back = nextLoad(s.events);
    renameSync(staged, dir);
    expect(await back).toEqual({ ok: true, problems: [] });
    expect(await answeringVersion(s)).toBe("v2");
    expect((await admin(s.app, "GET", "/scenarios")).body.problems).toEqual([]);
    expect(log.filter((l) => l.startsWith("cannot watch"))).toEqual([]);
  });

  it("--scenarios FILE is watched: changed in place, replaced, deleted (the last set keeps serving) and back", async () => {
    const file = join(dir, "only.yaml");
    writeFileSync(file, versioned("v1"));
    const s = start(true, { scenarios: file });
    expect(await answeringVersion(s)).toBe("v1");

    let loaded = nextLoad(s.events);
    writeFileSync(file, versioned("v2"));
    expect(await loaded).toEqual({ ok: true, problems: [] });
    expect(await answeringVersion(s)).toBe("v2");

    loaded = nextLoad(s.events);
    replace(file, versioned("v3"));
    expect(await loaded).toEqual({ ok: true, problems: [] });
    expect(await answeringVersion(s)).toBe("v3");

    loaded = nextLoad(s.events);
    rmSync(file);
    expect((await loaded).ok).toBe(false);
    expect(await answeringVersion(s)).toBe("v3");

    loaded = nextLoad(s.events);
    replace(file, versioned("v4"));
    expect(await loaded).toEqual({ ok: true, problems: [] });
    expect(await answeringVersion(s)).toBe("v4");
  });

  it("a folder missing at start is none; created later, it is loaded", async () => {
    const later = join(dir, "later");
    const s = start(true, { scenarios: later });
    expect(await answeringVersion(s)).toBeNull();
    const staged = mkdtempSync(join(tmpdir(), "scenarios-staged-"));
    writeFileSync(join(staged, "10-rules.yaml"), versioned("late"));
    const loaded = nextLoad(s.events);
    renameSync(staged, later);
    expect(await loaded).toEqual({ ok: true, problems: [] });
    expect(await answeringVersion(s)).toBe("late");
  });
});

/** An fs.watch whose watchers fail: at once (`throws`), or later with an "error" event (`emits`). */
function failingWatch(error: NodeJS.ErrnoException, how: "throws" | "emits") {
  const watchers: EventEmitter[] = [];
  const watch = (() => {
    if (how === "throws") throw error;
    const watcher = Object.assign(new EventEmitter(), { close: () => undefined });
    watchers.push(watcher);
    return watcher;
  }) as unknown as SandboxDeps["fsWatch"];
  return { watch, watchers };
}

const errno = (code: string, message: string) => Object.assign(new Error(`${code}: ${message}`), { code });

describe("scenario watch errors are reported, not swallowed", () => {
  it.each([
    ["ENOSPC", "System limit for number of file watchers reached", /fs\.inotify\.max_user_watches/],
    ["EMFILE", "too many open files", /ulimit -n/],
  ])("a watcher that cannot start (%s) is reported with what to do", (code, message, hint) => {
    write("10-rules.yaml", versioned("v1"));
    const log: string[] = [];
    start(true, { log, deps: { fsWatch: failingWatch(errno(code, message), "throws").watch } });
    const reports = log.filter((l) => l.startsWith("cannot watch"));
    expect(reports.length).toBeGreaterThan(0);
    expect(reports[0]).toContain(code);
    expect(reports[0]).toMatch(hint);
    expect(reports[0]).toContain("POST /__admin/scenarios/reload");
  });

  it("an error a watcher emits later is reported, and the sandbox keeps serving", async () => {
    write("10-rules.yaml", versioned("v1"));
    const log: string[] = [];
    const failing = failingWatch(errno("EMFILE", "too many open files"), "emits");
    const s = start(true, { log, deps: { fsWatch: failing.watch } });
    expect(log.filter((l) => l.startsWith("cannot watch"))).toEqual([]);
    failing.watchers[0]?.emit("error", errno("EMFILE", "too many open files"));
    expect(log.filter((l) => l.startsWith("cannot watch"))).toEqual([expect.stringContaining("EMFILE")]);
    expect(await answeringVersion(s)).toBe("v1");
  });
});

/** The "billion laughs": nine levels of nine aliases, 9^9 strings once expanded. */
function aliasBomb(): string {
  const levels = "abcdefghi";
  const lines = ["rules:", "  - respond:", "      body:", `        a: &a [${Array(9).fill('"lol"').join(", ")}]`];
  for (let i = 1; i < levels.length; i++) {
    const [name, previous] = [levels[i], levels[i - 1]];
    lines.push(`        ${name}: &${name} [${Array(9).fill(`*${previous}`).join(", ")}]`);
  }
  return `${lines.join("\n")}\n`;
}

const MAX_BYTES = 2 * 1024 * 1024;

// A file over --max-scenario-file: test/scenarios/file-size.test.ts.
const UNSAFE: Array<{ name: string; text: () => string; problem: RegExp }> = [
  { name: "an alias bomb (billion laughs)", text: aliasBomb, problem: /bomb\.yaml:\d+:\d+: .*alias/i },
  {
    name: "a !!js/function tag",
    text: () => 'rules:\n  - respond:\n      body: !!js/function "function () { return 1; }"\n',
    problem: /bomb\.yaml:3:\d+: .*tag/i,
  },
  {
    name: "a custom !foo tag",
    text: () => "rules:\n  - respond:\n      outcome: { diagnostics: !foo refused }\n",
    problem: /bomb\.yaml:3:\d+: .*tag/i,
  },
  {
    name: "a YAML 1.1 !!binary tag",
    text: () => "rules:\n  - respond:\n      body: !!binary aGVsbG8=\n",
    problem: /bomb\.yaml:3:\d+: .*tag/i,
  },
  {
    name: "duplicate keys",
    text: () => "rules:\n  - name: twice\n    name: again\n    respond: { builtIn: true }\n",
    problem: /bomb\.yaml:3:\d+: .*unique/i,
  },
];

describe("scenario YAML is parsed safely", { timeout: 5_000 }, () => {
  it.each(UNSAFE)("$name is rejected at start, quickly, with file:line:column", ({ text, problem }) => {
    write("bomb.yaml", text());
    expect(() => start(false)).toThrow(problem);
  });

  it.each(UNSAFE)("$name is rejected by POST /__admin/scenarios (400)", async ({ text }) => {
    const s = createApp({ maxBody: 4 * MAX_BYTES }, { logger: QUIET });
    const reply = await admin(s.app, "POST", "/scenarios", { body: text(), headers: { "content-type": "text/yaml" } });
    expect(reply.status).toBe(400);
    expect(reply.body.resourceType).toBe("OperationOutcome");
    expect((await admin(s.app, "GET", "/scenarios")).body.rules).toEqual([]);
  });
});
