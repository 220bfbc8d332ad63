import { parseArgs } from "node:util";
import { StateFile, StateFileProblem } from "../state/state-file.js";
import type { CliIo } from "./cli-io.js";

const HELP = `uae-fhir-sandbox backup --state-file PATH --to FILE

Writes a consistent copy of a state file (SQLite's VACUUM INTO) to FILE, a new file. It may run while a sandbox
serves from PATH: the copy is the state as of one moment, every answered message in it. A running sandbox gives the
same copy at GET /__admin/state/backup (the sandbox-wide admin only). To restore: stop the sandbox, put the copy in
the state file's place (and remove PATH-wal and PATH-shm if they are there), start it.

Options:
  --state-file PATH   the state file (env STATE_FILE)
  --to FILE           where the copy goes; it must not exist
  -h, --help          this help`;

/** `uae-fhir-sandbox backup`: a consistent copy of a state file, taken while a sandbox may be using it. */
export async function backupCommand(argv: string[], io: CliIo): Promise<number> {
  let values: { "state-file"?: string; to?: string; help?: boolean };
  try {
    ({ values } = parseArgs({
      args: argv,
      options: { "state-file": { type: "string" }, to: { type: "string" }, help: { type: "boolean", short: "h" } },
      strict: true,
    }));
  } catch (error) {
    io.err(`${(error as Error).message}\n\n${HELP}`);
    return 2;
  }
  if (values.help) {
    io.out(HELP);
    return 0;
  }
  const path = values["state-file"] || io.env.STATE_FILE;
  if (!path || !values.to) {
    io.err(`backup needs --state-file PATH (or STATE_FILE) and --to FILE.\n\n${HELP}`);
    return 2;
  }
  try {
    const file = StateFile.open(path, { maxBytes: Number.MAX_SAFE_INTEGER, mustExist: true });
    try {
      file.backup(values.to);
    } finally {
      file.release();
    }
  } catch (error) {
    io.err(`backup failed: ${(error as Error).message}`);
    return error instanceof StateFileProblem ? 2 : 1;
  }
  io.out(`${path} copied to ${values.to}`);
  return 0;
}
