import { existsSync, mkdirSync, statSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import { shownValue } from "../record/compare.js";
import { type JunitCase, junitXml } from "../record/junit.js";
import { JournalLineError, newReadStats, readJournal } from "../record/read-journal.js";
import { type ReplayResult, replayCalls } from "../record/replay.js";
import { parseCommandLine } from "./parse-command-line.js";

export const REPLAY_USAGE = `Usage: uae-fhir-sandbox replay <calls.ndjson> --target <url> [options]

Re-sends the recorded inbound calls (a --journal-file, or the NDJSON of
GET /__admin/calls/export) one after the other, in recorded order, with the same
method, path, content type and body, to any target (a sandbox, a staging service),
and compares each answer with the recorded one.

Not compared, because they legitimately change from one answer to the next:
  the response Bundle's id and every Bundle.entry[i].resource.id (MessageHeader ids,
  ids the server assigns), Bundle.entry[i].fullUrl (references are compared by the
  entry they point at), Bundle.timestamp, meta.lastUpdated and any other date-time
  with a time part, MessageHeader.source.endpoint, response headers.
Compared: the status and everything else in the body, meta.versionId included.

Options:
  --target <url>          where to send the calls, e.g. http://localhost:8080 (required)
  --base-path <path>      the target's base path: message paths are sent under it
                          instead of the recorded one (e.g. --base-path /sandbox;
                          --base-path "" for a target without one)
  --junit <file>          also write the results as JUnit XML, one test case per call
  --header "Name: value"  add a request header, e.g. credentials (the journal holds
                          them redacted); repeat for several
  --timeout <duration>    per-call timeout: 30s, 500ms, or milliseconds (default 10s)
  -h, --help              this help

Exit codes: 0 every answer is the same, 1 any answer differs (or the target did not
answer), or the file has a line that is no recorded call (nothing is sent then) or
no inbound call, 2 bad usage.`;

export interface ReplayIo {
  out(line: string): void;
  err(line: string): void;
  /** Rewrites the one progress line (only on a terminal); "" clears it. Default: stdout when it is a TTY. */
  progress?: ((line: string) => void) | undefined;
}

class Usage extends Error {}

const DURATION = /^(\d+(?:\.\d+)?)(ms|s|m)?$/;
const MAX_SHOWN = 10;

function parse(argv: string[]) {
  const { values, positionals } = parseCommandLine({
    args: argv,
    options: {
      target: { type: "string" },
      "base-path": { type: "string" },
      junit: { type: "string" },
      header: { type: "string", multiple: true },
      timeout: { type: "string" },
      help: { type: "boolean", short: "h" },
    },
    allowPositionals: true,
    strict: true,
  });
  if (values.help) return { help: true as const };
  if (positionals.length !== 1) {
    throw new Usage(
      positionals.length === 0
        ? "replay needs the recorded calls: uae-fhir-sandbox replay calls.ndjson --target http://localhost:8080"
        : `replay takes one file of recorded calls, found: ${positionals.join(" ")}`,
    );
  }
  const file = positionals[0] as string;
  if (!existsSync(file) || !statSync(file).isFile()) throw new Usage(`${file}: no such file`);
  if (values.target === undefined) throw new Usage("--target is required, e.g. --target http://localhost:8080");
  let target: URL;
  try {
    target = new URL(values.target);
  } catch {
    throw new Usage(`--target ${JSON.stringify(values.target)}: expected an http:// or https:// URL`);
  }
  if (target.protocol !== "http:" && target.protocol !== "https:") {
    throw new Usage(`--target ${JSON.stringify(values.target)}: expected an http:// or https:// URL`);
  }
  const headers: Record<string, string> = {};
  for (const line of values.header ?? []) {
    const m = /^([!#$%&'*+.^`|~\w-]+):\s*(.*)$/.exec(line);
    if (!m) throw new Usage(`--header ${JSON.stringify(line)}: expected "Name: value"`);
    headers[(m[1] as string).toLowerCase()] = m[2] as string;
  }
  let timeoutMs = 10_000;
  if (values.timeout !== undefined) {
    const m = DURATION.exec(values.timeout.trim());
    const unit = ({ ms: 1, s: 1000, m: 60_000 } as const)[(m?.[2] ?? "ms") as "ms" | "s" | "m"];
    timeoutMs = m ? Math.round(Number(m[1]) * unit) : 0;
    if (timeoutMs < 1) throw new Usage(`--timeout ${JSON.stringify(values.timeout)}: expected a duration such as 10s`);
  }
  const basePath = values["base-path"];
  if (basePath !== undefined && basePath !== "" && !basePath.startsWith("/")) {
    throw new Usage(`--base-path ${JSON.stringify(basePath)}: expected a path starting with /, e.g. /sandbox`);
  }
  if (values.junit !== undefined && values.junit.trim() === "") throw new Usage("--junit: expected a file name");
  return {
    help: false as const,
    file,
    target: values.target,
    basePath,
    junit: values.junit,
    headers,
    timeoutMs,
  };
}

const label = (r: ReplayResult) => r.call.operation ?? `${r.call.request.method} ${r.call.request.path}`;
const status = (s: number | null) => (s === null ? "—" : String(s));

/** The report lines of one replayed call. */
function reportLines(r: ReplayResult): string[] {
  const head = `#${r.n}  ${label(r).padEnd(28)} ${status(r.then.status)} → ${status(r.now.status)}`;
  if (r.comparison.same) return [`${head}  same`];
  const { differences, total } = r.comparison;
  const lines = [`${head}  ${total} difference${total === 1 ? "" : "s"} (recorded call ${r.call.id})`];
  for (const d of differences.slice(0, MAX_SHOWN)) {
    lines.push(`      ${d.path}: ${shownValue(d.recorded)} → ${shownValue(d.replayed)}`);
  }
  if (total > MAX_SHOWN) lines.push(`      … and ${total - MAX_SHOWN} more`);
  return lines;
}

function junitCase(r: ReplayResult): JunitCase {
  const base = {
    classname: `replay.${r.call.operation ?? "unrecognised"}`,
    name: `#${r.n} ${label(r)} (recorded call ${r.call.id})`,
    timeSeconds: r.durationMs / 1000,
  };
  if (r.comparison.same) return base;
  const { differences, total } = r.comparison;
  const text = differences.map((d) => `${d.path}: ${shownValue(d.recorded, 500)} → ${shownValue(d.replayed, 500)}`);
  if (total > differences.length) text.push(`… and ${total - differences.length} more`);
  return {
    ...base,
    failure: {
      message: `${total} difference${total === 1 ? "" : "s"}; status ${status(r.then.status)} then, ${status(r.now.status)} now`,
      text: text.join("\n"),
    },
  };
}

/** Why `file` could not be read: a JournalLineError names the line already. */
const readFailure = (file: string, error: unknown) =>
  error instanceof JournalLineError ? error.message : `Could not read ${file}: ${(error as Error).message}`;

/** How many inbound calls `file` holds, or why it cannot be read whole. */
async function inboundCalls(file: string): Promise<number | string> {
  let inbound = 0;
  try {
    for await (const call of readJournal(file, newReadStats())) if (call.direction === "inbound") inbound++;
  } catch (error) {
    return readFailure(file, error);
  }
  return inbound;
}

const ttyProgress = (line: string) => {
  process.stdout.write(line === "" ? "\r\x1b[K" : `\r\x1b[K${line.slice(0, (process.stdout.columns ?? 80) - 1)}`);
};

/**
 * `uae-fhir-sandbox replay calls.ndjson --target URL [--junit report.xml]`:
 * re-sends recorded inbound calls and reports, per call, whether the answer
 * is the same. Exit 0 all the same, 1 any difference or a file that cannot be
 * read whole or holds no inbound call, 2 bad usage.
 *
 * @example
 *   uae-fhir-sandbox replay calls.ndjson --target http://localhost:8080 --junit replay.xml
 */
export async function replayCommand(argv: string[], io: ReplayIo): Promise<number> {
  let options: ReturnType<typeof parse>;
  try {
    options = parse(argv);
  } catch (error) {
    io.err(`${(error as Error).message}\nRun uae-fhir-sandbox replay --help for the options.`);
    return 2;
  }
  if (options.help) {
    io.out(REPLAY_USAGE);
    return 0;
  }
  const progress = "progress" in io ? io.progress : process.stdout.isTTY ? ttyProgress : undefined;
  const { file, target, junit } = options;
  // The whole file is read once before anything is sent: a line that is no call, or a file with nothing to
  // replay, fails the run before the target has seen any of it (and never passes as "0 calls replayed").
  const checked = await inboundCalls(file);
  if (typeof checked === "string") {
    io.err(checked);
    return 1;
  }
  if (checked === 0) {
    io.err(
      `${file} holds no inbound calls: nothing to replay. Record some with --journal-file, or save GET /__admin/calls/export.`,
    );
    return 1;
  }
  const stats = newReadStats();
  const cases: JunitCase[] = [];
  const started = new Date();
  let replayed = 0;
  let different = 0;
  io.out(`replaying ${file} against ${target}`);
  try {
    const results = replayCalls(readJournal(file, stats), options, (n, call) =>
      progress?.(
        `replaying call ${n} (${call.operation ?? call.request.path}) — ${n - 1} done, ${different} different`,
      ),
    );
    for await (const result of results) {
      progress?.("");
      replayed++;
      if (!result.comparison.same) different++;
      for (const line of reportLines(result)) io.out(line);
      if (junit !== undefined) cases.push(junitCase(result));
    }
  } catch (error) {
    // The file changed since it was checked (a journal still being written), or could not be read any more.
    progress?.("");
    io.err(readFailure(file, error));
    io.err(`${replayed} calls had been replayed: ${replayed - different} same, ${different} different.`);
    return 1;
  }
  if (stats.cutOff) io.err(`${file}:${stats.lines}: the last line is cut off (written during a crash?), skipped`);
  if (replayed === 0) {
    io.err(`${file} held no inbound calls any more when they were replayed (the file changed): nothing was replayed.`);
    return 1;
  }
  io.out(`${replayed} calls replayed: ${replayed - different} same, ${different} different`);
  if (junit !== undefined) {
    mkdirSync(dirname(junit), { recursive: true });
    writeFileSync(
      junit,
      junitXml({
        name: `replay of ${file} against ${target}`,
        timestamp: started,
        timeSeconds: (Date.now() - started.getTime()) / 1000,
        cases,
      }),
    );
    io.out(`JUnit report written to ${junit}`);
  }
  return different > 0 ? 1 : 0;
}
