import type { AllergyIntolerance, Bundle } from "fhir/r4.js";
import { describe, expect, it } from "vitest";
import { createApp } from "../../src/app.js";
import { example, messageBundle, post, responseHeader } from "../support/messages.js";
import { admin, listCalls } from "./admin-client.js";

// One message, so that every send of it is an exact resend (CONTRACT §5).
const message = messageBundle("add-allergy", [example<AllergyIntolerance>("allergyintolerance-example.json")], {
  id: "msg-once",
});
const request = () => structuredClone(message);

describe("duplicate messages and POST /__admin/reset (CONTRACT §4, §9)", () => {
  it("answers a resent message id with the original response, and journals it as a duplicate", async () => {
    const { app } = createApp();

    const first = await post(app, request());
    const again = await post(app, request());

    expect(again.status).toBe(200);
    expect(responseHeader(again.body as Bundle).id).toBe(responseHeader(first.body as Bundle).id);
    const calls = await listCalls(app);
    expect(calls.map((c) => [c.messageId, c.duplicate ?? false])).toEqual([
      ["msg-once", false],
      ["msg-once", true],
    ]);
  });

  it("clears the journal and the duplicate-message memory", async () => {
    const { app } = createApp();
    const first = await post(app, request());

    const reply = await admin(app, "POST", "/reset");

    expect(reply.status).toBe(200);
    expect(await listCalls(app)).toEqual([]);
    const after = await post(app, request());
    expect(after.status).toBe(200);
    const header = responseHeader(after.body as Bundle);
    expect(header.response).toEqual({ identifier: "msg-once", code: "ok" });
    expect(header.id).not.toBe(responseHeader(first.body as Bundle).id);
    const calls = await listCalls(app);
    expect(calls).toHaveLength(1);
    expect(calls[0].duplicate).toBeUndefined();
  });

  it("DELETE /__admin/calls clears the journal only: a resent id is still a duplicate", async () => {
    const { app } = createApp();
    const first = await post(app, request());

    await admin(app, "DELETE", "/calls");

    const again = await post(app, request());
    expect(responseHeader(again.body as Bundle).id).toBe(responseHeader(first.body as Bundle).id);
    const calls = await listCalls(app);
    expect(calls).toHaveLength(1);
    expect(calls[0].duplicate).toBe(true);
  });
});
