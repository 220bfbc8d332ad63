import type { AllergyIntolerance } from "fhir/r4.js";
import { afterEach, describe, expect, it } from "vitest";
import { killStray } from "../cli/cli-process.js";
import { example, messageBundle } from "../support/messages.js";
import { StateSandbox, tempDir } from "./state-sandbox.js";

/**
 * The journal within its limits across a restart: a full journal (calls dropped to make room) and one cleared by
 * DELETE /__admin/calls page the same after a crash, and a page cursor (`next`) taken before it goes on after it.
 */

afterEach(killStray);

const allergy = () => messageBundle("add-allergy", [example<AllergyIntolerance>("allergyintolerance-example.json")]);

/** GET /__admin/calls: the ids of a page and its cursor. */
async function page(s: StateSandbox, query: string) {
  const reply = await s.admin(`/calls?${query}`);
  expect(reply.status, reply.text).toBe(200);
  return { ids: reply.json.calls.map((c: { id: string }) => c.id), next: reply.json.next };
}

/** Every page from the oldest call (cursor 0) and from the newest (order=desc), four at a time. */
async function pages(s: StateSandbox) {
  const out = [];
  for (const order of ["asc", "desc"]) {
    let cursor: number | null = order === "asc" ? 0 : null;
    for (let i = 0; i < 10; i++) {
      const one = await page(s, `order=${order}&limit=4${cursor === null ? "" : `&cursor=${cursor}`}`);
      out.push(one);
      if (one.next === null) break;
      cursor = one.next;
    }
  }
  return out;
}

describe("the journal's pages across a restart", { timeout: 30_000 }, () => {
  it("a full journal and a cleared one page as before; a cursor from before goes on after", async () => {
    const dir = tempDir();
    const first = await StateSandbox.start(["--state-file", `${dir}/state.db`, "--journal-limit", "10"]);
    for (let i = 0; i < 15; i++) expect((await first.send(allergy())).status).toBe(200);
    const before = await pages(first);
    // Five calls were dropped to keep ten: the cursors count every call recorded, the dropped ones too.
    expect(before[0]?.ids).toHaveLength(4);
    await first.stop("SIGKILL");

    const second = await first.restart();
    expect(await pages(second)).toEqual(before);
    // A client that read the first page before the crash asks for the next one after it.
    expect(await page(second, `limit=4&cursor=${before[0]?.next}`)).toEqual(before[1]);

    // Cleared, then a crash before any call: a client's cursor from before still finds the calls that come next.
    expect((await second.admin("/calls", { method: "DELETE" })).status).toBe(200);
    await second.stop("SIGKILL");
    const third = await second.restart();
    expect(await page(third, "")).toEqual({ ids: [], next: null });
    const sent = [];
    for (let i = 0; i < 2; i++) {
      const reply = await third.send(allergy());
      expect(reply.status).toBe(200);
      sent.push(reply.headers.get("x-sandbox-call-id"));
    }
    expect(await page(third, `limit=4&cursor=${before[1]?.next}`)).toEqual({ ids: sent, next: null });
  });
});
