import { describe, expect, it } from "vitest";
import { runToExit } from "../cli/cli-process.js";

// conformance's command line through the real CLI: a usage error exits 2 before anything starts, naming the flag
// that is wrong (and, for a typo, the flag meant), so a CI job's log says what to change.

/** Each usage error and what its message must name (the design of `conformance run`: exit 2 naming the flag). */
const USAGE_ERRORS: Array<[string, string[], RegExp]> = [
  ["no subcommand", [], /conformance needs a command: run, plans, testscript, examples/],
  ["an unknown subcommand", ["rnu"], /unknown conformance command rnu; did you mean run\?/],
  ["no role", ["run"], /--role is required: --role sender or --role receiver/],
  ["an unknown role", ["run", "--role", "pharmacy"], /--role "pharmacy": expected sender or receiver/],
  [
    "a time scale of 0",
    ["run", "--role", "sender", "--time-scale", "0"],
    /--time-scale "0": expected a number from 0.01 to 10/,
  ],
  ["a time scale above 10", ["run", "--role", "sender", "--time-scale", "11"], /--time-scale "11"/],
  ["a time scale that is no number", ["run", "--role", "sender", "--time-scale", "fast"], /--time-scale "fast"/],
  [
    "a pharmacy URL that is no http URL",
    ["run", "--role", "receiver", "--pharmacy-url", "ftp://127.0.0.1/x"],
    /--pharmacy-url "ftp:\/\/127.0.0.1\/x": expected an http:\/\/ or https:\/\/ URL/,
  ],
  [
    "a pharmacy URL for a sender",
    ["run", "--role", "sender", "--pharmacy-url", "http://127.0.0.1:9/x"],
    /--pharmacy-url is for --role receiver/,
  ],
  [
    "operations for a receiver",
    ["run", "--role", "receiver", "--operations", "add-allergy"],
    /--operations is for --role sender/,
  ],
  [
    "no operations in --operations",
    ["run", "--role", "sender", "--operations", ","],
    /--operations ",": expected operation ids/,
  ],
  [
    "a mistyped option",
    ["run", "--role", "sender", "--time-scael", "0.1"],
    /unknown option --time-scael; did you mean --time-scale\?/,
  ],
  ["a bad serve flag", ["run", "--role", "sender", "--port", "http"], /--port "http"/],
  ["a run option on plans", ["plans", "--role", "sender"], /--role is an option of conformance run, not of plans/],
  ["an argument", ["run", "--role", "sender", "extra"], /conformance run takes no arguments, only options: extra/],
];

describe("conformance usage errors", () => {
  it.each(USAGE_ERRORS)("%s: exit 2, naming it", async (_what, args, message) => {
    const { code, stderr, stdout } = await runToExit(["conformance", ...args]);
    expect(code, stderr).toBe(2);
    expect(stderr).toMatch(message);
    expect(stderr).toContain("Run uae-fhir-sandbox conformance --help");
    // Nothing started: no session line, no listening sandbox.
    expect(stdout).toBe("");
  });

  it("conformance --help says the options and the exit codes", async () => {
    const { code, stdout } = await runToExit(["conformance", "--help"]);
    expect(code).toBe(0);
    for (const option of [
      "--role",
      "--operations",
      "--pharmacy-url",
      "--pharmacy-licence",
      "--plan",
      "--time-scale",
      "--out",
    ])
      expect(stdout).toContain(option);
    expect(stdout).toMatch(/Exit codes: 0 every required step passed; 1 /);
    // The serve flags are taken too.
    expect(stdout).toContain("--scenarios");
  });

  it("the main help names the command", async () => {
    const { code, stdout } = await runToExit(["--help"]);
    expect(code).toBe(0);
    expect(stdout).toContain("uae-fhir-sandbox conformance run --role sender|receiver");
  });
});
