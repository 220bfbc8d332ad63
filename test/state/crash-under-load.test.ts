import type { Bundle } from "fhir/r4.js";
import { afterEach, describe, expect, it } from "vitest";
import { type Child, killStray, startCli } from "../cli/cli-process.js";
import { responseHeader } from "../support/messages.js";
import {
  allCalls,
  allergiesIn,
  allergyMessage,
  type ListedCall,
  patientId,
  postTo,
  profileAllergies,
  tempDir,
} from "./state-support.js";

// The test: 2,000 add-allergy messages over 100 patients at 20 connections against the real CLI with
// --state-file, the process stopped half-way — SIGKILL (a crash) or SIGTERM (a deploy) — then started again on
// the same file. What the client saw is compared with what the restarted sandbox holds.

afterEach(killStray);

const MESSAGES = 2_000;
const PATIENTS = 100;
const CONNECTIONS = 20;
/** The signal goes when this many answers have come back: half-way, by an event (the N-th answer), not a clock. */
const STOP_AFTER = 1_000;

interface Sent {
  id: string;
  patient: string;
  bundle: Bundle;
}

interface Answered {
  status: number;
  text: string;
  callId: string | null;
  /** The allergy's server id, from the answer's focus. */
  allergyId: string | undefined;
}

interface LoadResult {
  /** Every message a request was started for. */
  sent: Sent[];
  /** The messages whose answer came back, by message id. */
  answered: Map<string, Answered>;
  /** Messages never sent (the load stopped before their turn). */
  unsent: Sent[];
}

/**
 * Sends `messages` over `connections` concurrent requests; once `stopAfter` answers are in, calls `stop` (the
 * signal) and starts no more requests. Requests under way finish, with an answer or an error; each answer is
 * recorded, whenever it arrives.
 */
async function load(
  url: string,
  messages: Sent[],
  { connections, stopAfter, stop }: { connections: number; stopAfter: number; stop(): void },
): Promise<LoadResult> {
  const answered = new Map<string, Answered>();
  const sent: Sent[] = [];
  let next = 0;
  let stopped = false;
  const worker = async () => {
    while (!stopped && next < messages.length) {
      const message = messages[next++] as Sent;
      sent.push(message);
      try {
        const reply = await postTo(url, message.bundle);
        const [allergy] = reply.status === 200 ? allergiesIn(JSON.parse(reply.text) as Bundle) : [];
        answered.set(message.id, {
          status: reply.status,
          text: reply.text,
          callId: reply.headers.get("x-sandbox-call-id"),
          allergyId: allergy?.id,
        });
      } catch {
        // No answer: the process went away with the request in flight.
      }
      if (!stopped && answered.size >= stopAfter) {
        stopped = true;
        stop();
      }
    }
  };
  await Promise.all(Array.from({ length: connections }, worker));
  return { sent, answered, unsent: messages.slice(next) };
}

function messages(run: string): Sent[] {
  return Array.from({ length: MESSAGES }, (_, i) => {
    const id = `${run}-${crypto.randomUUID()}`;
    const patient = patientId((i % PATIENTS) + 1);
    return { id, patient, bundle: allergyMessage(id, patient) };
  });
}

/** What the restarted sandbox holds of the load's messages: the allergies (by the message id in their text) and calls. */
async function heldAfterRestart(url: string) {
  const allergies = new Map<string, string[]>();
  for (let n = 1; n <= PATIENTS; n++) {
    for (const [id, text] of await profileAllergies(url, patientId(n))) {
      const messageId = /^marker (.+)$/.exec(text)?.[1];
      if (messageId === undefined) continue;
      allergies.set(messageId, [...(allergies.get(messageId) ?? []), id]);
    }
  }
  const calls = new Map<string, ListedCall[]>();
  for (const call of await allCalls(url, "operation=add-allergy")) {
    const key = call.messageId ?? "";
    calls.set(key, [...(calls.get(key) ?? []), call]);
  }
  return { allergies, calls };
}

async function stopUnderLoad(signal: "SIGKILL" | "SIGTERM") {
  const state = tempDir();
  try {
    const args = ["--state-file", state.file, "--log-format", "json"];
    const first = await startCli(args);
    const all = messages(signal.toLowerCase());
    const result = await load(first.url, all, {
      connections: CONNECTIONS,
      stopAfter: STOP_AFTER,
      stop: () => first.child.process.kill(signal),
    });
    const exit = await first.child.waitForExit(15_000);
    const highestBefore = Math.max(...[...result.answered.values()].map((a) => Number(a.callId)));

    const second = await startCli(args);
    return { first, exit, result, highestBefore, second, all, state };
  } catch (error) {
    state.remove();
    throw error;
  }
}

/** The checks both signals share: every answered message is there whole; no message is there in part. */
async function expectNothingAnsweredLost(
  url: string,
  { result, highestBefore }: { result: LoadResult; highestBefore: number },
) {
  const { answered, sent, unsent } = result;
  // The load ran as planned: half-way, every answer a 200 with its allergy and journal call named.
  expect(answered.size).toBeGreaterThanOrEqual(STOP_AFTER);
  expect(unsent.length).toBeGreaterThan(0);
  for (const [id, answer] of answered) {
    expect({ id, status: answer.status }).toEqual({ id, status: 200 });
    expect(answer.allergyId).toBeDefined();
    expect(answer.callId).toMatch(/^\d+$/);
  }

  const held = await heldAfterRestart(url);

  // Every answered allergy is in its patient's profile, under the id its answer gave; every answered call is in
  // the journal with the id its answer named, and its status.
  for (const [id, answer] of answered) {
    expect({ id, allergies: held.allergies.get(id) }).toEqual({ id, allergies: [answer.allergyId] });
    expect({ id, calls: held.calls.get(id)?.map((c) => [c.id, c.status]) }).toEqual({
      id,
      calls: [[answer.callId, 200]],
    });
  }
  // A message whose answer did not come back is there whole (it was committed, the answer lost on the way) or not at
  // all: its allergy, its remembered answer (checked by the resends below) and its journal call together. The
  // journal's call is never there without the allergy; the allergy never twice.
  const unanswered = sent.filter((m) => !answered.has(m.id));
  const kept = new Set<string>();
  for (const { id } of unanswered) {
    const allergies = held.allergies.get(id) ?? [];
    const calls = held.calls.get(id) ?? [];
    expect({ id, allergies: allergies.length, calls: calls.map((c) => c.status) }).toEqual(
      allergies.length === 0 ? { id, allergies: 0, calls: [] } : { id, allergies: 1, calls: [200] },
    );
    if (allergies.length > 0) kept.add(id);
  }
  // Nothing of a message that was never sent.
  for (const { id } of unsent)
    expect({ id, held: held.allergies.has(id) || held.calls.has(id) }).toEqual({ id, held: false });
  // And nothing else: the journal's add-allergy calls are exactly the messages held.
  expect(held.calls.size).toBe(answered.size + kept.size);
  expect(held.allergies.size).toBe(answered.size + kept.size);

  // An exact resend of an answered message gets its original answer, marked a duplicate, and adds nothing.
  const byId = new Map(sent.map((m) => [m.id, m]));
  const resends = await inParallel([...answered], CONNECTIONS, async ([id, answer]) => {
    const again = await postTo(url, (byId.get(id) as Sent).bundle);
    return { id, again, answer };
  });
  const newIds: number[] = [];
  for (const { id, again, answer } of resends) {
    expect({ id, status: again.status, duplicate: again.headers.get("x-sandbox-duplicate") }).toEqual({
      id,
      status: 200,
      duplicate: "true",
    });
    expect(JSON.parse(again.text)).toEqual(JSON.parse(answer.text));
    newIds.push(Number(again.headers.get("x-sandbox-call-id")));
  }
  // A message whose answer was lost: kept whole → its resend is a duplicate; not kept → processed now, as new.
  for (const { id, bundle } of unanswered) {
    const again = await postTo(url, bundle);
    expect({ id, status: again.status, duplicate: again.headers.get("x-sandbox-duplicate") }).toEqual({
      id,
      status: 200,
      duplicate: kept.has(id) ? "true" : null,
    });
    expect(responseHeader(JSON.parse(again.text) as Bundle).response?.code).toBe("ok");
    newIds.push(Number(again.headers.get("x-sandbox-call-id")));
  }
  // Call ids go on from before the restart: no new call reuses an id an answer named.
  expect(Math.min(...newIds)).toBeGreaterThan(highestBefore);
  // Every message sent is now there once.
  const after = await heldAfterRestart(url);
  for (const { id } of sent) expect({ id, allergies: after.allergies.get(id)?.length }).toEqual({ id, allergies: 1 });
}

describe("the state file when the process stops under load (real CLI)", { timeout: 120_000 }, () => {
  it("SIGKILL half-way: every answered message is there after the restart, and no message is there in part", async () => {
    const run = await stopUnderLoad("SIGKILL");
    try {
      expect(run.exit).toEqual({ code: null, signal: "SIGKILL" });
      await expectNothingAnsweredLost(run.second.url, run);
      expect(await stateFileStatus(run.second.url)).toBe("ok");
    } finally {
      await stop(run.second.child);
      run.state.remove();
    }
  });

  it("SIGTERM half-way: the sandbox stops gracefully (exit 0), and every answered message is there after the restart", async () => {
    const run = await stopUnderLoad("SIGTERM");
    try {
      expect(run.exit).toEqual({ code: 0, signal: null });
      await expectNothingAnsweredLost(run.second.url, run);
    } finally {
      await stop(run.second.child);
      run.state.remove();
    }
  });
});

/** `fn` over `items`, at most `width` at a time (the server takes a bounded number of connections). */
async function inParallel<T, R>(items: readonly T[], width: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = [];
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      results[i] = await fn(items[i] as T);
    }
  };
  await Promise.all(Array.from({ length: width }, worker));
  return results;
}

async function stateFileStatus(url: string): Promise<string> {
  const health = (await (await fetch(`${url}/__admin/health`)).json()) as { stateFile: { status: string } };
  return health.stateFile.status;
}

async function stop(child: Child): Promise<void> {
  child.process.kill("SIGTERM");
  await child.waitForExit(15_000);
}
