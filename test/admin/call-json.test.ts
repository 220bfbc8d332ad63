import type { AllergyIntolerance } from "fhir/r4.js";
import { describe, expect, it } from "vitest";
import { createApp } from "../../src/app.js";
import { callJson, callView } from "../../src/journal/call-view.js";
import { envelope, example, messageBundle, post } from "../support/messages.js";
import { admin } from "./admin-client.js";

// callJson splices bodies known to be JSON into the line as they are; what it
// gives must parse to exactly what the reference view (callView, which parses
// every body) gives, for every kind of call the journal holds.

const allergy = () => example<AllergyIntolerance>("allergyintolerance-example.json");
const QUIET = { info: () => undefined, error: () => undefined };

describe("a recorded call as one line of JSON (callJson)", () => {
  it("parses to the same view as callView, for answered, refused, unreadable and scripted calls", async () => {
    const { app, journal } = createApp({}, { logger: QUIET });
    const rule = [
      "rules:",
      "  - name: broken answer",
      "    when: { operation: add-allergy, headers: { x-case: broken } }",
      "    respond: { fault: malformed-json }",
    ].join("\n");
    expect((await admin(app, "POST", "/scenarios", { body: rule })).status).toBe(201);
    const sent = messageBundle("add-allergy", [allergy()]);
    await post(app, sent); // ok
    await post(app, sent); // an exact resend: the stored answer again
    await post(app, messageBundle("add-allergy", [allergy()], { id: sent.entry?.[0]?.resource?.id })); // 409
    await post(app, "this is not json"); // unreadable
    await post(app, JSON.stringify({ content: "{}" })); // JSON, but no message
    // A pretty-printed envelope: spliced as sent, whitespace and all, still the same JSON.
    await post(app, JSON.stringify({ content: JSON.stringify(messageBundle("add-allergy", [allergy()])) }, null, 2));
    const broken = await app.request("/uae-fhir/r4/$process-message", {
      method: "POST",
      headers: { "content-type": "application/json", "x-case": "broken" },
      body: envelope(messageBundle("add-allergy", [allergy()])),
    });
    expect(await broken.text()).not.toMatch(/}$/); // the malformed answer
    await post(app, envelope(messageBundle("no-such-event", [allergy()]))); // unknown event

    const calls = journal.list();

    expect(calls).toHaveLength(8);
    expect(calls.filter((c) => c.jsonBodies).length).toBeGreaterThanOrEqual(5);
    for (const call of calls) expect(JSON.parse(callJson(call))).toEqual(JSON.parse(JSON.stringify(callView(call))));
  });
});
