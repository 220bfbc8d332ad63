import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { http, killStray, startCli } from "../cli/cli-process.js";
import { type Answered, eventually, profileMessage, sendMessage, startLoad } from "./load.js";

// Stopping under load, with the real CLI: a normal stop (SIGTERM) loses no answered call from
// --journal-file; a crash (SIGKILL) loses only calls not yet answered, and the next start numbers
// its calls after every id a client was given.

const dirs: string[] = [];
afterEach(async () => {
  await killStray();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** The built-in answer after a scripted delay: 1 s (X-Fault-Test: slow), or longer than any test (hold). */
const SLOW_RULE = `rules:
  - name: slow-before-stop
    when: { headers: { X-Fault-Test: slow } }
    respond: { builtIn: true, delay: 1s }
  - name: hold
    when: { headers: { X-Fault-Test: hold } }
    respond: { builtIn: true, delay: 60s }
`;

function workspace() {
  const dir = mkdtempSync(join(tmpdir(), "faults-shutdown-"));
  dirs.push(dir);
  const scenarios = join(dir, "scenarios");
  writeFileSync(join(dir, "rules.yaml"), SLOW_RULE);
  return { file: join(dir, "calls.ndjson"), args: ["--scenarios", join(dir, "rules.yaml"), "--no-watch"], scenarios };
}

interface Line {
  id: string;
  highestIdIssued: string;
  messageId: string | null;
  response: { status: number } | null;
}

/**
 * The file's lines. A SIGKILL during a write can leave the last line cut off (no newline): the call it records was
 * not answered yet, and the next start moves the line aside. `cutOff: "allowed"` leaves such a line out; otherwise
 * every line must be whole.
 */
function linesOf(file: string, cutOff: "allowed" | "refused" = "refused"): Line[] {
  const text = readFileSync(file, "utf8");
  const whole = cutOff === "allowed" && !text.endsWith("\n") ? text.slice(0, text.lastIndexOf("\n") + 1) : text;
  return whole
    .split("\n")
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Line);
}

/** Every call the client got a 200 for has its line, with the same MessageHeader id and status. */
function expectAllInFile(answered: readonly Answered[], lines: readonly Line[]): void {
  const byId = new Map(lines.map((l) => [l.id, l]));
  const ok = answered.filter((a) => a.status === 200);
  const missing = ok.filter((a) => byId.get(a.callId)?.messageId !== a.messageId);
  expect(missing, `${missing.length} of ${ok.length} answered calls are not in the file`).toEqual([]);
  for (const a of ok) expect(byId.get(a.callId)?.response?.status).toBe(200);
}

/** Sends a message a delaying rule holds, and resolves once the sandbox has it in hand (the rule matched). */
async function slowCallInFlight(url: string, rule: "slow" | "hold" = "slow"): Promise<{ answer: Promise<Answered> }> {
  const name = rule === "slow" ? "slow-before-stop" : "hold";
  const answer = sendMessage(url, profileMessage(), { "x-fault-test": rule });
  // Settled here too, so that a test that stops the server before awaiting it leaves no unhandled rejection.
  answer.catch(() => undefined);
  await eventually(async () => {
    const view = await http(`${url}/__admin/scenarios`);
    return view.json.rules.find((r: { name: string; matched: number }) => r.name === name && r.matched > 0);
  }, "the slow call reaching the sandbox");
  return { answer };
}

describe("SIGTERM under load", { timeout: 30_000 }, () => {
  it("loses no answered call from --journal-file, the slow call sent just before the signal included", async () => {
    const { file, args } = workspace();
    const { url, child } = await startCli(["--journal-file", file, "--log-format", "pretty", ...args]);
    const load = startLoad(url, { workers: 4 });
    await load.reached(30);
    const slow = await slowCallInFlight(url);

    child.process.kill("SIGTERM");
    const slowAnswer = await slow.answer;
    const answeredAt = performance.now();
    await load.stop();
    expect(await child.waitForExit()).toEqual({ code: 0, signal: null });
    // Keep-alive connections do not hold the stop open once their calls are answered (the idle timeout is 5 s).
    expect(performance.now() - answeredAt).toBeLessThan(2_000);

    expect(slowAnswer).toMatchObject({ status: 200, rule: "slow-before-stop" });
    const lines = linesOf(file);
    expectAllInFile([...load.answered, slowAnswer], lines);
    expect(lines.find((l) => l.id === slowAnswer.callId)?.messageId).toBe(slowAnswer.messageId);
    // The slow call ended after the signal: the stop waited for it, then closed the file.
    expect(child.stdout).toMatch(/received SIGTERM, shutting down\n(.*\n)*.*INFO stopped\n?$/);
  });

  it("cuts a call still running after --shutdown-grace, and says so", async () => {
    const { file, args } = workspace();
    const { url, child } = await startCli(["--journal-file", file, "--shutdown-grace", "200ms", ...args]);
    const slow = await slowCallInFlight(url, "hold");
    child.process.kill("SIGTERM");
    await expect(slow.answer).rejects.toThrow();
    expect(await child.waitForExit()).toEqual({ code: 0, signal: null });
    expect(child.stderr).toContain("1 request(s) still in flight after 200 ms (--shutdown-grace) were cut off");
  });
});

describe("SIGKILL under load", { timeout: 30_000 }, () => {
  it("loses at most the calls not yet answered, and the next start hands out no id again", async () => {
    const { file, args } = workspace();
    const first = await startCli(["--journal-file", file, ...args]);
    const load = startLoad(first.url, { workers: 4 });
    await load.reached(15);
    // A call in flight at the kill: it holds an id, and later calls end before it.
    const slow = await slowCallInFlight(first.url, "hold");
    await load.reached(load.answered.length + 5);
    first.child.process.kill("SIGKILL");
    expect((await first.child.waitForExit()).signal).toBe("SIGKILL");
    await load.stop();
    await expect(slow.answer).rejects.toThrow();

    const before = linesOf(file, "allowed");
    expectAllInFile(load.answered, before);
    const lastIssued = Number(before.at(-1)?.highestIdIssued);
    expect(lastIssued).toBeGreaterThanOrEqual(Math.max(...load.answered.map((a) => Number(a.callId))));

    const second = await startCli(["--journal-file", file, ...args]);
    const again = startLoad(second.url, { workers: 4 });
    await again.reached(10);
    await again.stop();
    second.child.process.kill("SIGTERM");
    expect(await second.child.waitForExit()).toEqual({ code: 0, signal: null });

    const all = linesOf(file);
    const ids = all.map((l) => l.id);
    expect(new Set(ids).size, "an id appears twice in the file").toBe(ids.length);
    const seen = [...load.answered, ...again.answered].map((a) => a.callId);
    expect(new Set(seen).size, "a client was given the same id twice").toBe(seen.length);
    expect(Math.min(...again.answered.map((a) => Number(a.callId)))).toBe(lastIssued + 1);
    expectAllInFile(again.answered, all);
  });
});
