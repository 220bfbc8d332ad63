#!/usr/bin/env node
import { realpathSync } from "node:fs";
import { fileURLToPath } from "node:url";
import pino from "pino";
import { createApp } from "../app.js";
import { clientsJsonSchema } from "../auth/clients-file.js";
import { planJsonSchema } from "../conformance/json-schema.js";
import type { SandboxLogger } from "../log/logger.js";
import { createRequestLog, type LogStreams } from "../log/request-log.js";
import { buildCatalogue, type Catalogue, loadOperationsFile } from "../routing/catalogue.js";
import { operationNames } from "../routing/operation-names.js";
import { scenarioJsonSchema } from "../scenarios/schema.js";
import { type RunningServer, startServer } from "../server/start-server.js";
import { StateFileProblem } from "../state/state-file.js";
import { didYouMean } from "../text/suggest.js";
import { loadServerTls, type ServerTls, type TlsFiles, TlsProblem } from "../tls/server-tls.js";
import { VERSION } from "../version.js";
import { backupCommand } from "./backup.js";
import { bannerEvent } from "./banner-event.js";
import type { CliIo } from "./cli-io.js";
import { exampleCommand } from "./example.js";
import { exportCommand } from "./export.js";
import { flagsHelp, parseArgsOptions, resolveFlag, resolveServeConfig, type ServeConfig, UsageError } from "./flags.js";
import { boundHeapGrowth } from "./heap-growth.js";
import { CommandLineError, parseCommandLine } from "./parse-command-line.js";
import { replayCommand } from "./replay.js";
import { takeServeBooleans } from "./serve-args.js";
import { startFailure } from "./start-failure.js";
import { trigger } from "./trigger.js";
import { validate, validatePlans } from "./validate.js";

const USAGE = `uae-fhir-sandbox ${VERSION} — a local FHIR R4 messaging sandbox of a UAE health-information exchange

Usage:
  uae-fhir-sandbox [serve] [options]        serve the sandbox (default command)
  uae-fhir-sandbox validate [DIR|FILE...]   check scenario files without serving (default ./scenarios,
                                            under --max-scenario-file);
                                            exit 1 with file:line:column: message for each problem
                                            (with an operations file: validate --operations FILE DIR;
                                            conformance plans: validate --conformance DIR)
  uae-fhir-sandbox schema [clients|conformance]
                                            print the JSON Schema of scenario files (or of clients files,
                                            or of conformance plans)
  uae-fhir-sandbox trigger order [options]  create an order on a running sandbox (POST /__admin/orders),
                                            which pushes it to pharmacies; trigger order --help for its options
  uae-fhir-sandbox export --from calls.ndjson [--to scenarios/recorded.yaml]
                                            recorded calls (--journal-file) → a scenario file; export --help
  uae-fhir-sandbox example <operation> [--patient ID] [--bundle] [--order N --pharmacy LICENCE --url URL]
                                            print a valid request message for an operation; example --help
  uae-fhir-sandbox replay calls.ndjson --target URL [--junit report.xml]
                                            re-send recorded calls, compare the answers; exit 1 on any
                                            difference; replay --help for what is compared
  uae-fhir-sandbox backup --state-file PATH --to FILE
                                            a consistent copy of a state file, while a sandbox may use it
  uae-fhir-sandbox certs [--out DIR] [--host NAME ...] [--client NAME ...]
                                            make a local CA, a server certificate and client certificates
                                            for HTTPS and mutual TLS (--tls-cert, --tls-client-ca); certs --help
  uae-fhir-sandbox conformance run --role sender|receiver [--operations a,b] [--pharmacy-url URL]
                   [--plan ID] [--time-scale F] [--out DIR] [serve options]
                                            test a sender's or a pharmacy's behaviour against a plan: exit 0
                                            only when every required step passed; writes a FHIR TestReport,
                                            JUnit XML and JSON into --out; conformance --help
  uae-fhir-sandbox conformance plans | testscript [--plan ID] | examples
                                            list the conformance plans; print one as a FHIR TestScript;
                                            copy the reference sender and pharmacy
  uae-fhir-sandbox -h, --help               this help
  uae-fhir-sandbox -v, --version            the version

Options (each also an environment variable; flags win):
${flagsHelp()}

Messages: POST /uae-fhir/r4/$process-message (remove-allergy: POST /fhir/$process-message)
Admin API: /__admin (health, operations, calls, calls/verify, calls/wait, events, scenarios, pharmacies, orders, patients, reset)
Dashboard: /__admin/ui/ (in a browser; GET / links it)
OAuth2 (--auth oauth2): POST /oauth2/token, GET /.well-known/smart-configuration, GET /oauth2/jwks (docs/auth.md)
Docs: README.md`;

const VALIDATE_USAGE = `Usage: uae-fhir-sandbox validate [DIR|FILE...] [--conformance DIR|FILE] [--operations FILE]
                                 [--max-scenario-file SIZE]

Checks scenario files as the server loads them, without serving: every problem of every file at once (schema,
operation ids, templates, values), each as file:line:column: message, with a suggestion where one is close.
The files of a folder are checked together, so a name given twice across them is found.

  DIR|FILE...                  folders (every *.yaml / *.yml under them) or files; default ./scenarios
                               (none when --conformance is given on the command line alone)
  --conformance DIR|FILE       conformance plans (every *.yaml / *.yml in the folder), checked with the shipped
                               ones: ok file: N tests, M steps, or each problem (env CONFORMANCE)
  --operations FILE            the operations file the server runs with: rules may name its codes and aliases
                               (env OPERATIONS)
  --max-scenario-file SIZE     largest file, as the server refuses it (default 16mb; env MAX_SCENARIO_FILE)
  -h, --help                   this help

Exit 0 when every file is valid, 1 when any has a problem, 2 on a usage error.`;

const SCHEMA_USAGE = `Usage: uae-fhir-sandbox schema [scenarios|clients|conformance]

Prints a JSON Schema (draft 2020-12) on stdout, for an editor (yaml-language-server) or a CI check:
  scenarios    scenario files (the default); the package ships it as uae-fhir-sandbox/scenario.schema.json
  clients      the OAuth2 clients file of --auth oauth2 (--clients)
  conformance  conformance plans (--conformance); the package ships it as conformance/conformance.schema.json

  -h, --help  this help`;

/** Commands, for "did you mean" on a mistyped one. */
const COMMANDS = [
  "serve",
  "validate",
  "schema",
  "trigger",
  "export",
  "example",
  "replay",
  "backup",
  "certs",
  "conformance",
];

/**
 * Runs the CLI. Resolves with an exit code for commands that end; `serve`
 * resolves once the server stopped on SIGTERM/SIGINT.
 */
export async function runCli(argv: string[], io: CliIo): Promise<number> {
  // trigger has its own options (it is a client of a running sandbox, not a server).
  if (argv[0] === "trigger") return trigger(argv.slice(1), io);
  // export and replay read recorded calls; they have their own options too.
  if (argv[0] === "export") return exportCommand(argv.slice(1), io);
  if (argv[0] === "replay") return replayCommand(argv.slice(1), io);
  // certs makes local test certificates; loaded only when asked for (its X.509 library is not the server's).
  if (argv[0] === "certs") return (await import("./certs.js")).certsCommand(argv.slice(1), io);
  // backup copies a state file; it may run beside a sandbox using it.
  if (argv[0] === "backup") return backupCommand(argv.slice(1), io);
  // example builds a message; it reads a running sandbox only for an order's ids.
  if (argv[0] === "example") return exampleCommand(argv.slice(1), io);
  // conformance run starts a sandbox of its own (with the serve flags) and a session in it.
  if (argv[0] === "conformance") return (await import("./conformance.js")).conformanceCommand(argv.slice(1), io);
  const { args, given, negations } = takeServeBooleans(argv);
  let parsed: ReturnType<typeof parseCommandLine>;
  try {
    parsed = parseCommandLine(
      {
        args,
        options: {
          ...parseArgsOptions(),
          help: { type: "boolean", short: "h" },
          version: { type: "boolean", short: "v" },
        },
        allowPositionals: true,
        strict: true,
      },
      negations,
    );
  } catch (error) {
    if (!(error instanceof CommandLineError)) throw error;
    io.err(`${error.message}\nRun uae-fhir-sandbox --help for the options.`);
    return 2;
  }
  const { positionals } = parsed;
  const values = { ...parsed.values } as Record<string, string | boolean | undefined>;
  for (const [name, value] of given) values[name] = value;
  const [command = "serve", ...rest] = positionals;
  if (values.help) {
    // Each command's own usage; serve's is the whole help (its options are the flags listed there).
    io.out(command === "validate" ? VALIDATE_USAGE : command === "schema" ? SCHEMA_USAGE : USAGE);
    return 0;
  }
  if (values.version) {
    io.out(VERSION);
    return 0;
  }
  if (command === "validate") {
    let maxBytes: number;
    let operationsFile: string | undefined;
    let conformance: string | undefined;
    try {
      // Files are checked as the server would load them: under the same --max-scenario-file, and rules may name
      // the operations of the same operations file (renamed codes, aliases).
      maxBytes = resolveFlag("max-scenario-file", values, io.env) as number;
      operationsFile = (resolveFlag("operations", values, io.env) as string | undefined) || undefined;
      conformance = (resolveFlag("conformance", values, io.env) as string | undefined) || undefined;
    } catch (error) {
      if (!(error instanceof UsageError)) throw error;
      io.err(`${error.message}\nRun uae-fhir-sandbox --help for the options.`);
      return 2;
    }
    let catalogue: Catalogue;
    try {
      catalogue = buildCatalogue(operationsFile ? loadOperationsFile(operationsFile) : undefined);
    } catch (error) {
      io.err((error as Error).message);
      return 1;
    }
    // --conformance alone on the command line checks the plans alone; with paths (or CONFORMANCE set), both.
    const plansOnly = values.conformance !== undefined && rest.length === 0;
    const scenarios = plansOnly
      ? 0
      : validate(rest.length > 0 ? rest : ["./scenarios"], io, { names: operationNames(catalogue), maxBytes });
    const plans = conformance !== undefined ? validatePlans(conformance, io, catalogue) : 0;
    return Math.max(scenarios, plans);
  }
  const schemas: Record<string, () => Record<string, unknown>> = {
    scenarios: scenarioJsonSchema,
    clients: clientsJsonSchema,
    conformance: planJsonSchema,
  };
  if (command === "schema" && rest.length <= 1) {
    const name = rest[0] ?? "scenarios";
    const schema = Object.hasOwn(schemas, name) ? schemas[name] : undefined;
    if (schema) {
      io.out(JSON.stringify(schema(), null, 2));
      return 0;
    }
  }
  if (command === "schema") {
    io.err(
      `schema takes one of scenarios, clients, conformance; not ${rest.join(" ")}\nRun uae-fhir-sandbox schema --help.`,
    );
    return 2;
  }
  if (command !== "serve") {
    io.err(
      `Unknown command: ${command}${didYouMean(command, COMMANDS)}\nRun uae-fhir-sandbox --help for the commands.`,
    );
    return 2;
  }
  if (rest.length > 0) {
    io.err(`serve takes no arguments, only options: ${rest.join(" ")}\nRun uae-fhir-sandbox --help for the options.`);
    return 2;
  }
  let config: ServeConfig;
  try {
    config = resolveServeConfig(values, io.env);
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    io.err(`${error.message}\nRun uae-fhir-sandbox --help for the options.`);
    return 2;
  }
  return serve(config, io);
}

/** The request log's streams when the caller gives none: its out and err, a line at a time. */
const linesOf = (io: CliIo): LogStreams => ({
  out: { write: (text: string) => io.out(text.replace(/\n$/, "")) },
  err: { write: (text: string) => io.err(text.replace(/\n$/, "")) },
});

async function serve(config: ServeConfig, io: CliIo): Promise<number> {
  const format = config.log.format ?? (io.tty ? "pretty" : "json");
  // https://no-color.org: any non-empty NO_COLOR turns colours off.
  const colours = format === "pretty" && io.tty === true && !io.env.NO_COLOR;
  const log = createRequestLog(
    { format, level: config.log.level, colours, time: config.log.time },
    io.logStreams?.() ?? linesOf(io),
  );
  // Nothing is printed until the server listens: a failure to start is the first and only thing said.
  log.hold();
  let sandbox: ReturnType<typeof createApp>;
  let running: Awaited<ReturnType<typeof startServer>>;
  let tls: ServerTls | undefined;
  try {
    // Read and checked before anything starts: a wrong file is an error naming it, not a handshake every client fails.
    tls = config.tls && loadServerTls(config.tls);
  } catch (error) {
    if (!(error instanceof TlsProblem)) throw error;
    io.err(`uae-fhir-sandbox could not start: ${error.message}`);
    log.release();
    return 2;
  }
  try {
    sandbox = createApp(config.sandbox, { logger: log.logger });
  } catch (error) {
    io.err(`uae-fhir-sandbox could not start: ${(error as Error).message}`);
    log.release();
    // A state file it must not use is a problem of the command line, as a bad flag value is.
    return error instanceof StateFileProblem ? 2 : 1;
  }
  try {
    running = await startServer(sandbox, {
      port: config.port,
      host: config.host,
      limits: config.limits,
      ...(tls ? { tls } : {}),
    });
  } catch (error) {
    sandbox.close();
    io.err(`uae-fhir-sandbox could not start: ${startFailure(error, failedListen(error, config))}`);
    log.release();
    return 1;
  }
  // Every workspace's calls: each line names its workspace when it is not the default one.
  log.observe(sandbox.sandboxEvents, { calls: !config.log.quiet });
  const { logger } = sandbox;
  const stopped = new Promise<number>((resolve) => {
    // The order matters: stop accepting, let calls in flight finish and be journaled, then close the journal file.
    // A second signal is not caught: it ends the process at once.
    // SIGHUP reloads the clients file and the TLS files, as daemons reread their configuration; with neither it keeps
    // its default.
    const reload = () => {
      if (config.sandbox.auth === "oauth2") sandbox.reloadClients();
      if (config.tls) reloadTls(config.tls, running, logger);
    };
    if (config.sandbox.auth === "oauth2" || config.tls) process.on("SIGHUP", reload);
    const stop = async (signal: NodeJS.Signals) => {
      process.off("SIGTERM", stop);
      process.off("SIGINT", stop);
      process.off("SIGHUP", reload);
      logger.info(`received ${signal}, shutting down`, { event: "stopping", signal });
      const { cutOff } = await running.close();
      if (cutOff > 0) {
        logger.warn(
          `${cutOff} request(s) still in flight after ${config.limits.shutdownGraceMs} ms (--shutdown-grace) were cut off`,
          { event: "cut-off", requests: cutOff },
        );
      }
      sandbox.close();
      log.flush();
      logger.info("stopped", { event: "stopped" });
      resolve(0);
    };
    process.on("SIGTERM", stop);
    process.on("SIGINT", stop);
  });
  // Announced once a signal stops it gracefully: a supervisor (or a test) may send one as soon as it reads the line.
  log.banner(
    bannerEvent(
      sandbox,
      running,
      { format, level: config.log.level, quiet: config.log.quiet },
      tls && config.tls
        ? { validTo: tls.validTo, clientAuth: config.tls.clientAuth, clientCaFile: config.tls.clientCaFile }
        : undefined,
    ),
    `uae-fhir-sandbox ${VERSION} listening on ${running.urls.join(" and ")}${tls?.clientCa !== undefined && tls.clientAuth !== "none" ? ` (client certificates ${tls.clientAuth})` : ""}`,
  );
  log.release();
  return stopped;
}

/**
 * A certificate rotation: the TLS files read and checked again, as at start; new connections get them. A file that
 * does not pass is a warning, and the certificate in use keeps serving.
 */
function reloadTls(files: TlsFiles, running: RunningServer, logger: SandboxLogger): void {
  try {
    const next = loadServerTls(files);
    running.setTls?.(next);
    logger.info(`TLS: reloaded ${files.certFile}, valid until ${next.validTo.toISOString()}`, {
      event: "tls-reloaded",
      cert: files.certFile,
      validTo: next.validTo.toISOString(),
    });
  } catch (error) {
    logger.warn(`TLS: not reloaded, the certificate in use keeps serving: ${(error as Error).message}`, {
      event: "tls-reload-failed",
    });
  }
}

/** The port (and its flag) a listen error is about: --tls-port's when HTTPS has its own port and that one failed. */
function failedListen(error: unknown, config: ServeConfig): { port: number; host: string | undefined; flag: string } {
  const { scheme } = (error ?? {}) as { scheme?: string };
  const tlsPort = config.tls?.port;
  return scheme === "https" && tlsPort !== undefined
    ? { port: tlsPort, host: config.host, flag: "--tls-port" }
    : { port: config.port, host: config.host, flag: "--port" };
}

/**
 * Runs the CLI on this process's arguments, streams and environment, and exits with its code. The bundle's entry
 * (bundle/uae-fhir-sandbox.mjs, scripts/bundle-entry.mjs) calls it too: there this module is not the main one.
 */
export function runAsProcess(): void {
  boundHeapGrowth();
  void runCli(process.argv.slice(2), {
    out: (line) => console.log(line),
    err: (line) => console.error(line),
    env: process.env,
    tty: process.stdout.isTTY === true,
    // Written synchronously, as Node writes to pipes and files, so that no line is lost or reordered at exit; the
    // request log batches the lines of a turn of the event loop into one write, off the request path.
    logStreams: () => ({
      out: pino.destination({ dest: 1, sync: true }),
      err: pino.destination({ dest: 2, sync: true }),
    }),
  }).then((code) => process.exit(code));
}

const invokedDirectly = (() => {
  try {
    return process.argv[1] !== undefined && realpathSync(process.argv[1]) === fileURLToPath(import.meta.url);
  } catch {
    return false;
  }
})();

if (invokedDirectly) runAsProcess();
