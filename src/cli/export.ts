import { existsSync, mkdirSync, statSync, writeFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { formatProblem } from "../config/yaml-file.js";
import { ScenarioExporter } from "../record/export-scenario.js";
import { JournalLineError, newReadStats, readJournal } from "../record/read-journal.js";
import { defaultOperationNames, loadScenarioText } from "../scenarios/load.js";
import { counted } from "../text/plural.js";
import { parseCommandLine } from "./parse-command-line.js";

export const EXPORT_USAGE = `Usage: uae-fhir-sandbox export --from <calls.ndjson> [--to <scenario.yaml>] [options]

Turns recorded calls (a --journal-file, or the NDJSON of GET /__admin/calls/export)
into a scenario file: one rule per operation and key content (the patient, the focus
ids the client chose), answering with the recorded status and body. Ids, timestamps,
MessageHeader.response.identifier and the source and destination endpoints become
templates, so a replayed answer is correct for a new request and names the sandbox
that sends it. Calls with the same key content answer in
recorded order (a sequence). The running sandbox gives the same file for its in-memory
journal: GET /__admin/calls/export?format=scenario.

Options:
  --from <file>         the recorded calls, one JSON call per line (or the first argument)
  --to <file>           the scenario file to write (default: print it)
  --operation <id>      only calls of this operation; repeat for several
  -h, --help            this help

Exit codes: 0 written, 1 the journal has a line that is no recorded call, holds no
inbound call (of --operation) or none that can be exported (nothing is written then),
or the result would not load, 2 bad usage.`;

export interface ExportIo {
  out(line: string): void;
  err(line: string): void;
}

class Usage extends Error {}

function parse(argv: string[]) {
  const { values, positionals } = parseCommandLine({
    args: argv,
    options: {
      from: { type: "string" },
      to: { type: "string" },
      operation: { type: "string", multiple: true },
      help: { type: "boolean", short: "h" },
    },
    allowPositionals: true,
    strict: true,
  });
  if (values.help) return { help: true as const };
  if (positionals.length > 1 || (positionals.length === 1 && values.from !== undefined)) {
    throw new Usage(`Unexpected argument: ${positionals.join(" ")}`);
  }
  const from = values.from ?? positionals[0];
  if (from === undefined) throw new Usage("export needs the recorded calls: --from calls.ndjson");
  if (!existsSync(from) || !statSync(from).isFile()) throw new Usage(`--from ${from}: no such file`);
  if (values.to !== undefined && values.to.trim() === "") throw new Usage("--to: expected a file name");
  if (values.to !== undefined && resolve(values.to) === resolve(from)) {
    throw new Usage(`--to ${values.to} is the journal itself: write the scenario to another file`);
  }
  // A misspelt --operation would export nothing and say so only as "no inbound calls": refuse it by name.
  const operations = values.operation?.map((name) => {
    const resolved = defaultOperationNames().resolve(name);
    if (!resolved.ok) throw new Usage(`--operation: ${resolved.problem}`);
    return resolved.id;
  });
  return { help: false as const, from, to: values.to, operations };
}

/**
 * `uae-fhir-sandbox export --from calls.ndjson --to scenarios/recorded.yaml`:
 * recorded calls → a scenario file (see ScenarioExporter). The journal is
 * read one line at a time; a cut-off last line is skipped, any other line that
 * is no call fails the export, as does a journal with nothing to export.
 */
export async function exportCommand(argv: string[], io: ExportIo): Promise<number> {
  let options: ReturnType<typeof parse>;
  try {
    options = parse(argv);
  } catch (error) {
    io.err(`${(error as Error).message}\nRun uae-fhir-sandbox export --help for the options.`);
    return 2;
  }
  if (options.help) {
    io.out(EXPORT_USAGE);
    return 0;
  }
  const { from, to, operations } = options;
  const exporter = new ScenarioExporter();
  const stats = newReadStats();
  try {
    for await (const call of readJournal(from, stats)) {
      if (operations && call.direction === "inbound" && !operations.includes(call.operation ?? "")) continue;
      exporter.add(call);
    }
  } catch (error) {
    // A JournalLineError names the file and the line.
    io.err(error instanceof JournalLineError ? error.message : `Could not read ${from}: ${(error as Error).message}`);
    return 1;
  }
  if (stats.cutOff) io.err(`${from}:${stats.lines}: the last line is cut off (written during a crash?), skipped`);
  // A scenario without rules is never what was asked for: say why, write nothing, and fail.
  if (exporter.inbound === 0) {
    const which = operations ? ` of ${operations.join(", ")}` : "";
    io.err(
      `${from} holds no inbound calls${which} (${counted(stats.calls, "call")} in ${counted(stats.lines, "line")}): nothing to export, no scenario written.`,
    );
    return 1;
  }
  const rules = exporter.rules().length;
  if (rules === 0) {
    io.err(`None of the ${exporter.inbound} inbound calls of ${from} could be exported, no scenario written:`);
    for (const skip of exporter.skipped.slice(0, 5)) io.err(`  call ${skip.id}: ${skip.reason}`);
    if (exporter.skipped.length > 5) io.err(`  … and ${exporter.skipped.length - 5} more`);
    return 1;
  }

  const text = exporter.toYaml({ from, at: new Date() });
  const check = loadScenarioText(text, to ?? "(output)");
  if (to === undefined) io.out(text.replace(/\n$/, ""));
  else {
    mkdirSync(dirname(to), { recursive: true });
    writeFileSync(to, text);
  }
  const summary = `${counted(rules, "rule")} from ${exporter.exported} of ${counted(exporter.inbound, "inbound call")}${to ? ` written to ${to}` : ""}; ${exporter.skipped.length} not exported`;
  io.err(summary);
  if (!check.ok) {
    io.err("The sandbox would not load the result:");
    for (const problem of check.problems) io.err(`  ${formatProblem(problem)}`);
    io.err(
      "If the file is too large: export fewer calls (--operation), or serve it with a larger --max-scenario-file.",
    );
    return 1;
  }
  return 0;
}
