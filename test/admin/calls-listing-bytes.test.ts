import type { AllergyIntolerance } from "fhir/r4.js";
import { describe, expect, it } from "vitest";
import { createApp } from "../../src/app.js";
import type { CallRecord } from "../../src/journal/call-record.js";
import { escapeJsonText, jsonText } from "../../src/text/json-text.js";
import { oneLineJson } from "../../src/text/one-line-json.js";
import { envelope, example, messageBundle, STANDARD } from "../support/messages.js";
import { admin } from "./admin-client.js";

// GET /__admin/calls writes each call's line in parts, copying a packed body's bytes as they are when its JSON would
// not change them. Here the listing is compared byte for byte with the lines as they were written before, one string
// per call (written out below), for a journal of varied calls: bodies packed and not, bodies with markup, line
// breaks and U+2028, pretty-printed and unreadable requests, scripted faults, calls that are no message.

const QUIET = { info: () => undefined, error: () => undefined };

/** A side as the admin API shows it: its members in order, `body` last. */
const side = (s: NonNullable<CallRecord["response"]> | CallRecord["request"], body: unknown) =>
  "method" in s
    ? { method: s.method, url: s.url, path: s.path, headers: s.headers, body }
    : { status: s.status, headers: s.headers, body };

/** A body as the admin API shows it, parsed when it is JSON. */
function shown(text: string): unknown {
  if (text === "") return null;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** A call's line as callJson wrote it before: the skeleton, the bodies spliced in, the whole line made safe at once. */
function referenceLine(call: CallRecord): string {
  const { id, size: _s, trace: _t, responseCode: _c, jsonBodies, at, request, response, ...rest } = call;
  if (!jsonBodies) {
    const view = {
      id,
      ...rest,
      at: at.toISOString(),
      request: side(request, shown(request.body)),
      response: response ? side(response, shown(response.body)) : null,
    };
    return oneLineJson(jsonText(view));
  }
  const slot = '"body":null}';
  const skeleton = JSON.stringify({
    id,
    ...rest,
    at: at.toISOString(),
    request: side(request, null),
    response: response ? side(response, null) : null,
  });
  const body = (text: string) => `"body":${text === "" ? "null" : text}}`;
  const first = skeleton.indexOf(slot);
  const last = skeleton.lastIndexOf(slot);
  const line = !response
    ? skeleton.slice(0, first) + body(request.body) + skeleton.slice(first + slot.length)
    : skeleton.slice(0, first) +
      body(request.body) +
      skeleton.slice(first + slot.length, last) +
      body(response.body) +
      skeleton.slice(last + slot.length);
  return escapeJsonText(oneLineJson(line));
}

/**
 * An allergy whose text may hold what a line must change: markup, and line breaks JSON keeps raw in strings (no
 * narrative, whose XHTML would hold markup in every body).
 */
function allergy(i: number, text: string): string {
  const { text: _narrative, ...example_ } = example<AllergyIntolerance>("allergyintolerance-example.json");
  const resource = { ...example_, code: { text } };
  return envelope(messageBundle("add-allergy", [resource], { id: `listing-${i}` }));
}

describe("GET /__admin/calls, the whole journal", () => {
  it("gives the same bytes as the calls' lines written one string each, as JSON and as NDJSON", async () => {
    const { app, journal } = createApp({}, { logger: QUIET });
    const rule = [
      "rules:",
      "  - name: broken answer <&>",
      "    when: { operation: add-allergy, headers: { x-case: broken } }",
      "    respond: { fault: malformed-json }",
      "  - name: reset",
      "    when: { operation: add-allergy, headers: { x-case: reset } }",
      "    respond: { fault: connection-reset }",
    ].join("\n");
    expect((await admin(app, "POST", "/scenarios", { body: rule })).status).toBe(201);
    let n = 0;
    const send = async (body: string, headers: Record<string, string> = {}, path = STANDARD) => {
      // A connection-reset fault rejects in-process.
      const res = await Promise.resolve(
        app.request(path, { method: "POST", headers: { "content-type": "application/json", ...headers }, body }),
      ).catch(() => undefined);
      await res?.text();
    };
    const oddCalls = async () => {
      // One of each alone: each must be found on its own.
      for (const odd of ["<", ">", "&", "\u2028", "\u2029", "\u0085"]) await send(allergy(n++, `odd ${odd} text`));
      await send(allergy(n++, "peanut <b>allergy</b> & co > all"));
      await send(allergy(n++, "Arabic: حساسية الفول السوداني"));
      await send(`${JSON.stringify(JSON.parse(allergy(n++, "pretty")), null, 2)}\n`);
      await send("this is not json <script>");
      await send("");
      await send(JSON.stringify({ content: "{}" }));
      await send(allergy(n++, "broken"), { "x-case": "broken" });
      await send(allergy(n++, "reset"), { "x-case": "reset" });
      // What a line must change outside the bodies, in calls whose bodies go in as they are: a header, a query, a
      // MessageHeader id (refused, and recorded as sent), one character a call.
      await send(allergy(n++, "header"), { "x-note": "<a & b>" });
      await send(allergy(n++, "query"), {}, `${STANDARD}?note=<1>&x=2`);
      for (const odd of ["<", ">", "&", "\u2028", "\u2029", "\u0085"]) {
        const { text: _narrative, ...resource } = example<AllergyIntolerance>("allergyintolerance-example.json");
        await send(envelope(messageBundle("add-allergy", [resource], { id: `id ${odd} ${n++}` })));
      }
      await send(allergy(n++, "a resend"));
      await send(allergy(n - 1, "a resend"));
      await app.request("/uae-fhir/r4/metadata?x=<1>&access_token=secret");
    };
    await oddCalls();
    for (let i = 0; i < 150; i++) await send(allergy(n++, `plain ${i}`));
    await oddCalls();
    await new Promise((resolve) => setImmediate(resolve));

    const calls = journal.list();
    const lines = calls.map(referenceLine);
    const json = await (await app.request("/__admin/calls")).text();
    const ndjson = await (await app.request("/__admin/calls?format=ndjson")).text();

    expect(journal.packedBytes).toBeGreaterThan(0);
    expect(calls.filter((c) => c.response === null).length).toBeGreaterThan(0);
    expect(calls.filter((c) => !c.jsonBodies).length).toBeGreaterThan(3);
    expect(json.length).toBeGreaterThan(100 * 1024);
    expect(json).toBe(`{"calls":[${lines.join(",")}],"next":null}`);
    expect(ndjson).toBe(`${lines.join("\n")}\n`);
    expect(JSON.parse(json).calls).toHaveLength(calls.length);
  }, 120_000);

  it("is the same for an empty journal", async () => {
    const { app } = createApp({}, { logger: QUIET });
    expect(await (await app.request("/__admin/calls")).text()).toBe('{"calls":[],"next":null}');
    expect(await (await app.request("/__admin/calls?format=ndjson")).text()).toBe("");
  });
});
