import { type ChildProcess, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { SERVE_FLAGS } from "../../src/cli/flags.js";

/** The repository root: where `npm start` and the Docker image's WORKDIR run the CLI from. */
export const ROOT = fileURLToPath(new URL("../../", import.meta.url));
/** The built CLI, as `npm start` and the Dockerfile run it (npm test builds before vitest). */
export const MAIN = "dist/cli/main.js";

/**
 * Longest any child may take to print a line or exit before the test gives up on it: a start takes about 1 s alone,
 * but 10 s was not enough for some at a load average of 12 on 2 cores (2026-11-27).
 */
export const PROCESS_TIMEOUT_MS = 20_000;

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

const running = new Set<ChildProcess>();

/** A child process whose output is collected, with bounded waits on its lines and its exit. */
export class Child {
  stdout = "";
  stderr = "";
  readonly exited: Promise<Exit>;
  #exit: Exit | undefined;

  constructor(readonly process: ChildProcess) {
    running.add(process);
    process.stdout?.setEncoding("utf8").on("data", (chunk: string) => {
      this.stdout += chunk;
    });
    process.stderr?.setEncoding("utf8").on("data", (chunk: string) => {
      this.stderr += chunk;
    });
    this.exited = new Promise((resolve, reject) => {
      process.once("error", reject);
      process.once("close", (code, signal) => {
        running.delete(process);
        this.#exit = { code, signal };
        resolve(this.#exit);
      });
    });
  }

  /** Resolves with the first match of `pattern` in stdout (or stderr); rejects if the process ends first or at the timeout. */
  waitForOutput(
    pattern: RegExp,
    timeoutMs = PROCESS_TIMEOUT_MS,
    from: "stdout" | "stderr" = "stdout",
  ): Promise<RegExpExecArray> {
    return new Promise((resolve, reject) => {
      const stream = this.process[from];
      const check = () => {
        const match = pattern.exec(this[from]);
        if (match) finish(() => resolve(match));
      };
      const timer = setTimeout(
        () => finish(() => reject(new Error(`no ${pattern} in ${timeoutMs} ms; ${this.describe()}`))),
        timeoutMs,
      );
      const onExit = () => {
        check();
        finish(() => reject(new Error(`exited before printing ${pattern}; ${this.describe()}`)));
      };
      const finish = (settle: () => void) => {
        clearTimeout(timer);
        stream?.off("data", onData);
        this.process.off("close", onExit);
        settle();
      };
      // Listeners run in order: the collecting listener above has already appended the chunk.
      const onData = () => check();
      stream?.on("data", onData);
      this.process.once("close", onExit);
      if (this.#exit) onExit();
      else check();
    });
  }

  /** The exit, or a rejection when it takes longer than `timeoutMs`. */
  waitForExit(timeoutMs = PROCESS_TIMEOUT_MS): Promise<Exit> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`still running after ${timeoutMs} ms; ${this.describe()}`)), timeoutMs);
    });
    return Promise.race([this.exited, late]).finally(() => clearTimeout(timer));
  }

  describe(): string {
    return `stdout: ${JSON.stringify(this.stdout)}, stderr: ${JSON.stringify(this.stderr)}`;
  }
}

/**
 * The test runner's environment without the sandbox's own variables (a PORT
 * or HOST set on the machine must not leak into the child), plus `extra`.
 */
export function childEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const f of SERVE_FLAGS) delete env[f.env];
  return { ...env, ...extra };
}

/** Runs a command (argv form) from the repository root. */
export function spawnCommand(argv: readonly string[], env: NodeJS.ProcessEnv = childEnv()): Child {
  const [command, ...args] = argv;
  if (command === undefined) throw new Error("spawnCommand needs a command");
  return new Child(spawn(command, args, { cwd: ROOT, env, stdio: ["ignore", "pipe", "pipe"] }));
}

/** Runs the built CLI with `args`. */
export function cli(args: readonly string[], env: Record<string, string> = {}): Child {
  if (!existsSync(`${ROOT}${MAIN}`)) throw new Error(`${MAIN} is missing: run npm run build (npm test does) first`);
  return spawnCommand([process.execPath, MAIN, ...args], childEnv(env));
}

/** The URL a serving CLI prints on its "listening on" line. */
export const LISTENING = /listening on (https?:\/\/[^\s"]+)/;

/** Starts a server process and waits for its "listening on http://..." line. */
export async function serve(child: Child): Promise<{ child: Child; url: string }> {
  const [, url] = await child.waitForOutput(LISTENING);
  return { child, url: url as string };
}

/** Starts `node dist/cli/main.js serve --port 0 --host 127.0.0.1 ...args`. */
export function startCli(args: readonly string[] = [], env: Record<string, string> = {}) {
  return serve(cli(["serve", "--port", "0", "--host", "127.0.0.1", ...args], env));
}

/** Runs the CLI to its end: exit code and output. */
export async function runToExit(args: readonly string[], env: Record<string, string> = {}) {
  const child = cli(args, env);
  const exit = await child.waitForExit();
  return { ...exit, stdout: child.stdout, stderr: child.stderr };
}

/** Kills whatever a test left running (afterEach), so no child outlives its test. */
export async function killStray(): Promise<void> {
  const left = [...running];
  for (const child of left) child.kill("SIGKILL");
  await Promise.all(
    left.map((child) =>
      child.exitCode !== null || child.signalCode !== null
        ? undefined
        : new Promise((resolve) => child.once("close", resolve)),
    ),
  );
}

export interface HttpReply {
  status: number;
  headers: Headers;
  text: string;
  // biome-ignore lint/suspicious/noExplicitAny: tests read arbitrary FHIR JSON
  json: any;
}

/** fetch with a bounded wait, the body read as text and parsed when it is JSON. */
export async function http(url: string, init: RequestInit = {}): Promise<HttpReply> {
  const res = await fetch(url, { signal: AbortSignal.timeout(PROCESS_TIMEOUT_MS), ...init });
  const text = await res.text();
  let json: unknown;
  try {
    json = text === "" ? null : JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, headers: res.headers, text, json };
}
