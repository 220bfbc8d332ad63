import type { AllergyIntolerance, Bundle } from "fhir/r4.js";
import { describe, expect, it } from "vitest";
import { createApp } from "../../src/app.js";
import { example, focusOf, messageBundle, post, responseHeader } from "../support/messages.js";

describe("a successful response message (CONTRACT §4)", () => {
  it("correlates with the request and returns the stored resource", async () => {
    const { app } = createApp();
    const allergy = example<AllergyIntolerance>("allergyintolerance-example.json");
    const request = messageBundle("add-allergy", [allergy], { id: "msg-1", source: "https://clinic.example.ae/ehr" });

    const reply = await post(app, request);

    expect(reply.status).toBe(200);
    expect(reply.headers.get("content-type")).toMatch(/^application\/fhir\+json/);
    const bundle = reply.body as Bundle;
    expect(bundle).toMatchObject({ resourceType: "Bundle", type: "message" });
    const header = responseHeader(bundle);
    expect(header.id).toBeTruthy();
    expect(header.id).not.toBe("msg-1");
    expect(header.eventCoding).toEqual({ system: "https://sandbox.example.ae/events", code: "add-allergy" });
    expect(header.destination?.[0]?.endpoint).toBe("https://clinic.example.ae/ehr");
    expect(header.source.endpoint).toBe("http://localhost/uae-fhir/r4/$process-message");
    expect(header.response).toEqual({ identifier: "msg-1", code: "ok" });
    const [stored] = focusOf(bundle) as AllergyIntolerance[];
    expect(stored?.code).toEqual(allergy.code);
    expect(stored?.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(stored?.meta).toMatchObject({ versionId: "1" });
    expect(Date.parse(stored?.meta?.lastUpdated ?? "")).not.toBeNaN();
  });
});
