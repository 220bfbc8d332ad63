// Runs a Markdown page as a reader would: its sh/bash blocks in order, each with `bash -euo pipefail`, in one fresh
// temporary directory per page (files one block writes are there for the next; shell variables and `cd` are not),
// against a sandbox the runner starts from the built CLI (dist/) with the repository's scenarios, on a free port.
// `localhost:8080` in a block is that sandbox; other fixed ports a page or the shipped scenarios name (a pharmacy's
// 9090) stand for free ports too, and show as written again in what the blocks print. `npx uae-fhir-sandbox` runs
// the built CLI; nothing goes to the npm registry. Markers, HTML comments on the lines just before a fence:
//   <!-- doc-test: skip — <reason> -->  not run; the reason says why it cannot run here
//   <!-- doc-test: server -->           the block's sandbox command starts the page's sandbox anew, with its flags
//                                       (on a free port); the rest of the block then runs
//   <!-- doc-test: background -->       a long-running helper: started, waited on until it listens (or prints),
//                                       stopped at the page's end
//   <!-- doc-test: output -->           on a json/text block: the stdout of the shell block before it
//   <!-- doc-test: log -->              on a text block: lines the sandbox printed (stdout and stderr) meanwhile
// Shown output is compared with volatile values masked (doc-compare.ts). A page's test is run-<page>.test.ts.

import { type ChildProcess, spawn } from "node:child_process";
import {
  chmodSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { createServer, Socket } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterEach, describe, it } from "vitest";
import { Child, childEnv, LISTENING, MAIN, ROOT } from "../cli/cli-process.js";
import {
  type CompareContext,
  compareJson,
  compareText,
  missingLogLines,
  pageContext,
  parseJsonOutput,
  textLines,
} from "./doc-compare.js";
import { type Block, isShell, markerOf, parseBlocks } from "./markdown-blocks.js";

export { type Block, isShell, type Marker, markerOf, parseBlocks } from "./markdown-blocks.js";

/** Longest one block may run (a block is a few commands against a local sandbox). */
export const BLOCK_TIMEOUT_MS = 60_000;
/** Longest the sandbox (or a background helper) may take to listen. */
export const START_TIMEOUT_MS = 30_000;
/** Longest the runner waits for shown log lines to appear on the sandbox's terminal. */
const LOG_WAIT_MS = 10_000;
/** The port a page's commands call the sandbox on. */
export const SANDBOX_PORT = 8080;

export interface PageOptions {
  /** Extra environment for every block and every sandbox the page starts. */
  env?: Record<string, string>;
  /** Per-block time limit (default BLOCK_TIMEOUT_MS). */
  blockTimeoutMs?: number;
  /** Arguments added to the page's first sandbox (e.g. a flag its first block assumes). */
  serveArgs?: readonly string[];
  /** Keep the temporary directory (for debugging a page). */
  keep?: boolean;
}

export interface BlockReport {
  line: number;
  /** "ran", "server", "background", "skipped: <reason>", or "compared" (an output or log block). */
  what: string;
  ms: number;
}

export interface PageReport {
  page: string;
  blocks: BlockReport[];
  ms: number;
}

/** A failure of a page: where, which block, what it printed and what the sandbox printed. */
export class DocBlockError extends Error {
  override name = "DocBlockError";
}

/** `README.md` → `readme`, `docs/ci.md` → `ci`: the page's test is `test/docs/run-<slug>.test.ts`. */
export function pageSlug(page: string): string {
  return (page.split("/").pop() as string).replace(/\.md$/i, "").toLowerCase();
}

/** A TCP port nothing listens on now (the OS's choice). */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => server.once("error", reject).listen(0, "127.0.0.1", resolve));
  const address = server.address();
  await new Promise((resolve) => server.close(resolve));
  if (address === null || typeof address === "string") throw new Error("no port from the OS");
  return address.port;
}

/** localhost / 127.0.0.1 ports named in `text`. */
function portsIn(text: string): Set<number> {
  const ports = new Set<number>();
  for (const m of text.matchAll(/\b(?:localhost|127\.0\.0\.1):(\d{2,5})\b/g)) ports.add(Number(m[1]));
  return ports;
}

/** Ports a background helper listens on by number (`.listen(9091, …)`, `--port 9091`), besides host:port ones. */
function listenPorts(text: string): Set<number> {
  const ports = portsIn(text);
  for (const m of text.matchAll(/\blisten\(\s*(\d{2,5})\b|--port[= ](\d{2,5})\b/g)) ports.add(Number(m[1] ?? m[2]));
  return ports;
}

/**
 * The words of a command line's first simple command, quotes and escapes read as the shell reads them, up to a
 * pipe, a list operator, a redirection or a comment. Nothing is expanded or run: this only recognises commands.
 */
export function shellWords(line: string): string[] {
  const words: string[] = [];
  let word: string | undefined;
  for (let i = 0; i < line.length; i++) {
    const c = line[i] as string;
    if (/\s/.test(c)) {
      if (word !== undefined) words.push(word);
      word = undefined;
    } else if (c === "'") {
      const end = line.indexOf("'", i + 1);
      word = (word ?? "") + line.slice(i + 1, end < 0 ? undefined : end);
      i = end < 0 ? line.length : end;
    } else if (c === '"') {
      word ??= "";
      for (i++; i < line.length && line[i] !== '"'; i++) word += line[i] === "\\" ? (line[++i] ?? "") : line[i];
    } else if (c === "\\") word = (word ?? "") + (line[++i] ?? "");
    else if (/[|&;<>()]/.test(c) || (c === "#" && word === undefined)) break;
    else word = (word ?? "") + c;
  }
  if (word !== undefined) words.push(word);
  return words;
}

/** The CLI commands that do their job and exit; anything else after the program name starts the sandbox. */
const ONE_SHOT = new Set([
  "validate",
  "schema",
  "example",
  "export",
  "replay",
  "backup",
  "certs",
  "help",
  "--help",
  "-h",
]);

interface ServeCommand {
  env: Record<string, string>;
  args: string[];
}

/** The sandbox a command line starts (`npm start`, `npx uae-fhir-sandbox …`, `node dist/cli/main.js …`), if it does. */
export function serveCommand(line: string): ServeCommand | undefined {
  if (!/\b(npm|npx|node|uae-fhir-sandbox)\b/.test(line)) return undefined;
  const words = shellWords(line);
  const env: Record<string, string> = {};
  while (words.length > 0 && /^[A-Z_][A-Z0-9_]*=/.test(words[0] as string)) {
    const [k, ...v] = (words.shift() as string).split("=");
    env[k as string] = v.join("=");
  }
  let args: string[];
  const [cmd, a1, a2] = words;
  if (cmd === "npm" && (a1 === "start" || (a1 === "run" && a2 === "start"))) {
    args = words.slice(a1 === "start" ? 2 : 3);
    if (args[0] === "--") args.shift();
  } else if (cmd === "npx" && words.includes("uae-fhir-sandbox"))
    args = words.slice(words.indexOf("uae-fhir-sandbox") + 1);
  else if (cmd === "uae-fhir-sandbox") args = words.slice(1);
  else if (cmd === "node" && a1 !== undefined && /(^|\/)(dist\/cli\/main\.js|bundle\/[\w.-]+\.m?js)$/.test(a1))
    args = words.slice(2);
  else return undefined;
  if (args[0] === "serve") args.shift();
  else if (args[0] !== undefined && !args[0].startsWith("-")) return undefined;
  if (args[0] !== undefined && ONE_SHOT.has(args[0])) return undefined;
  return { env, args };
}

/** A block's lines with `\`-continued lines joined, each with its first line number in the block (0-based). */
function logicalLines(text: string): Array<{ index: number; text: string }> {
  const out: Array<{ index: number; text: string }> = [];
  const lines = text.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const index = i;
    let line = lines[i] as string;
    while (line.endsWith("\\") && i + 1 < lines.length) line = `${line.slice(0, -1)} ${lines[++i]}`;
    out.push({ index, text: line });
  }
  return out;
}

/** The YAML files of a scenarios folder, at any depth. */
function scenarioFiles(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: "utf8" })
    .filter((f) => /\.ya?ml$/.test(f))
    .map((f) => join(dir, f));
}

/** Sends `signal` to the process group `pid` leads; a group already gone is fine. */
function killGroup(pid: number | undefined, signal: NodeJS.Signals): void {
  if (pid === undefined) return;
  try {
    process.kill(-pid, signal);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== "ESRCH") throw e;
  }
}

/**
 * Kills a process group started with `detached: true`, and waits for its leader to be gone. The group is signalled
 * even when its leader has exited: what the leader started in the background (`sleep 300 &`) is still in it.
 */
async function stopGroup(child: ChildProcess, signal: NodeJS.Signals = "SIGTERM"): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) {
    killGroup(child.pid, "SIGKILL");
    return;
  }
  const gone = new Promise((resolve) => child.once("exit", resolve));
  killGroup(child.pid, signal);
  const timer = setTimeout(() => killGroup(child.pid, "SIGKILL"), 5_000);
  await gone;
  clearTimeout(timer);
  // The leader may leave members behind that ignore `signal`.
  killGroup(child.pid, "SIGKILL");
}

/** Resolves once something accepts connections on 127.0.0.1:`port`, polling every 50 ms until `timeoutMs`. */
async function waitForPort(port: number, timeoutMs: number, alive: () => boolean): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline && alive()) {
    const open = await new Promise<boolean>((resolve) => {
      const socket = new Socket();
      const done = (listening: boolean) => {
        socket.destroy();
        resolve(listening);
      };
      socket.once("connect", () => done(true)).once("error", () => done(false));
      socket.connect(port, "127.0.0.1");
    });
    if (open) return true;
    await new Promise((r) => setTimeout(r, 50));
  }
  return false;
}

const tail = (s: string, lines = 40) => {
  const all = s.trimEnd().split("\n");
  return (all.length > lines ? [`… (${all.length - lines} lines before)`, ...all.slice(-lines)] : all).join("\n");
};
const indent = (s: string) => (s.trim() === "" ? "  (nothing)" : s.replace(/^/gm, "  "));

/** Pages running now: a test that times out leaves its run behind, and afterEach (or the exit) stops it. */
const running = new Set<PageRun>();

/** Stops every page still running: their sandboxes and helpers, and removes their directories. */
export async function stopAllPages(): Promise<void> {
  await Promise.all([...running].map((run) => run.close()));
}

/** Kills every process group of every page still running, at once (the process is about to end). */
function killAllGroups(): void {
  for (const run of running) for (const child of run.children) killGroup(child.process.pid, "SIGKILL");
}

// Sandboxes, blocks and helpers run in their own process groups, which outlive this process unless killed: on its
// exit, and on the signals that end it (a killed worker runs neither afterEach nor "exit"), which are then re-raised.
process.once("exit", killAllGroups);
for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const)
  process.once(signal, () => {
    killAllGroups();
    process.kill(process.pid, signal);
  });

/** One page's run: its directory, its ports, its sandbox and helpers. */
class PageRun {
  readonly dir: string;
  readonly binDir: string;
  /** Fixed port in the page → the free port it stands for. */
  readonly ports = new Map<number, number>();
  sandbox: Child | undefined;
  /** What the sandbox printed on its terminal, stdout and stderr interleaved as they came. */
  terminal = "";
  /** Every process group the page started (sandboxes, blocks, helpers). */
  readonly children = new Set<Child>();
  /** Closed: a block still running after the test gave up (a timeout) must not start anything more. */
  closed = false;
  readonly input: string;
  /** The page's masks: what it sends, when it shows it ran, the volatile values matched so far. */
  readonly ctx: CompareContext;
  /** The last block that ran, and what it printed. */
  last: { block: Block; stdout: string; stderr: string; sandboxFrom: number } | undefined;

  constructor(
    readonly page: string,
    readonly blocks: readonly Block[],
    readonly options: PageOptions,
  ) {
    this.dir = mkdtempSync(join(tmpdir(), `doc-${pageSlug(page).replace(/[^a-z0-9-]+/g, "-")}-`));
    this.binDir = join(this.dir, ".doc-test", "bin");
    this.input = blocks
      .filter(isShell)
      .map((b) => b.text)
      .join("\n");
    const shown = blocks.filter((b) => markerOf(b, "output") || markerOf(b, "log")).map((b) => b.text);
    this.ctx = pageContext(this.input, shown.join("\n"));
    running.add(this);
  }

  /** Free ports for every fixed port the page's commands and the shipped scenarios name (8080 is the sandbox's). */
  async mapPorts(): Promise<void> {
    const scenarioText = scenarioFiles(join(ROOT, "scenarios"))
      .map((f) => readFileSync(f, "utf8"))
      .join("\n");
    const helpers = this.blocks.filter((b) => markerOf(b, "background")).flatMap((b) => [...listenPorts(b.text)]);
    for (const p of new Set([...portsIn(this.input), ...portsIn(scenarioText), ...helpers, SANDBOX_PORT]))
      this.ports.set(p, await freePort());
  }

  /** The page's working directory: a copy of the repository's scenarios/ and docs/ (ports mapped), and the CLI. */
  prepare(): void {
    for (const d of ["scenarios", "docs"]) cpSync(join(ROOT, d), join(this.dir, d), { recursive: true });
    for (const f of scenarioFiles(join(this.dir, "scenarios"))) writeFileSync(f, this.mapText(readFileSync(f, "utf8")));
    mkdirSync(this.binDir, { recursive: true });
    const cli = `#!/bin/sh\nexec "${process.execPath}" "${join(ROOT, MAIN)}" "$@"\n`;
    writeFileSync(join(this.binDir, "uae-fhir-sandbox"), cli);
    // npx runs the package's CLI; anything else would go to the npm registry, which a page test must not.
    const npx = [
      "#!/bin/sh",
      'while [ "$#" -gt 0 ]; do case "$1" in -y|--yes|--no-install|--offline) shift;; *) break;; esac; done',
      'if [ "$1" = uae-fhir-sandbox ]; then shift; exec uae-fhir-sandbox "$@"; fi',
      'echo "doc-test: npx $1 is not available offline (only npx uae-fhir-sandbox is)" >&2; exit 127',
      "",
    ].join("\n");
    writeFileSync(join(this.binDir, "npx"), npx);
    chmodSync(join(this.binDir, "uae-fhir-sandbox"), 0o755);
    chmodSync(join(this.binDir, "npx"), 0o755);
  }

  /** A background block's text: its listening ports by number too (`.listen(9091, …)`). */
  mapListen(text: string): string {
    // No \b before --port: between a space and "-" there is no word boundary, so it never matched a --port.
    return this.mapText(text).replace(/(\blisten\(\s*|--port[= ])(\d{2,5})\b/g, (all, before: string, port: string) => {
      const to = this.ports.get(Number(port));
      return to === undefined ? all : `${before}${to}`;
    });
  }

  /** `text` with every mapped port replaced by the port standing for it. */
  mapText(text: string): string {
    return text.replace(/\b(localhost|127\.0\.0\.1):(\d{2,5})\b/g, (all, host: string, port: string) => {
      const to = this.ports.get(Number(port));
      return to === undefined ? all : `${host}:${to}`;
    });
  }

  /** Output with the free ports shown as the page's own (the sandbox echoes the URL it was called on). */
  unmapText(text: string): string {
    const back = new Map([...this.ports].map(([from, to]) => [to, from]));
    return text.replace(/\b(localhost|127\.0\.0\.1|\[::1\]):(\d{2,5})\b/g, (all, host: string, port: string) => {
      const from = back.get(Number(port));
      return from === undefined ? all : `${host}:${from}`;
    });
  }

  env(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
    return childEnv({
      ...this.options.env,
      ...extra,
      PATH: `${this.binDir}:${dirname(process.execPath)}:${process.env.PATH ?? ""}`,
      HOME: this.dir,
      NO_COLOR: "1",
    });
  }

  where(block: Block): string {
    return `${this.page}:${block.line}`;
  }

  sandboxOutput(): string {
    if (this.sandbox === undefined) return "(no sandbox running)";
    return `stdout:\n${indent(tail(this.unmapText(this.sandbox.stdout)))}\nstderr:\n${indent(tail(this.unmapText(this.sandbox.stderr)))}`;
  }

  fail(block: Block, what: string, out?: { stdout: string; stderr: string }): never {
    const parts = [
      `${this.where(block)}: ${what}`,
      `the block (\`\`\`${block.info}):`,
      indent(block.text),
      ...(out ? [`its stdout:`, indent(tail(out.stdout)), `its stderr:`, indent(tail(out.stderr))] : []),
      `the sandbox's output:`,
      indent(this.sandboxOutput()),
    ];
    throw new DocBlockError(parts.join("\n"));
  }

  /** Starts `command` in its own process group (so that all it starts can be stopped), unless the page is closed. */
  spawnGroup(command: string, args: string[], env: NodeJS.ProcessEnv): Child {
    if (this.closed) throw new DocBlockError(`${this.page}: the page was stopped (its test ended); nothing more runs`);
    const child = new Child(
      spawn(command, args, { cwd: this.dir, env, stdio: ["ignore", "pipe", "pipe"], detached: true }),
    );
    this.children.add(child);
    return child;
  }

  async stopSandbox(): Promise<void> {
    if (this.sandbox === undefined) return;
    await stopGroup(this.sandbox.process);
  }

  /** Starts the real CLI serving with `args` on the free port that stands for 8080 (or for the port `args` name). */
  async startSandbox(command: ServeCommand, block?: Block): Promise<void> {
    await this.stopSandbox();
    const args = [...command.args];
    const env = { ...command.env };
    let fixed = SANDBOX_PORT;
    const portAt = args.findIndex((a) => a === "--port" || a.startsWith("--port="));
    if (portAt >= 0) {
      const value = args[portAt]?.includes("=") ? args[portAt]?.split("=")[1] : args[portAt + 1];
      args.splice(portAt, args[portAt]?.includes("=") ? 1 : 2);
      fixed = Number(value);
    } else if (env.PORT !== undefined) fixed = Number(env.PORT);
    delete env.PORT;
    if (!this.ports.has(fixed)) this.ports.set(fixed, await freePort());
    // The page's commands reach this sandbox on 8080 whatever port the block starts it on.
    this.ports.set(SANDBOX_PORT, this.ports.get(fixed) as number);
    // No --host, as a reader starts it: the banner then names localhost, as the pages show it.
    const argv = [
      join(ROOT, MAIN),
      "serve",
      // --tls-port's number is a fixed port of the page too (https://localhost:8443 in its commands).
      ...args.map((a, i) => (args[i - 1] === "--tls-port" ? String(this.ports.get(Number(a)) ?? a) : this.mapText(a))),
      "--port",
      String(this.ports.get(fixed)),
    ];
    // A reader's terminal shows the pretty log; a block may still ask for --log-format json.
    const child = this.spawnGroup(process.execPath, argv, this.env({ LOG_FORMAT: "pretty", ...env }));
    this.sandbox = child;
    // The terminal: stdout and stderr as they came (warnings go to stderr, in between the lines of calls).
    this.terminal = "";
    for (const stream of [child.process.stdout, child.process.stderr])
      stream?.on("data", (chunk: string) => {
        this.terminal += chunk;
      });
    try {
      await child.waitForOutput(LISTENING, START_TIMEOUT_MS);
    } catch (e) {
      const what = `the sandbox did not start (serve ${args.join(" ")}): ${(e as Error).message.split(";")[0]}`;
      if (block) this.fail(block, what);
      throw new DocBlockError(`${this.page}: ${what}\n${this.sandboxOutput()}`);
    }
  }

  /** Runs a shell block to its end; a non-zero exit or the time limit fails the page. */
  async runShell(block: Block, text: string): Promise<{ stdout: string; stderr: string }> {
    const script = join(this.dir, ".doc-test", `block-${block.line}.sh`);
    writeFileSync(script, `${this.mapText(text)}\n`);
    const child = this.spawnGroup("bash", ["--noprofile", "--norc", "-euo", "pipefail", script], this.env());
    const limit = this.options.blockTimeoutMs ?? BLOCK_TIMEOUT_MS;
    let exit: { code: number | null; signal: NodeJS.Signals | null };
    try {
      exit = await child.waitForExit(limit);
    } catch {
      await stopGroup(child.process, "SIGKILL");
      this.fail(block, `still running after ${limit} ms`, this.outputOf(child));
    }
    const out = this.outputOf(child);
    if (exit.code !== 0) this.fail(block, `exited with ${exit.code ?? exit.signal}`, out);
    return out;
  }

  outputOf(child: Child): { stdout: string; stderr: string } {
    return { stdout: this.unmapText(child.stdout), stderr: this.unmapText(child.stderr) };
  }

  /** A server block: its sandbox command starts the sandbox; the rest of the block then runs as written. */
  async runServer(block: Block): Promise<{ stdout: string; stderr: string }> {
    const lines = logicalLines(block.text);
    const starts = lines.map((l) => ({ ...l, serve: serveCommand(l.text) })).filter((l) => l.serve !== undefined);
    if (starts.length !== 1)
      this.fail(block, `a server block starts the sandbox once (found ${starts.length} commands that do)`);
    const start = starts[0] as { index: number; text: string; serve: ServeCommand };
    await this.startSandbox(start.serve, block);
    const rest = lines.filter((l) => l !== lines.find((x) => x.index === start.index)).map((l) => l.text);
    if (rest.every((l) => l.trim() === "" || l.trim().startsWith("#"))) return { stdout: "", stderr: "" };
    return this.runShell(block, rest.join("\n"));
  }

  /** A background block: started, then waited on until it listens on the ports it names (or prints something). */
  async runBackground(block: Block): Promise<void> {
    const script = join(this.dir, ".doc-test", `block-${block.line}.sh`);
    writeFileSync(script, `${this.mapListen(block.text)}\n`);
    const child = this.spawnGroup("bash", ["--noprofile", "--norc", "-euo", "pipefail", script], this.env());
    const alive = () => child.process.exitCode === null && child.process.signalCode === null;
    const ports = [...listenPorts(block.text)]
      .filter((p) => p !== SANDBOX_PORT)
      .map((p) => this.ports.get(p) as number);
    if (ports.length > 0) {
      for (const port of ports)
        if (!(await waitForPort(port, START_TIMEOUT_MS, alive)))
          this.fail(block, `the background command never listened on ${port}`, this.outputOf(child));
    } else {
      await child.waitForOutput(/\S/, START_TIMEOUT_MS).catch(() => {
        this.fail(block, "the background command printed nothing", this.outputOf(child));
      });
    }
  }

  async compare(block: Block, kind: "output" | "log"): Promise<void> {
    const last = this.last;
    if (last === undefined) this.fail(block, `no block ran before this ${kind} block`);
    const ctx = this.ctx;
    if (kind === "output") {
      const problems =
        block.lang === "json" ? this.jsonProblems(block, last.stdout, ctx) : compareText(block.text, last.stdout, ctx);
      if (problems.length > 0)
        this.fail(
          block,
          `the output of the block at line ${last.block.line} is not the one shown:\n${indent(problems.join("\n"))}`,
          last,
        );
      return;
    }
    if (this.sandbox === undefined) this.fail(block, "no sandbox is running to have printed these lines");
    // Lines printed since the previous block started; they may come just after its answer, so wait for them.
    const printed = () => textLines(this.unmapText(this.terminal.slice(last.sandboxFrom)));
    const deadline = Date.now() + LOG_WAIT_MS;
    let missing = missingLogLines(block.text, printed(), ctx);
    while (missing.length > 0 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 50));
      missing = missingLogLines(block.text, printed(), ctx);
    }
    if (missing.length > 0)
      this.fail(
        block,
        `the sandbox did not print these lines (in this order) while the block at line ${last.block.line} ran:\n${indent(missing.join("\n"))}`,
      );
  }

  jsonProblems(block: Block, stdout: string, ctx: CompareContext): string[] {
    const shown = parseJsonOutput(block.text);
    if (shown === undefined) return [`the shown JSON does not parse`];
    const got = parseJsonOutput(stdout);
    if (got === undefined) return [`the block's output is not JSON`];
    if (shown.length !== got.length) return [`expected ${shown.length} JSON values, got ${got.length}`];
    return shown.flatMap((v, i) => compareJson(v, got[i], ctx, shown.length > 1 ? `$${i}` : "$"));
  }

  async close(): Promise<void> {
    this.closed = true;
    await Promise.all([...this.children].map((c) => stopGroup(c.process)));
    running.delete(this);
    if (!this.options.keep) rmSync(this.dir, { recursive: true, force: true });
  }
}

/** Runs `markdown` (named `page` in failures) as its page test does; resolves with what ran and how long it took. */
export async function runMarkdown(markdown: string, page: string, options: PageOptions = {}): Promise<PageReport> {
  const began = Date.now();
  const blocks = parseBlocks(markdown, page);
  const run = new PageRun(page, blocks, options);
  const report: PageReport = { page, blocks: [], ms: 0 };
  try {
    await run.mapPorts();
    run.prepare();
    await run.startSandbox({ env: {}, args: [...(options.serveArgs ?? [])] });
    for (const block of blocks) {
      const t = Date.now();
      const note = (what: string) => report.blocks.push({ line: block.line, what, ms: Date.now() - t });
      const compare = markerOf(block, "output") ? "output" : markerOf(block, "log") ? "log" : undefined;
      if (compare) {
        await run.compare(block, compare);
        note("compared");
        continue;
      }
      if (!isShell(block)) continue;
      const skip = markerOf(block, "skip");
      if (skip) {
        note(`skipped: ${skip.reason}`);
        continue;
      }
      const sandboxFrom = run.terminal.length;
      if (markerOf(block, "server")) {
        const out = await run.runServer(block);
        run.last = { block, ...out, sandboxFrom: 0 };
        note("server");
      } else if (markerOf(block, "background")) {
        await run.runBackground(block);
        run.last = { block, stdout: "", stderr: "", sandboxFrom };
        note("background");
      } else {
        const starts = logicalLines(block.text).filter((l) => serveCommand(l.text) !== undefined);
        if (starts.length > 0)
          run.fail(
            block,
            `this block starts the sandbox (${starts[0]?.text.trim()}): mark it <!-- doc-test: server -->`,
          );
        const out = await run.runShell(block, block.text);
        run.last = { block, ...out, sandboxFrom };
        note("ran");
      }
    }
  } finally {
    await run.close();
  }
  report.ms = Date.now() - began;
  return report;
}

/** Runs the page at `page` (relative to the repository root). */
export function runPage(page: string, options: PageOptions = {}): Promise<PageReport> {
  if (!existsSync(join(ROOT, MAIN))) throw new Error(`${MAIN} is missing: run npm run build (npm test does) first`);
  return runMarkdown(readFileSync(join(ROOT, page), "utf8"), page, options);
}

/**
 * The test of a page: one test that runs its blocks in order (they build on each other). `timeoutMs` is the test's
 * budget: measured on a loaded 2-core machine, with three times that as headroom.
 */
export function pageTest(page: string, timeoutMs: number, options: PageOptions = {}): void {
  describe(`${page} works as written`, () => {
    afterEach(stopAllPages);
    it(
      "runs every block in order, and what it prints is what the page shows",
      async () => {
        const report = await runPage(page, options);
        if (process.env.DOC_TEST_REPORT)
          console.log(
            `${page}: ${report.ms} ms\n${report.blocks.map((b) => `  ${b.line}: ${b.what} (${b.ms} ms)`).join("\n")}`,
          );
      },
      timeoutMs,
    );
  });
}
