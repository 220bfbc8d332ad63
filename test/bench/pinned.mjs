// Processes pinned to a core (taskset, util-linux): the server under test on
// one core, the load generator (load-client.mjs, autocannon) on the other, so
// neither steals the other's CPU. Falls back to unpinned where taskset or a
// second core is missing, and says so (pinning()).
import { execFileSync, spawn, spawnSync } from "node:child_process";
import { once } from "node:events";
import { readFileSync } from "node:fs";
import { availableParallelism } from "node:os";
import { fileURLToPath } from "node:url";
import { listeningUrl, stopChild } from "./cold-start.mjs";
import { post } from "./load.mjs";

export const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const LOAD_CLIENT = fileURLToPath(new URL("./load-client.mjs", import.meta.url));
export const CLI = fileURLToPath(new URL("../../dist/cli/main.js", import.meta.url));
const BARE = fileURLToPath(new URL("./bare-server.mjs", import.meta.url));
const REFERENCE = fileURLToPath(new URL("./reference-server.mjs", import.meta.url));

/** Cores: the server's and the load generator's. */
export const SERVER_CORE = 0;
export const LOAD_CORE = 1;

const canPin =
  availableParallelism() >= 2 && spawnSync("taskset", ["-c", "0", "true"], { stdio: "ignore" }).status === 0;

/** How the processes are placed, for the report. */
export function pinning() {
  return canPin
    ? `server pinned to core ${SERVER_CORE}, load generator to core ${LOAD_CORE} (taskset)`
    : "NOT pinned (taskset or a second core missing): figures include contention between server and load";
}

/** argv for `node args…` on `core` (through taskset where it can pin). */
function onCore(core, nodeArgs) {
  return canPin ? ["taskset", ["-c", String(core), process.execPath, ...nodeArgs]] : [process.execPath, nodeArgs];
}

/**
 * Starts a server process on the server core and waits for its "listening on
 * URL" line. `kind`: "sandbox" (the CLI with `args`), "hono" or "node" (bare-server.mjs
 * answering `cannedFile`), "reference" (reference-server.mjs, `variant` core or full). `nodeOptions` go before the
 * script (e.g. --cpu-prof); `ipc` opens an IPC channel.
 *
 * @returns {Promise<{ url: string, pid: number, child: import("node:child_process").ChildProcess, stop(): Promise<void> }>}
 */
export async function startPinned({
  kind,
  args = [],
  nodeOptions = [],
  path,
  cannedFile,
  variant,
  env,
  ipc = false,
  timeoutMs = 30_000,
}) {
  const script =
    kind === "sandbox"
      ? [CLI, "serve", "--port", "0", "--host", "127.0.0.1", ...args]
      : kind === "reference"
        ? [REFERENCE, variant]
        : [BARE, kind, path, cannedFile];
  const [command, argv] = onCore(SERVER_CORE, [...nodeOptions, ...script]);
  // With ipc, the channel's descriptor passes through taskset's exec to node (memory-probe.mjs answers on it).
  const stdio = ["ignore", "pipe", "pipe", ...(ipc ? ["ipc"] : [])];
  const child = spawn(command, argv, { cwd: ROOT, stdio, env: { ...process.env, ...env } });
  const url = await listeningUrl(child, timeoutMs).catch(async (error) => {
    await stopChild(child);
    throw error;
  });
  child.stderr.resume();
  return { url, pid: child.pid, child, stop: () => stopChild(child, 10_000) };
}

/**
 * The answer of a fresh server (startPinned's `spec`) to one POST of `body` to `path`: status and body text, for
 * checking that the servers of a comparison answer alike before they are measured.
 */
export async function answerOf(spec, path, body, timeoutMs) {
  const server = await startPinned(spec);
  try {
    return await post(undefined, `${server.url}${path}`, body, timeoutMs);
  } finally {
    await server.stop();
  }
}

/**
 * Runs load-client.mjs on the load core and resolves with its result:
 * { requests, seconds, rps, p50, p99, max, errors, timeouts, resets, statuses, bytesRead }.
 */
export async function load(job, timeoutMs) {
  const [command, argv] = onCore(LOAD_CORE, [LOAD_CLIENT]);
  const child = spawn(command, argv, { cwd: ROOT, stdio: ["pipe", "pipe", "pipe"] });
  child.stdin.end(JSON.stringify(job));
  let out = "";
  let err = "";
  child.stdout.on("data", (chunk) => {
    out += chunk;
  });
  child.stderr.on("data", (chunk) => {
    err += chunk;
  });
  const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
  const [code] = await once(child, "exit");
  clearTimeout(timer);
  if (code !== 0)
    throw new Error(`the load generator failed (${code ?? "killed after timeout"}): ${err.slice(0, 2000)}`);
  return JSON.parse(out.trim().split("\n").at(-1));
}

/**
 * CPU time (user + system) a process has used, in microseconds, from /proc:
 * per request, steadier than requests per second on a shared machine.
 */
export function cpuMicros(pid) {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ");
  const ticks = Number(fields[11]) + Number(fields[12]);
  return (ticks * 1e6) / CLOCK_TICKS;
}

const CLOCK_TICKS = (() => {
  try {
    return Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim()) || 100;
  } catch {
    return 100;
  }
})();

const hasCurl = spawnSync("curl", ["--version"], { stdio: "ignore" }).status === 0;

/**
 * One GET read to its end: milliseconds from sending to the last byte, and
 * the bytes. By curl on the load core where there is curl (its own clock, so
 * starting the process is not counted), else by fetch in this process.
 *
 * @returns {Promise<{ ms: number, bytes: number, status: number }>}
 */
export async function timedGet(url, timeoutMs) {
  if (hasCurl) {
    const args = [
      "-s",
      "-o",
      "/dev/null",
      "--max-time",
      String(timeoutMs / 1000),
      "-w",
      "%{http_code} %{time_total} %{size_download}",
      url,
    ];
    const [command, argv] = canPin ? ["taskset", ["-c", String(LOAD_CORE), "curl", ...args]] : ["curl", args];
    const child = spawn(command, argv, { stdio: ["ignore", "pipe", "ignore"] });
    let out = "";
    child.stdout.on("data", (chunk) => {
      out += chunk;
    });
    await once(child, "exit");
    const [status, seconds, bytes] = out.trim().split(" ").map(Number);
    return { ms: seconds * 1000, bytes, status };
  }
  const started = performance.now();
  const res = await fetch(url, { signal: AbortSignal.timeout(timeoutMs) });
  let bytes = 0;
  for await (const chunk of res.body) bytes += chunk.byteLength;
  return { ms: performance.now() - started, bytes, status: res.status };
}

/** Resident set (VmRSS) and its peak (VmHWM) of a process, in bytes, from /proc. */
export function rssOf(pid) {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kb = (name) => Number(new RegExp(`^${name}:\\s+(\\d+) kB$`, "m").exec(status)?.[1] ?? Number.NaN) * 1024;
  return { rss: kb("VmRSS"), peak: kb("VmHWM") };
}
