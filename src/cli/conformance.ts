import type { SandboxApp } from "../app.js";
import type { SessionReport, StepResult, TestResult } from "../conformance/session-report.js";
import type { ConformanceSession, ConformanceSessions, SessionRequest } from "../conformance/sessions-api.js";
import { oneLine } from "../log/pretty.js";
import { createRequestLog, type LogStreams } from "../log/request-log.js";
import { type RunningServer, startServer } from "../server/start-server.js";
import { counted } from "../text/plural.js";
import { nearest } from "../text/suggest.js";
import { loadServerTls, type ServerTls, TlsProblem } from "../tls/server-tls.js";
import { flagsHelp, parseArgsOptions, resolveServeConfig, type ServeConfig, UsageError } from "./flags.js";
import { CommandLineError, parseCommandLine } from "./parse-command-line.js";
import { takeServeBooleans } from "./serve-args.js";
import { startFailure } from "./start-failure.js";

export const CONFORMANCE_USAGE = `Usage: uae-fhir-sandbox conformance run --role sender|receiver [options] [serve options]
       uae-fhir-sandbox conformance plans [--conformance DIR]
       uae-fhir-sandbox conformance testscript [--plan ID] [--conformance DIR]
       uae-fhir-sandbox conformance examples [--out DIR]

run: starts a sandbox (as serve does, with the serve options given), starts a conformance session in its default
workspace, and tests the system under test against a plan: a sender (clinic, health program) sends its normal
traffic to the sandbox, which answers as the plan says and watches what it does next; a pharmacy is pushed orders
at its endpoint and its answers and messages are checked. One line per step as it ends, then a summary with what
the session covered. Ctrl-C (SIGINT) or SIGTERM stops the session early: the files are still written.

  --role sender|receiver    which plan role the system under test plays (required)
  --operations a,b          sender: the operations the system declares it sends (each is expected at least once);
                            here --operations names operations: the operations file comes from OPERATIONS
  --pharmacy-url URL        receiver: the pharmacy's push endpoint, registered for the session (without it the
                            session waits for the pharmacy to subscribe)
  --pharmacy-licence L      receiver: the pharmacy's licence (default PH-CONFORMANCE-0001)
  --plan ID                 the plan to run (default: the shipped plan of the role); conformance plans lists them
  --time-scale F            multiply every wait of the plan and an order's deadline by F, from 0.01 to 10 (default 1)
  --out DIR                 write testreport.json (an R4 TestReport), junit.xml and report.json there
  -h, --help                this help

plans: lists the plans (shipped, and a --conformance folder's). testscript: prints a plan (default sender) as an
R4 TestScript. examples: copies the reference systems (a sender, a pharmacy: small Node programs that pass the
shipped plans) into --out (default ./conformance-examples), to run against a session or to start from.

Exit codes: 0 every required step passed; 1 a required step failed, or the session was stopped; 2 a usage error,
or the sandbox could not start.

Serve options (each also an environment variable):
${flagsHelp(["operations"])}`;

/** The options of conformance run besides the serve flags. */
const RUN_OPTIONS = {
  role: { type: "string" },
  operations: { type: "string" },
  "pharmacy-url": { type: "string" },
  "pharmacy-licence": { type: "string" },
  plan: { type: "string" },
  "time-scale": { type: "string" },
  out: { type: "string" },
  help: { type: "boolean", short: "h" },
} as const;

const SUBCOMMANDS = ["run", "plans", "testscript", "examples"];

export interface ConformanceIo {
  out(line: string): void;
  err(line: string): void;
  env: NodeJS.ProcessEnv;
  tty?: boolean;
  logStreams?(): LogStreams;
}

/** The parts of the command line a session is started with, checked; what is left is the sandbox's. */
export interface RunArgs {
  request: SessionRequest;
  out: string | undefined;
  config: ServeConfig;
  /** The log level was chosen (--log-level or LOG_LEVEL): the sandbox's lines show; else only its warnings. */
  logLevelGiven: boolean;
}

class Usage extends Error {}

const TIME_SCALE = { min: 0.01, max: 10 };

/** Reads `conformance <sub> …`'s options: the session's, and the serve flags (as serve reads them). */
export function parseConformanceArgs(
  argv: readonly string[],
  env: NodeJS.ProcessEnv,
): { help: true } | ({ help: false; sub: string } & RunArgs) {
  const { args, given, negations } = takeServeBooleans(argv);
  // --operations is the declared operations here; the serve flag of the same name (the operations file) is not.
  const { operations: _file, ...serveOptions } = parseArgsOptions();
  let parsed: { values: Record<string, string | boolean | undefined>; positionals: string[] };
  try {
    parsed = parseCommandLine(
      { args, options: { ...serveOptions, ...RUN_OPTIONS }, allowPositionals: true, strict: true },
      negations,
    ) as typeof parsed;
  } catch (error) {
    if (error instanceof CommandLineError) throw new Usage(error.message);
    throw error;
  }
  const values = { ...parsed.values };
  if (values.help) return { help: true };
  const [sub, ...extra] = parsed.positionals;
  if (sub === undefined) throw new Usage(`conformance needs a command: ${SUBCOMMANDS.join(", ")}`);
  if (!SUBCOMMANDS.includes(sub)) {
    const meant = nearest(sub, SUBCOMMANDS);
    throw new Usage(
      `unknown conformance command ${sub}${meant ? `; did you mean ${meant}?` : ""} (the commands are ${SUBCOMMANDS.join(", ")})`,
    );
  }
  if (extra.length > 0) throw new Usage(`conformance ${sub} takes no arguments, only options: ${extra.join(" ")}`);
  const role = values.role as string | undefined;
  const text = (name: keyof typeof RUN_OPTIONS) => {
    const v = values[name];
    if (typeof v !== "string") return undefined;
    if (v.trim() === "") throw new Usage(`--${name}: expected a value, got nothing`);
    return v.trim();
  };
  if (sub === "run") {
    if (role === undefined) throw new Usage("--role is required: --role sender or --role receiver");
    if (role !== "sender" && role !== "receiver")
      throw new Usage(`--role ${JSON.stringify(role)}: expected sender or receiver`);
    if (role === "sender" && values["pharmacy-url"] !== undefined)
      throw new Usage("--pharmacy-url is for --role receiver: a sender is not pushed to");
    if (role === "sender" && values["pharmacy-licence"] !== undefined)
      throw new Usage("--pharmacy-licence is for --role receiver");
    if (role === "receiver" && values.operations !== undefined)
      throw new Usage("--operations is for --role sender: a pharmacy's operations are the plan's");
  } else {
    const theirs = sub === "examples" ? ["out"] : sub === "testscript" ? ["plan"] : [];
    for (const name of ["role", "operations", "pharmacy-url", "pharmacy-licence", "plan", "time-scale", "out"] as const)
      if (values[name] !== undefined && !theirs.includes(name))
        throw new Usage(`--${name} is an option of conformance run, not of ${sub}`);
  }
  const request: SessionRequest = { role: (role ?? "sender") as "sender" | "receiver" };
  const plan = text("plan");
  if (plan !== undefined) request.plan = plan;
  const operations = text("operations");
  if (operations !== undefined) {
    const list = operations
      .split(",")
      .map((o) => o.trim())
      .filter((o) => o !== "");
    if (list.length === 0)
      throw new Usage(
        `--operations ${JSON.stringify(operations)}: expected operation ids, e.g. --operations add-allergy,remove-allergy`,
      );
    request.operations = list;
  }
  const pharmacyUrl = text("pharmacy-url");
  if (pharmacyUrl !== undefined) {
    let url: URL | undefined;
    try {
      url = new URL(pharmacyUrl);
    } catch {}
    if (!url || (url.protocol !== "http:" && url.protocol !== "https:"))
      throw new Usage(`--pharmacy-url ${JSON.stringify(pharmacyUrl)}: expected an http:// or https:// URL`);
    request.pharmacyUrl = pharmacyUrl;
  }
  const licence = text("pharmacy-licence");
  if (licence !== undefined) request.pharmacyLicence = licence;
  const scale = text("time-scale");
  if (scale !== undefined) {
    const n = Number(scale);
    if (!/^\d+(\.\d+)?$/.test(scale) || !(n >= TIME_SCALE.min && n <= TIME_SCALE.max))
      throw new Usage(
        `--time-scale ${JSON.stringify(scale)}: expected a number from ${TIME_SCALE.min} to ${TIME_SCALE.max} (0.1: every wait a tenth as long)`,
      );
    request.timeScale = n;
  }
  const out = text("out");
  for (const name of Object.keys(RUN_OPTIONS)) delete values[name];
  for (const [name, value] of given) values[name] = value;
  let config: ServeConfig;
  try {
    config = resolveServeConfig(values, env);
  } catch (error) {
    if (error instanceof UsageError) throw new Usage(error.message);
    throw error;
  }
  return {
    help: false,
    sub,
    request,
    out,
    config,
    logLevelGiven: values["log-level"] !== undefined || env.LOG_LEVEL !== undefined,
  };
}

/** A step's mark: the word's first letter is not enough on a terminal without colour, so each has its own sign. */
export const MARKS: Record<string, string> = { pass: "✓", fail: "✗", warning: "!", skip: "-" };

const ENDED = new Set(["pass", "fail", "warning", "skip"]);

/** The line printed as a step ends: its mark, test / step, and what was seen (a failure: what was expected and what happened). */
export function stepLine(test: TestResult, step: StepResult): string[] {
  // A message quotes what the system under test sent (ids, response codes): kept on its line, as the log keeps it, so
  // that a line break or an escape sequence of theirs cannot forge a line of the run or reach the CI log as is.
  const lines = [oneLine(`${MARKS[step.status] ?? "?"} ${test.id} / ${step.id}: ${step.message ?? step.title}`)];
  if ((step.status === "fail" || step.status === "warning") && step.fix) lines.push(oneLine(`    fix: ${step.fix}`));
  return lines;
}

/** Prints each step once, as it ends (a report update may end several: a stop skips the rest of a test). */
export function progressPrinter(print: (line: string) => void): (report: SessionReport) => void {
  const printed = new Set<string>();
  return (report) => {
    for (const test of report.tests)
      for (const step of test.steps) {
        const key = `${test.id}\u0000${step.id}`;
        if (!ENDED.has(step.status) || printed.has(key)) continue;
        printed.add(key);
        for (const line of stepLine(test, step)) print(line);
      }
  };
}

/** Where the system under test is to send or listen, said before the first step runs. */
export function startLines(report: SessionReport): string[] {
  const lines = [
    `Conformance session ${report.id}: plan ${report.plan.id} ${report.plan.version} (${report.plan.title}), role ${report.role}${report.timeScale !== 1 ? `, waits × ${report.timeScale}` : ""}`,
  ];
  const { messageUrl } = report.participants.sandbox;
  const { system } = report.participants;
  if (report.role === "sender") {
    lines.push(`Send the system's messages to ${messageUrl}`);
    if (system.operations.length > 0) lines.push(`Declared operations: ${system.operations.join(", ")}`);
  } else {
    lines.push(
      system.pharmacyUrl
        ? `Pushing orders to ${system.pharmacyUrl} (pharmacy ${system.pharmacyLicence ?? "PH-CONFORMANCE-0001"})`
        : `Waiting for the pharmacy to subscribe at ${messageUrl}`,
    );
    lines.push(`The pharmacy sends its messages to ${messageUrl}`);
  }
  return lines;
}

const listed = (names: readonly string[], max = 6) =>
  names.length <= max ? names.join(", ") : `${names.slice(0, max).join(", ")}, … (${names.length - max} more)`;

/** The summary at the end: the verdict, the counts, and what the session covered and did not. */
export function summaryLines(report: SessionReport): string[] {
  const { summary: s, coverage } = report;
  const verdict =
    report.state === "passed"
      ? "PASSED: every required step passed"
      : report.state === "stopped"
        ? `STOPPED: ${report.stopReason ?? "stopped before its end"}`
        : report.state === "failed"
          ? "FAILED: a required step failed"
          : "still running";
  const ops = coverage.operations;
  const rules = coverage.rules;
  const opsTotal = ops.exercised.length + ops.notExercised.length;
  const rulesTotal = rules.checked.length + rules.notChecked.length;
  return [
    `${verdict}`,
    `${counted(s.tests, "test")}: ${s.passed} passed, ${s.failed} failed, ${counted(s.warnings, "warning")}, ${s.skipped} skipped`,
    `Operations exercised: ${ops.exercised.length} of ${opsTotal}${ops.exercised.length > 0 ? ` (${listed(ops.exercised)})` : ""}`,
    `Rules checked: ${rules.checked.length} of ${rulesTotal}${rules.notChecked.length > 0 ? `; not checked: ${listed(rules.notChecked)}` : ""}`,
  ];
}

/** 0 only when every required step passed. */
export const exitCodeOf = (report: SessionReport): number => (report.state === "passed" ? 0 : 1);

/** Runs `uae-fhir-sandbox conformance …`; resolves with the exit code. */
export async function conformanceCommand(argv: readonly string[], io: ConformanceIo): Promise<number> {
  let parsed: ReturnType<typeof parseConformanceArgs>;
  try {
    parsed = parseConformanceArgs(argv, io.env);
  } catch (error) {
    if (!(error instanceof Usage)) throw error;
    io.err(`${error.message}\nRun uae-fhir-sandbox conformance --help for the options.`);
    return 2;
  }
  if (parsed.help) {
    io.out(CONFORMANCE_USAGE);
    return 0;
  }
  if (parsed.sub === "run") return run(parsed, io);
  if (parsed.sub === "examples") return examples(parsed.out ?? EXAMPLES_DIR, io);
  return planCommand(parsed, io);
}

/** Where `conformance examples` copies the reference systems by default. */
const EXAMPLES_DIR = "conformance-examples";

/** Copies the shipped reference systems into `dir`, to run or to start from; never over a file that is there. */
async function examples(dir: string, io: ConformanceIo): Promise<number> {
  const { copyFileSync, existsSync, mkdirSync, readdirSync } = await import("node:fs");
  const { join } = await import("node:path");
  const { fileURLToPath } = await import("node:url");
  // Beside the code that runs, as the shipped plans are: ../../conformance from dist/cli/ (a clone, the package under
  // node_modules), ../conformance from the bundle (the container image copies conformance/ to /app).
  const found = ["../../conformance/examples/", "../conformance/examples/"]
    .map((relative) => new URL(relative, import.meta.url))
    .find((folder) => existsSync(new URL("reference-sender.mjs", folder)));
  if (found === undefined) {
    io.err("conformance examples: the package's conformance/examples folder is missing (a broken install?)");
    return 1;
  }
  const from = fileURLToPath(found);
  const names = readdirSync(from)
    .filter((name) => name.endsWith(".mjs"))
    .sort();
  const there = names.filter((name) => existsSync(join(dir, name)));
  if (there.length > 0) {
    io.err(`conformance examples: ${there.map((name) => join(dir, name)).join(", ")} exists already: nothing copied`);
    return 1;
  }
  mkdirSync(dir, { recursive: true });
  for (const name of names) copyFileSync(join(from, name), join(dir, name));
  io.out(`Wrote ${names.map((name) => join(dir, name)).join(", ")}`);
  return 0;
}

/** `conformance plans` and `conformance testscript`: the plans as a sandbox with these options loads them. */
async function planCommand(args: RunArgs & { sub: string }, io: ConformanceIo): Promise<number> {
  const { createApp } = await import("../app.js");
  let sandbox: SandboxApp;
  try {
    sandbox = createApp(
      { ...args.config.sandbox, watch: false },
      {
        logger: { info: () => undefined, warn: (m) => io.err(m), error: (m) => io.err(m) },
      },
    );
  } catch (error) {
    io.err(`conformance ${args.sub}: ${(error as Error).message}`);
    return 2;
  }
  try {
    const plans = sandbox.conformance.plans();
    if (args.sub === "plans") {
      for (const { plan, source } of plans)
        io.out(
          `${plan.id}  ${plan.role.padEnd(8)}  ${plan.version}  ${plan.title} (${counted(plan.tests.length, "test")}; ${source})`,
        );
      return 0;
    }
    const id = args.request.plan;
    const chosen =
      id === undefined ? (plans.find((p) => p.plan.id === "sender") ?? plans[0]) : plans.find((p) => p.plan.id === id);
    if (!chosen) {
      io.err(
        `--plan: no plan ${JSON.stringify(id)}; the plans are ${plans.map((p) => p.plan.id).join(", ") || "none"}\nRun uae-fhir-sandbox conformance plans.`,
      );
      return 2;
    }
    const { testScript } = await import("../conformance/report/testscript.js");
    io.out(JSON.stringify(testScript(chosen.plan), null, 2));
    return 0;
  } finally {
    sandbox.close();
  }
}

interface Started {
  sandbox: SandboxApp;
  running: RunningServer;
  sessions: ConformanceSessions;
  flush(): void;
}

/** The sandbox as serve starts it, its own lines reduced to its warnings unless a log level was asked for. */
async function startSandbox(args: RunArgs, io: ConformanceIo): Promise<Started | string> {
  const { config } = args;
  const { createApp } = await import("../app.js");
  const format = config.log.format ?? (io.tty ? "pretty" : "json");
  const log = createRequestLog(
    {
      format,
      level: args.logLevelGiven ? config.log.level : "warn",
      colours: format === "pretty" && io.tty === true && !io.env.NO_COLOR,
      time: config.log.time,
    },
    io.logStreams?.() ?? {
      out: { write: (text: string) => io.out(text.replace(/\n$/, "")) },
      err: { write: (text: string) => io.err(text.replace(/\n$/, "")) },
    },
  );
  let tls: ServerTls | undefined;
  try {
    tls = config.tls && loadServerTls(config.tls);
  } catch (error) {
    if (error instanceof TlsProblem) return error.message;
    throw error;
  }
  let sandbox: SandboxApp;
  try {
    sandbox = createApp(config.sandbox, { logger: log.logger });
  } catch (error) {
    return (error as Error).message;
  }
  let running: RunningServer;
  try {
    running = await startServer(sandbox, {
      port: config.port,
      host: config.host,
      limits: config.limits,
      ...(tls ? { tls } : {}),
    });
  } catch (error) {
    sandbox.close();
    return startFailure(error, { port: config.port, host: config.host, flag: "--port" });
  }
  log.observe(sandbox.sandboxEvents, { calls: args.logLevelGiven && !config.log.quiet });
  return { sandbox, running, sessions: sandbox.conformance, flush: () => log.flush() };
}

/** The request's field a refusal names, as the option that gave it: `pharmacyUrl: …` → `--pharmacy-url: …`. */
const FIELD_FLAGS: Record<string, string> = {
  role: "--role",
  plan: "--plan",
  operations: "--operations",
  pharmacyUrl: "--pharmacy-url",
  pharmacyLicence: "--pharmacy-licence",
  timeScale: "--time-scale",
};
export const asFlag = (message: string): string =>
  message.replace(/^(\w+)(\[\d+\])?:/, (all, field: string) => (FIELD_FLAGS[field] ? `${FIELD_FLAGS[field]}:` : all));

async function run(args: RunArgs & { sub: string }, io: ConformanceIo): Promise<number> {
  const started = await startSandbox(args, io);
  if (typeof started === "string") {
    io.err(`uae-fhir-sandbox could not start: ${started}`);
    return 2;
  }
  const { sandbox, running, sessions } = started;
  const stop = async () => {
    await running.close();
    sandbox.close();
    started.flush();
  };
  const result = sessions.start(sandbox.workspace, args.request);
  if (!result.ok) {
    io.err(`conformance run: ${result.issues.map((i) => asFlag(i.diagnostics ?? i.code)).join("; ")}`);
    await stop();
    return 2;
  }
  const session: ConformanceSession = result.session;
  // A signal stops the session, which then ends as stopped: the files are still written and the exit is 1. Caught
  // before the first line is printed: whoever reads it may send one at once.
  const onSignal = (signal: NodeJS.Signals) => session.stop(`interrupted (${signal})`);
  process.once("SIGINT", onSignal);
  process.once("SIGTERM", onSignal);
  for (const line of startLines(session.report())) io.out(line);
  const progress = progressPrinter(io.out);
  const unsubscribe = session.onUpdate(progress);
  let report: SessionReport;
  try {
    report = await session.done;
  } finally {
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
    unsubscribe();
  }
  progress(report);
  for (const line of summaryLines(report)) io.out(line);
  let code = exitCodeOf(report);
  if (args.out !== undefined) {
    try {
      const written = await writeFiles(args.out, report);
      io.out(`Wrote ${written.join(", ")}`);
    } catch (error) {
      io.err(`conformance run: could not write the reports into ${args.out}: ${(error as Error).message}`);
      code = Math.max(code, 1);
    }
  }
  await stop();
  return code;
}

/** testreport.json, junit.xml and report.json into `dir` (made if missing): the paths written. */
async function writeFiles(dir: string, report: SessionReport): Promise<string[]> {
  const { writeReportFiles } = await import("../conformance/report/report-files.js");
  const paths = await writeReportFiles(dir, report);
  return [paths.testreport, paths.junit, paths.report];
}
