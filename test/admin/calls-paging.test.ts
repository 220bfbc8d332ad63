import type { AllergyIntolerance, Patient } from "fhir/r4.js";
import { describe, expect, it } from "vitest";
import { createApp } from "../../src/app.js";
import { example, messageBundle, post } from "../support/messages.js";
import { admin } from "./admin-client.js";

// Paging GET /__admin/calls (limit, cursor, order) and its NDJSON form. Seven
// messages msg-1 … msg-7 are sent, every third a view-patient-profile; the
// expected pages are counted by hand from that list.

const allergy = () => example<AllergyIntolerance>("allergyintolerance-example.json");
const patient = () => example<Patient>("patient-example.json");
const QUIET = { info: () => undefined, error: () => undefined };

/** msg-1 … msg-7; msg-3 and msg-6 are view-patient-profile, the others add-allergy. */
async function sandboxWithSevenCalls(options: Parameters<typeof createApp>[0] = {}) {
  const sandbox = createApp(options, { logger: QUIET });
  for (let i = 1; i <= 7; i++) {
    const bundle =
      i % 3 === 0
        ? messageBundle("view-patient-profile", [patient()], { id: `msg-${i}` })
        : messageBundle("add-allergy", [allergy()], { id: `msg-${i}` });
    expect((await post(sandbox.app, bundle)).status).toBe(200);
  }
  return sandbox;
}

type App = ReturnType<typeof createApp>["app"];
async function page(app: App, query: string) {
  const reply = await admin(app, "GET", `/calls?${query}`);
  expect(reply.status).toBe(200);
  return {
    ids: (reply.body.calls as Array<{ messageId: string }>).map((c) => c.messageId),
    next: reply.body.next as string | null,
  };
}

describe("GET /__admin/calls pages through the journal", () => {
  it("keeps `limit` alone as the most recent N, oldest first, with no next page", async () => {
    const { app } = await sandboxWithSevenCalls();

    expect(await page(app, "limit=3")).toEqual({ ids: ["msg-5", "msg-6", "msg-7"], next: null });
    expect(await page(app, "")).toEqual({
      ids: ["msg-1", "msg-2", "msg-3", "msg-4", "msg-5", "msg-6", "msg-7"],
      next: null,
    });
  });

  it("pages oldest first from cursor 0, each page's next leading to the following one", async () => {
    const { app } = await sandboxWithSevenCalls();

    const first = await page(app, "limit=3&cursor=0");
    const second = await page(app, `limit=3&cursor=${first.next}`);
    const third = await page(app, `limit=3&cursor=${second.next}`);

    expect([first.ids, second.ids, third.ids]).toEqual([
      ["msg-1", "msg-2", "msg-3"],
      ["msg-4", "msg-5", "msg-6"],
      ["msg-7"],
    ]);
    expect(typeof first.next).toBe("string");
    expect(third.next).toBeNull();
  });

  it("pages newest first with order=desc", async () => {
    const { app } = await sandboxWithSevenCalls();

    const first = await page(app, "order=desc&limit=4");
    const second = await page(app, `order=desc&limit=4&cursor=${first.next}`);

    expect(first.ids).toEqual(["msg-7", "msg-6", "msg-5", "msg-4"]);
    expect(second).toEqual({ ids: ["msg-3", "msg-2", "msg-1"], next: null });
  });

  it("pages within the filters, a full last page having no next", async () => {
    const { app } = await sandboxWithSevenCalls();

    const first = await page(app, "operation=add-allergy&limit=2&cursor=0");
    const second = await page(app, `operation=add-allergy&limit=2&cursor=${first.next}`);
    const third = await page(app, `operation=add-allergy&limit=2&cursor=${second.next}`);
    const views = await page(app, "operation=view-patient-profile&order=desc&limit=2");

    expect([first.ids, second.ids, third.ids]).toEqual([["msg-1", "msg-2"], ["msg-4", "msg-5"], ["msg-7"]]);
    expect(views).toEqual({ ids: ["msg-6", "msg-3"], next: null });
  });

  it("goes on from a cursor after older calls were dropped, and finds calls recorded since", async () => {
    const { app } = await sandboxWithSevenCalls({ journalLimit: 4 });

    const first = await page(app, "limit=2&cursor=0");
    expect(first.ids).toEqual(["msg-4", "msg-5"]);
    await post(app, messageBundle("add-allergy", [allergy()], { id: "msg-8" })); // msg-4 dropped
    const second = await page(app, `limit=5&cursor=${first.next}`);

    expect(second).toEqual({ ids: ["msg-6", "msg-7", "msg-8"], next: null });
  });

  it.each([
    ["order=sideways", "order"],
    ["cursor=abc", "cursor"],
    ["cursor=-1", "cursor"],
    ["format=xml", "format"],
  ])("refuses %s with a 400 naming the parameter", async (query, name) => {
    const { app } = createApp({}, { logger: QUIET });

    const reply = await admin(app, "GET", `/calls?${query}`);

    expect(reply.status).toBe(400);
    expect(reply.body.issue[0].diagnostics).toContain(name);
  });
});

describe("GET /__admin/calls?format=ndjson streams the calls", () => {
  it("sends one call a line, the same calls and views as the JSON listing", async () => {
    const { app } = await sandboxWithSevenCalls();
    const listed = (await admin(app, "GET", "/calls")).body.calls;

    const res = await app.request("/__admin/calls?format=ndjson");
    const text = await res.text();

    expect(res.headers.get("content-type")).toBe("application/x-ndjson; charset=utf-8");
    expect(text.endsWith("\n")).toBe(true);
    const lines = text
      .slice(0, -1)
      .split("\n")
      .map((line) => JSON.parse(line));
    expect(lines).toHaveLength(7);
    expect(lines).toEqual(listed);
  });

  it("takes the page query, its next cursor in a header", async () => {
    const { app } = await sandboxWithSevenCalls();

    const res = await app.request("/__admin/calls?format=ndjson&order=desc&limit=2");
    const ids = (await res.text())
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line).messageId);

    expect(ids).toEqual(["msg-7", "msg-6"]);
    const next = res.headers.get("x-sandbox-next-cursor");
    expect((await page(app, `order=desc&limit=9&cursor=${next}`)).ids).toEqual([
      "msg-5",
      "msg-4",
      "msg-3",
      "msg-2",
      "msg-1",
    ]);
  });
});
