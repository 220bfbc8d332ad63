import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ROOT } from "../cli/cli-process.js";
import { loggedSandbox } from "../support/log-output.js";
import { STANDARD } from "../support/messages.js";

// The README's first screen shows the line the sandbox prints for its curl example: the same message, sent to a
// sandbox with the shipped scenarios and the pretty log of a terminal, gives the same line (time and duration aside).

const README = readFileSync(join(ROOT, "README.md"), "utf8");

/** Time of day and duration vary from run to run; the rest of the line does not. */
const normalise = (line: string) =>
  line.replace(/^\d\d:\d\d:\d\d\.\d{3}/, "HH:MM:SS.mmm").replace(/ +\d+(\.\d)? ms /, " N ms ");

describe("README: the log line of the first example", () => {
  it("is the line the sandbox prints for it", async () => {
    const shown = /prints a line for the call[\s\S]*?```text\n([^\n]*)\n```/.exec(README)?.[1];
    expect(shown, "README's first screen has no log line").toBeDefined();
    const bundle = /cat > add-allergy\.json <<'EOF'\n([\s\S]*?)\nEOF\n/.exec(README)?.[1] as string;
    const { sandbox, log, out } = loggedSandbox(
      { format: "pretty", colours: false },
      { scenarios: join(ROOT, "scenarios"), watch: false },
    );
    try {
      const res = await sandbox.app.request(STANDARD, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ content: bundle }),
      });
      expect(res.status).toBe(200);
      log.flush();
      expect(out.lines().map(normalise)).toEqual([normalise(shown as string)]);
    } finally {
      sandbox.close();
    }
  });
});
