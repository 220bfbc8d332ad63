#!/usr/bin/env node
import { realpathSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { createApp } from "../app.js";
import { clientsJsonSchema } from "../auth/clients-file.js";
import { buildCatalogue, type Catalogue, loadOperationsFile } from "../routing/catalogue.js";
import { operationNames } from "../routing/operation-names.js";
import { scenarioJsonSchema } from "../scenarios/schema.js";
import { startServer } from "../server/start-server.js";
import { VERSION } from "../version.js";
import { exampleCommand } from "./example.js";
import { exportCommand } from "./export.js";
import { flagsHelp, parseArgsOptions, resolveFlag, resolveServeConfig, SERVE_FLAGS, UsageError } from "./flags.js";
import { replayCommand } from "./replay.js";
import { trigger } from "./trigger.js";
import { validate } from "./validate.js";

const USAGE = `uae-fhir-sandbox ${VERSION} — a local FHIR R4 messaging sandbox of a UAE health-information exchange

Usage:
  uae-fhir-sandbox [serve] [options]        serve the sandbox (default command)
  uae-fhir-sandbox validate [DIR|FILE...]   check scenario files without serving (default ./scenarios,
                                            under --max-scenario-file);
                                            exit 1 with file:line:column: message for each problem
                                            (with an operations file: validate --operations FILE DIR)
  uae-fhir-sandbox schema [clients]         print the JSON Schema of scenario files (or of clients files)
  uae-fhir-sandbox trigger order [options]  create an order on a running sandbox (POST /__admin/orders),
                                            which pushes it to pharmacies; trigger order --help for its options
  uae-fhir-sandbox export --from calls.ndjson [--to scenarios/recorded.yaml]
                                            recorded calls (--journal-file) → a scenario file; export --help
  uae-fhir-sandbox example <operation> [--patient ID] [--bundle] [--order N --pharmacy LICENCE --url URL]
                                            print a valid request message for an operation; example --help
  uae-fhir-sandbox replay calls.ndjson --target URL [--junit report.xml]
                                            re-send recorded calls, compare the answers; exit 1 on any
                                            difference; replay --help for what is compared
  uae-fhir-sandbox --help                   this help
  uae-fhir-sandbox --version                the version

Options (each also an environment variable; flags win):
${flagsHelp()}

Messages: POST /uae-fhir/r4/$process-message (remove-allergy: POST /fhir/$process-message)
Admin API: /__admin (health, operations, calls, calls/verify, calls/wait, events, scenarios, pharmacies, orders, patients, reset)
Dashboard: /__admin/ui/ (in a browser; GET / links it)
OAuth2 (--auth oauth2): POST /oauth2/token, GET /.well-known/smart-configuration, GET /oauth2/jwks (docs/auth.md)
Docs: README.md`;

export interface CliIo {
  out(line: string): void;
  err(line: string): void;
  env: NodeJS.ProcessEnv;
}

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
  // example builds a message; it reads a running sandbox only for an order's ids.
  if (argv[0] === "example") return exampleCommand(argv.slice(1), io);
  // --no-<flag> turns a boolean flag off (util.parseArgs on Node 20 has no allowNegative).
  const negated = new Set<string>();
  const args = argv.filter((arg) => {
    const name = /^--no-(.+)$/.exec(arg)?.[1];
    if (name && SERVE_FLAGS.some((f) => f.name === name && f.kind === "boolean")) {
      negated.add(name);
      return false;
    }
    return true;
  });
  let parsed: ReturnType<typeof parseArgs>;
  try {
    parsed = parseArgs({
      args,
      options: { ...parseArgsOptions(), help: { type: "boolean", short: "h" }, version: { type: "boolean" } },
      allowPositionals: true,
      strict: true,
    });
  } catch (error) {
    io.err(`${(error as Error).message}\nRun uae-fhir-sandbox --help for the options.`);
    return 2;
  }
  const { positionals } = parsed;
  const values = { ...parsed.values } as Record<string, string | boolean | undefined>;
  for (const name of negated) values[name] = false;
  if (values.help) {
    io.out(USAGE);
    return 0;
  }
  if (values.version) {
    io.out(VERSION);
    return 0;
  }
  const [command = "serve", ...rest] = positionals;
  if (command === "validate") {
    let maxBytes: number;
    let operationsFile: string | undefined;
    try {
      // Files are checked as the server would load them: under the same --max-scenario-file, and rules may name
      // the operations of the same operations file (renamed codes, aliases).
      maxBytes = resolveFlag("max-scenario-file", values, io.env) as number;
      operationsFile = (resolveFlag("operations", values, io.env) as string | undefined) || undefined;
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
    return validate(rest.length > 0 ? rest : ["./scenarios"], io, { names: operationNames(catalogue), maxBytes });
  }
  if (command === "schema" && rest.length <= 1 && ["scenarios", "clients", undefined].includes(rest[0])) {
    io.out(JSON.stringify(rest[0] === "clients" ? clientsJsonSchema() : scenarioJsonSchema(), null, 2));
    return 0;
  }
  if (command !== "serve" || rest.length > 0) {
    io.err(`Unknown command: ${positionals.join(" ")}\nRun uae-fhir-sandbox --help for the commands.`);
    return 2;
  }
  try {
    const config = resolveServeConfig(values, io.env);
    return await serve(config, io);
  } catch (error) {
    if (error instanceof UsageError) {
      io.err(`${error.message}\nRun uae-fhir-sandbox --help for the options.`);
      return 2;
    }
    io.err(`uae-fhir-sandbox could not start: ${(error as Error).message}`);
    return 1;
  }
}

async function serve(config: ReturnType<typeof resolveServeConfig>, io: CliIo): Promise<number> {
  const sandbox = createApp(config.sandbox, {
    logger: { info: io.out, error: (m, e) => io.err(e === undefined ? m : `${m}: ${String(e)}`) },
  });
  const running = await startServer(sandbox, { port: config.port, host: config.host, limits: config.limits }).catch(
    (error: unknown) => {
      sandbox.close();
      throw error;
    },
  );
  io.out(`uae-fhir-sandbox ${VERSION} listening on ${running.url}`);
  io.out(`  messages: POST ${running.url}${config.sandbox.basePath}/uae-fhir/r4/$process-message`);
  io.out(`  admin:    ${running.url}/__admin/health`);
  io.out(`  dashboard: ${running.url}/__admin/ui/`);
  return new Promise((resolve) => {
    // The order matters: stop accepting, let calls in flight finish and be journaled, then close the journal file.
    // A second signal is not caught: it ends the process at once.
    const stop = async (signal: NodeJS.Signals) => {
      process.off("SIGTERM", stop);
      process.off("SIGINT", stop);
      io.out(`received ${signal}, shutting down`);
      const { cutOff } = await running.close();
      if (cutOff > 0) {
        io.err(
          `${cutOff} request(s) still in flight after ${config.limits.shutdownGraceMs} ms (--shutdown-grace) were cut off`,
        );
      }
      sandbox.close();
      io.out("stopped");
      resolve(0);
    };
    process.on("SIGTERM", stop);
    process.on("SIGINT", stop);
  });
}

const invokedDirectly = (() => {
  try {
    return process.argv[1] !== undefined && realpathSync(process.argv[1]) === fileURLToPath(import.meta.url);
  } catch {
    return false;
  }
})();

if (invokedDirectly) {
  const code = await runCli(process.argv.slice(2), {
    out: (line) => console.log(line),
    err: (line) => console.error(line),
    env: process.env,
  });
  process.exit(code);
}
