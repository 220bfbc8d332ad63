import { existsSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import { http, killStray, startCli } from "../cli/cli-process.js";
import { startLoad } from "./load.js";

// A full disk under --journal-file: /dev/full answers every write with ENOSPC. The real CLI keeps
// answering, warns once, keeps every call in memory, and says at the stop how many the file lost.

afterEach(killStray);

const FULL = "/dev/full";

describe("a full disk under --journal-file", { timeout: 30_000 }, () => {
  it.skipIf(!existsSync(FULL))(
    "one clear warning, every call answered and kept in memory, the loss counted",
    async () => {
      const { url, child } = await startCli(["--journal-file", FULL, "--no-watch"]);
      const load = startLoad(url, { workers: 4 });
      await load.reached(30);
      await load.stop();

      expect(load.failures).toEqual([]);
      expect(load.answered.filter((a) => a.status !== 200)).toEqual([]);
      // The default log format off a terminal: one JSON object per line, warnings on stderr.
      const warnings = child.stderr
        .split("\n")
        .filter((l) => l.includes(FULL))
        .map((l) => JSON.parse(l) as { level: string; event: string; path: string; msg: string });
      expect(warnings).toHaveLength(1);
      expect(warnings[0]).toMatchObject({ level: "warn", event: "journal-file", path: FULL });
      expect(warnings[0]?.msg).toMatch(
        /^journal file \/dev\/full: could not write call \d+ \(ENOSPC: no space left on device/,
      );
      expect(warnings[0]?.msg).toContain("keeps every call in memory (GET /__admin/calls)");

      // Nothing else is lost: the in-memory journal has every answered call.
      const calls = (await http(`${url}/__admin/calls`)).json.calls as Array<{ id: string; messageId: string }>;
      const byId = new Map(calls.map((c) => [c.id, c.messageId]));
      for (const a of load.answered) expect(byId.get(a.callId)).toBe(a.messageId);
      const health = (await http(`${url}/__admin/health`)).json;
      expect(health.journalFile).toEqual({
        path: FULL,
        missingCalls: load.answered.length,
        error: expect.stringMatching(/^ENOSPC/),
      });

      child.process.kill("SIGTERM");
      expect(await child.waitForExit()).toEqual({ code: 0, signal: null });
      expect(child.stderr).toContain(
        `journal file ${FULL}: at shutdown, ${load.answered.length} ${load.answered.length === 1 ? "call could not be written and is" : "calls could not be written and are"} missing from the file`,
      );
      expect(child.stderr).not.toContain("unhandled error");
    },
  );
});
