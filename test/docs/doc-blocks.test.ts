import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { build } from "esbuild";
import { afterEach, describe, expect, it } from "vitest";
import { Child, ROOT } from "../cli/cli-process.js";
import { DocBlockError, parseBlocks, runMarkdown, serveCommand, shellWords, stopAllPages } from "./doc-blocks.js";
import { compareJson, compareText, missingLogLines, pageContext } from "./doc-compare.js";

// The runner of the pages' tests, on a page written for it (fixtures/runner-page.md) and on small pages that must
// fail, each with the line of the block and what went wrong.

const FIXTURE = readFileSync(join(ROOT, "test/docs/fixtures/runner-page.md"), "utf8");
/** Measured: a test here takes up to 9 s on a loaded 2-core machine (two pages, two sandbox starts each); over three times that. */
const PAGE_BUDGET_MS = 30_000;

describe("parseBlocks", () => {
  it("gives each fence its line, language, text and markers", () => {
    const blocks = parseBlocks(FIXTURE, "fixture.md");
    expect(blocks.map((b) => [b.line, b.lang])).toEqual([
      [5, "sh"],
      [9, "sh"],
      [15, "json"],
      [21, "bash"],
      [26, "text"],
      [31, "sh"],
      [38, "sh"],
      [44, "text"],
      [49, "text"],
      [56, "sh"],
      [60, "sh"],
      [65, "text"],
    ]);
    expect(blocks[5]?.markers).toEqual([{ kind: "skip", reason: "needs a Docker engine" }]);
    expect(blocks[6]?.markers).toEqual([{ kind: "server" }]);
    expect(blocks[1]?.text).toBe(
      "curl -s http://localhost:8080/__admin/calls/verify -H 'Content-Type: application/json' -d @verify.json |\n  jq '{ok, matched, callIds}'",
    );
  });

  it.each([
    ["a skip without a reason", "<!-- doc-test: skip -->\n```sh\nls\n```\n", /needs a reason/],
    ["a misspelt marker", "<!-- doc-test: sever -->\n```sh\nls\n```\n", /page:2: unknown marker/],
    ["an output before any block", "<!-- doc-test: output -->\n```json\n{}\n```\n", /needs a shell block before/],
    [
      "an output of a skipped block",
      "<!-- doc-test: skip — a remote host -->\n```sh\nls\n```\n<!-- doc-test: output -->\n```text\nx\n```\n",
      /follows the skipped block at line 2/,
    ],
    ["an unclosed fence", "```sh\nls\n", /page:1: the block opened here is never closed/],
  ])("refuses %s", (_, page, message) => {
    expect(() => parseBlocks(page, "page")).toThrow(message);
  });
});

describe("serveCommand", () => {
  it.each([
    ["npm start", []],
    ["npm start -- --seed 7", ["--seed", "7"]],
    [
      "npx uae-fhir-sandbox --auth oauth2 --clients docs/clients.example.yaml",
      ["--auth", "oauth2", "--clients", "docs/clients.example.yaml"],
    ],
    ["node dist/cli/main.js serve --port 9000   # a comment", ["--port", "9000"]],
    ["uae-fhir-sandbox serve", []],
  ])("reads %s as the sandbox with %j", (line, args) => {
    expect(serveCommand(line)?.args).toEqual(args);
  });

  it.each([
    "npx uae-fhir-sandbox validate scenarios/",
    "npx uae-fhir-sandbox example add-allergy --patient 784-1990-1234567-6",
    "npm ci",
    "node script.mjs",
  ])("does not read %s as starting the sandbox", (line) => {
    expect(serveCommand(line)).toBeUndefined();
  });

  it("reads quotes and escapes, and stops at a pipe, a redirection or a comment, running nothing", () => {
    expect(shellWords(`npx uae-fhir-sandbox --seed "a b" --x 'c d' e\\ f | jq . # note`)).toEqual([
      "npx",
      "uae-fhir-sandbox",
      "--seed",
      "a b",
      "--x",
      "c d",
      "e f",
    ]);
    expect(shellWords("node dist/cli/main.js --port 9000 > log.txt")).toEqual([
      "node",
      "dist/cli/main.js",
      "--port",
      "9000",
    ]);
    expect(shellWords('X="$(touch nothing-runs)" npx uae-fhir-sandbox')).toEqual([
      "X=$(touch nothing-runs)",
      "npx",
      "uae-fhir-sandbox",
    ]);
  });

  it("keeps variables set before the command", () => {
    expect(serveCommand("ADMIN_TOKEN=secret npx uae-fhir-sandbox")).toEqual({
      env: { ADMIN_TOKEN: "secret" },
      args: [],
    });
  });
});

describe("comparing shown output", () => {
  const input = "the page sends 0c3a5a3e-6f3e-4b8e-9d3a-1f2b3c4d5e01 at 2026-01-15T09:30:00+04:00, delay: 500ms";
  const shown = {
    response: { identifier: "0c3a5a3e-6f3e-4b8e-9d3a-1f2b3c4d5e01", code: "ok" },
    stored: {
      id: "546673c5-7fc4-4593-a3fa-6495b681fe50",
      meta: { versionId: "1", lastUpdated: "2026-11-21T18:53:43.663Z" },
    },
  };
  const got = (change: (v: typeof shown) => unknown) => change(structuredClone(shown));
  /** A fresh page's context: the page shows `shown` (its author ran it on 2026-11-21). */
  const ctx = () => pageContext(input, JSON.stringify(shown));
  const now = () => new Date().toISOString();

  it("lets assigned ids and instants differ", () => {
    const other = got((v) => {
      v.stored.id = "0b1e0c8a-2d2f-4c1a-9a8e-3f0a1b2c3d4e";
      v.stored.meta.lastUpdated = now();
      return v;
    });
    expect(compareJson(shown, other, ctx())).toEqual([]);
  });

  type Shown = typeof shown;
  const changes: Array<[string, (v: Shown) => unknown, RegExp]> = [
    [
      "a non-volatile value",
      (v) => {
        v.response.code = "fatal-error";
        return v;
      },
      /\$\.response\.code/,
    ],
    [
      "an id the page sent",
      (v) => {
        v.response.identifier = "546673c5-7fc4-4593-a3fa-6495b681fe51";
        return v;
      },
      /in the page's own commands/,
    ],
    ["an extra key", (v) => ({ ...v, issues: [] }), /unexpected issues/],
    ["a missing key", (v) => ({ response: v.response }), /missing stored/],
    [
      "a UUID where an instant was",
      (v) => {
        v.stored.meta.lastUpdated = v.stored.id;
        return v;
      },
      /lastUpdated/,
    ],
    [
      "a number where a string was",
      (v) => ({ ...v, stored: { ...v.stored, meta: { ...v.stored.meta, versionId: 1 } } }),
      /expected string "1", got number 1/,
    ],
  ];
  it.each(changes)("reports %s", (_, change, message) => {
    expect(compareJson(shown, got(change), ctx()).join("\n")).toMatch(message);
  });

  it("lets a date or an instant differ only for one the sandbox took from its clock", () => {
    expect(compareJson({ authoredOn: "2026-11-21" }, { authoredOn: now().slice(0, 10) }, ctx())).toEqual([]);
    expect(compareJson({ at: "2026-11-21T18:53:43.663Z" }, { at: now() }, ctx())).toEqual([]);
    expect(compareJson({ birthDate: "1990-05-01" }, { birthDate: "1990-05-02" }, ctx()).join()).toMatch(
      /not near the time of this run/,
    );
    expect(compareJson({ onset: "2019-03-01T10:00:00Z" }, { onset: "2019-03-02T10:00:00Z" }, ctx())).toHaveLength(1);
    // A seed date shown (far from when the page shows it ran) must not come back as today.
    expect(compareJson({ birthDate: "1990-05-01" }, { birthDate: now().slice(0, 10) }, ctx()).join()).toMatch(
      /1990-05-01 is not near the time the page shows it ran/,
    );
  });

  it("lets a shown id stand for one id got, the same one wherever it is on the page", () => {
    const [a, b] = ["546673c5-7fc4-4593-a3fa-6495b681fe50", "0b1e0c8a-2d2f-4c1a-9a8e-3f0a1b2c3d4e"];
    const [x, y] = ["11111111-2222-4333-8444-555555555555", "66666666-7777-4888-9999-aaaaaaaaaaaa"];
    expect(compareJson({ id: a, ref: `Patient/${a}` }, { id: x, ref: `Patient/${x}` }, ctx())).toEqual([]);
    expect(compareJson({ id: a, ref: `Patient/${a}` }, { id: x, ref: `Patient/${y}` }, ctx()).join()).toMatch(
      /stands for 11111111-.* elsewhere on the page, here for 66666666-/,
    );
    expect(compareJson({ id: a, other: b }, { id: x, other: x }, ctx()).join()).toMatch(/stands for 546673c5-/);
    // Across the blocks of one page too.
    const page = ctx();
    expect(compareText(`id ${a}`, `id ${x}`, page)).toEqual([]);
    expect(compareText(`again ${a}`, `again ${y}`, page)).toHaveLength(1);
    expect(missingLogLines(`saw ${a}`, [`saw ${y}`, `saw ${x}`], page)).toEqual([]);
    // One instant shown twice: two events a moment apart here, not an hour.
    const at = "2026-11-21T18:53:43.663Z";
    const iso = (ms: number) => new Date(Date.now() + ms).toISOString();
    expect(compareJson({ a: at, b: at }, { a: iso(0), b: iso(1) }, ctx())).toEqual([]);
    expect(compareJson({ a: at, b: at }, { a: iso(0), b: iso(-3_600_000) }, ctx())).toHaveLength(1);
  });

  it("lets the number of a time taken differ, and no other number", () => {
    const call = { id: "5", attempt: 1, durationMs: 9.6, response: { status: 200 } };
    expect(compareJson(call, { ...call, durationMs: 55 }, ctx())).toEqual([]);
    expect(compareJson(call, { ...call, attempt: 2 }, ctx())).toEqual(["$.attempt: expected 1, got 2"]);
    expect(compareJson(call, { ...call, durationMs: "55" }, ctx())).toHaveLength(1);
    for (const key of ["uptimeSeconds", "elapsed", "totalDurationMs"])
      expect(compareJson({ [key]: 1 }, { [key]: 2 }, ctx()), key).toEqual([]);
    for (const key of ["durationsCount", "uptimer", "elapsedRetries", "maxDurationCount"])
      expect(compareJson({ [key]: 1 }, { [key]: 2 }, ctx()), key).toHaveLength(1);
  });

  it("compares text line by line, durations and times of day masked", () => {
    const line = "18:53:43.663 IN  add-allergy                 200 ok              built-in                  12 ms #1";
    expect(
      compareText(
        line,
        "09:01:02.003 IN  add-allergy                 200 ok              built-in                 4.5 ms #1",
        ctx(),
      ),
    ).toEqual([]);
    expect(
      compareText(
        line,
        "09:01:02.003 IN  add-allergy                 200 ok              built-in                 4.5 ms #2",
        ctx(),
      ),
    ).toHaveLength(1);
    expect(compareText("a\nb", "a\nb\nc", ctx())).toEqual(['line 3: unexpected "c"']);
    // A right-aligned duration keeps its column: one more space is a column moved.
    expect(
      compareText(
        line,
        "09:01:02.003 IN  add-allergy                 200 ok              built-in                   4.5 ms #1",
        ctx(),
      ),
    ).toHaveLength(1);
    // A duration the page wrote itself is not volatile.
    expect(compareText("waited 500ms", "waited 20ms", ctx()).join()).toMatch(/500ms is in the page's own commands/);
    expect(compareText("took 12 ms", "took 20 ms", ctx())).toEqual([]);
  });

  it("finds shown log lines in order among what the sandbox printed", () => {
    const printed = ["banner", "10:00:00.000 one 3 ms", "other", "10:00:00.100 two 5 ms"];
    expect(missingLogLines("11:11:11.111 one 9 ms\n11:11:11.111 two 1 ms", printed, ctx())).toEqual([]);
    expect(missingLogLines("11:11:11.111 two 1 ms\n11:11:11.111 one 9 ms", printed, ctx())).toEqual([
      "11:11:11.111 one 9 ms",
    ]);
  });
});

/** Whether process `pid` still runs (a zombie no longer does). */
function alive(pid: number): boolean {
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, "utf8"));
  } catch {
    return false;
  }
}

/** Resolves once `check` holds, polling every 50 ms; rejects after `timeoutMs`. */
async function until(check: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`${what}: not after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe("runMarkdown", () => {
  let marks = "";
  afterEach(async () => {
    await stopAllPages();
    if (marks) rmSync(marks, { recursive: true, force: true });
    // The pages below whose directories stay: kept, or their process ended before it could remove them.
    for (const dir of readdirSync(tmpdir()).filter(
      (d) => /^doc-(stopped|signal)-\d+-/.test(d) && d.includes(`-${process.pid}-`),
    ))
      rmSync(join(tmpdir(), dir), { recursive: true, force: true });
    marks = "";
  });

  it(
    "stops what a helper left running after it exited (its process group), at the page's end",
    async () => {
      marks = mkdtempSync(join(tmpdir(), "doc-marks-"));
      const page =
        '<!-- doc-test: background -->\n```sh\nsleep 300 > /dev/null 2>&1 &\necho $! > "$MARKS/pid"; echo $$ > "$MARKS/leader"; echo started\n```\n' +
        // The helper's own shell has ended before the page ends.
        '\n```sh\nwhile kill -0 "$(cat "$MARKS/leader")" 2>/dev/null; do sleep 0.05; done\n```\n';
      await runMarkdown(page, "helper.md", { env: { MARKS: marks } });
      const pid = Number(readFileSync(join(marks, "pid"), "utf8"));
      await until(() => !alive(pid), 5_000, `the helper's sleep (${pid}) is still running`);
    },
    PAGE_BUDGET_MS,
  );

  it(
    "stops a page's process groups when its process is ended by a signal (no afterEach, no exit handler then)",
    async () => {
      marks = mkdtempSync(join(tmpdir(), "doc-marks-"));
      // The runner alone in a process of its own (vitest's hooks are no-ops there), running a block that waits.
      const page = '```sh\nsleep 300 > /dev/null 2>&1 &\necho $! > "$MARKS/pid"; wait\n```\n';
      writeFileSync(
        join(marks, "entry.ts"),
        `import { runMarkdown } from ${JSON.stringify(join(ROOT, "test/docs/doc-blocks.ts"))};\n` +
          `await runMarkdown(${JSON.stringify(page)}, "signal-${process.pid}.md", { env: { MARKS: ${JSON.stringify(marks)} } });\n`,
      );
      await build({
        entryPoints: [join(marks, "entry.ts")],
        bundle: true,
        platform: "node",
        format: "esm",
        outfile: join(marks, "driver.mjs"),
        logLevel: "error",
        // ROOT is found from cli-process.ts's own URL; bundled CommonJS requires node's modules.
        define: { "import.meta.url": JSON.stringify(pathToFileURL(join(ROOT, "test/cli/cli-process.ts")).href) },
        banner: { js: 'import { createRequire } from "node:module"; const require = createRequire(import.meta.url);' },
        plugins: [
          {
            name: "vitest-hooks",
            setup(b) {
              b.onResolve({ filter: /^vitest$/ }, () => ({ path: "vitest", namespace: "hooks" }));
              b.onLoad({ filter: /.*/, namespace: "hooks" }, () => ({
                contents: "export const afterEach = () => {}, describe = () => {}, it = () => {};",
              }));
            },
          },
        ],
      });
      const driver = new Child(
        spawn(process.execPath, [join(marks, "driver.mjs")], { stdio: ["ignore", "pipe", "pipe"] }),
      );
      try {
        await until(
          () => existsSync(join(marks, "pid")),
          PAGE_BUDGET_MS / 2,
          `the block never ran; ${driver.describe()}`,
        );
        const pid = Number(readFileSync(join(marks, "pid"), "utf8"));
        driver.process.kill("SIGTERM");
        // The signal is raised again once the groups are killed: the process still ends as SIGTERM ends it.
        expect(await driver.waitForExit(10_000)).toEqual({ code: null, signal: "SIGTERM" });
        await until(() => !alive(pid), 5_000, `the block's sleep (${pid}) is still running`);
      } finally {
        driver.process.kill("SIGKILL");
      }
    },
    PAGE_BUDGET_MS,
  );

  it(
    "starts nothing more once the page is stopped (a block that outlives its test's timeout)",
    async () => {
      marks = mkdtempSync(join(tmpdir(), "doc-marks-"));
      // The first block shrugs off SIGTERM and ends by itself, as if nothing had stopped the page.
      const page = '```sh\ntrap \'\' TERM; touch "$MARKS/first"; sleep 2\n```\n\n```sh\ntouch "$MARKS/second"\n```\n';
      // Kept, so that a block running late still finds its directory; removed below.
      const name = `stopped-${process.pid}`;
      const run = runMarkdown(page, `${name}.md`, { env: { MARKS: marks }, keep: true }).catch((e: unknown) => e);
      await until(() => existsSync(join(marks, "first")), PAGE_BUDGET_MS / 2, "the first block never ran");
      await stopAllPages();
      expect(await run).toBeInstanceOf(DocBlockError);
      expect(existsSync(join(marks, "second")), "the second block ran after the page was stopped").toBe(false);
    },
    PAGE_BUDGET_MS,
  );

  it(
    "runs a page: files between blocks, outputs compared, a skip, a server with its flags, a log line, a helper on a mapped port",
    async () => {
      const report = await runMarkdown(FIXTURE, "fixture.md");
      expect(report.blocks.map((b) => [b.line, b.what])).toEqual([
        [5, "ran"],
        [9, "ran"],
        [15, "compared"],
        [21, "ran"],
        [26, "compared"],
        [31, "skipped: needs a Docker engine"],
        [38, "server"],
        [44, "compared"],
        [49, "compared"],
        [56, "background"],
        [60, "ran"],
        [65, "compared"],
      ]);
    },
    PAGE_BUDGET_MS,
  );

  it(
    "maps a helper's --port as it maps its listen(…): the helper listens on the free port, the page reaches it as written",
    async () => {
      const server =
        'const p = process.argv.indexOf("--port"); require("node:http").createServer((q, s) => s.end("up")).listen(Number(process.argv[p + 1]), "127.0.0.1")';
      const page =
        `<!-- doc-test: background -->\n\`\`\`sh\nnode -e '${server}' -- --port 9092\n\`\`\`\n` +
        "\n```sh\ncurl -s http://127.0.0.1:9092/\n```\n\n<!-- doc-test: output -->\n```text\nup\n```\n";
      const report = await runMarkdown(page, "port-helper.md");
      expect(report.blocks.map((b) => b.what)).toEqual(["background", "ran", "compared"]);
    },
    PAGE_BUDGET_MS,
  );

  it(
    "fails a block that fails, naming page:line, the block, its output and the sandbox's",
    async () => {
      const page = "Intro\n\n```sh\necho first\n```\n\n```sh\necho to-stdout; echo to-stderr >&2; false\n```\n";
      const error = await runMarkdown(page, "broken.md").catch((e: unknown) => e);
      expect(error).toBeInstanceOf(DocBlockError);
      const message = (error as Error).message;
      expect(message).toMatch(/^broken\.md:7: exited with 1/);
      expect(message).toContain("echo to-stdout; echo to-stderr >&2; false");
      expect(message).toMatch(/its stdout:\n {2}to-stdout/);
      expect(message).toMatch(/its stderr:\n {2}to-stderr/);
      expect(message).toMatch(/the sandbox's output:[\s\S]*listening on http:\/\/localhost:8080/);
    },
    PAGE_BUDGET_MS,
  );

  it(
    "stops a block at its time limit, with what it printed so far",
    async () => {
      const page = "```sh\necho started; sleep 60\n```\n";
      const began = Date.now();
      await expect(runMarkdown(page, "slow.md", { blockTimeoutMs: 500 })).rejects.toThrow(
        /^slow\.md:1: still running after 500 ms[\s\S]*its stdout:\n {2}started/,
      );
      expect(Date.now() - began).toBeLessThan(PAGE_BUDGET_MS);
    },
    PAGE_BUDGET_MS,
  );

  it(
    "fails a shown output that differs, and a block that starts a sandbox without the server marker",
    async () => {
      const differs =
        '```sh\necho \'{"code": "ok"}\'\n```\n<!-- doc-test: output -->\n```json\n{"code": "fatal-error"}\n```\n';
      await expect(runMarkdown(differs, "differs.md")).rejects.toThrow(
        /differs\.md:5: the output of the block at line 1 is not the one shown:\n {2}\$\.code: expected "fatal-error", got "ok"/,
      );
      const unmarked = "```sh\nnpx uae-fhir-sandbox --seed 3\n```\n";
      await expect(runMarkdown(unmarked, "unmarked.md")).rejects.toThrow(
        /unmarked\.md:1: this block starts the sandbox .*mark it <!-- doc-test: server -->/,
      );
    },
    PAGE_BUDGET_MS,
  );
});
