import type { AllergyIntolerance, OperationOutcome } from "fhir/r4.js";
import { describe, expect, it } from "vitest";
import { createApp, type SandboxDeps } from "../../src/app.js";
import { CONTRACT_OPERATIONS } from "../support/contract-operations.js";
import { ALTERNATE, example, focusOf, messageBundle, post, responseHeader, STANDARD } from "../support/messages.js";
import { OPERATION_CASES, type OperationCase } from "./operation-messages.js";
import {
  expectOk,
  expectRefusal,
  expectResponseMessage,
  journalledCall,
  sandboxUrl,
  stored,
} from "./response-checks.js";

/** The contract's table (test/support/contract-operations.ts): a change to the catalogue data is caught. */
const CONTRACT_TABLE = CONTRACT_OPERATIONS;

const HANDLERS: Array<[name: string, deps: Partial<SandboxDeps>]> = [["built-in handlers", {}]];

describe.each(HANDLERS)("every operation of CONTRACT §3 is routed and answered per §4 (%s)", (name, deps) => {
  it("covers the 18 operations of the contract", () => {
    expect(OPERATION_CASES.map((c) => [c.id, c.path])).toEqual(CONTRACT_TABLE);
  });

  it.each(OPERATION_CASES.map((c) => [c.id, c] as [string, OperationCase]))("%s", async (id, operation) => {
    const { app } = createApp({}, deps);
    const request = await operation.request(app);
    const requestId = responseHeader(request).id as string;

    const reply = await post(app, request, { path: operation.path });

    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    const bundle = expectResponseMessage(reply, request, operation.path);
    const header = responseHeader(bundle);
    if (operation.orderFlow && name === "built-in handlers" && header.response?.code !== "ok") {
      // A stateful store refuses a drug-order message that no pushed order explains; the order flow has its own tests.
      const outcome = expectRefusal(bundle);
      expect(outcome.issue.map((i) => i.code)).toEqual(
        expect.arrayContaining([expect.stringMatching(/^(business-rule|not-found|conflict)$/)]),
      );
    } else {
      expect(header.response?.code).toBe("ok");
      const types = focusOf(bundle).map((r) => r.resourceType);
      for (const type of types) expect(operation.returns.types).toContain(type);
      if (operation.returns.required) expect(types).toContain(operation.returns.required);
      if (id.startsWith("add-") || id.startsWith("update-")) {
        const [saved] = focusOf(bundle);
        expect(saved?.id).toEqual(expect.any(String));
        expect(saved?.meta?.versionId).toEqual(expect.any(String));
        expect(Date.parse(saved?.meta?.lastUpdated ?? "")).not.toBeNaN();
      }
    }

    const call = await journalledCall(app, requestId);
    expect(call).toMatchObject({
      direction: "inbound",
      operation: id,
      messageId: requestId,
      request: { method: "POST", path: operation.path },
      response: { status: 200 },
    });
  });
});

describe("telling operations apart", () => {
  it.each(OPERATION_CASES.map((c) => [c.id, c] as [string, OperationCase]))(
    "routes %s by the last segment of MessageHeader.eventUri",
    async (id, operation) => {
      const { app } = createApp();
      const request = await operation.request(app, { eventUri: true });
      const header = responseHeader(request);
      expect(header.eventCoding).toBeUndefined();

      const reply = await post(app, request, { path: operation.path });

      expect(reply.status, JSON.stringify(reply.body)).toBe(200);
      expectResponseMessage(reply, request, operation.path);
      expect((await journalledCall(app, header.id as string)).operation).toBe(id);
    },
  );

  it.each([
    ["a URL path", "https://sandbox.example.ae/events/add-allergy"],
    ["a URL with a trailing slash", "https://sandbox.example.ae/events/add-allergy/"],
    ["a URL fragment", "https://sandbox.example.ae/events#add-allergy"],
    ["a URN", "urn:ae:sandbox:event:add-allergy"],
    ["an upper-case last segment", "https://sandbox.example.ae/events/ADD-ALLERGY"],
  ])("reads the event from eventUri as %s", async (_, eventUri) => {
    const { app } = createApp();
    const request = messageBundle("add-allergy", [example<AllergyIntolerance>("allergyintolerance-example.json")], {
      eventUri: true,
    });
    const header = responseHeader(request);
    header.eventUri = eventUri;

    const reply = await post(app, request);

    const [saved] = expectOk(reply, request, STANDARD);
    expect(saved?.resourceType).toBe("AllergyIntolerance");
    expect(responseHeader(reply.body).eventUri).toBe(eventUri);
    expect((await journalledCall(app, header.id as string)).operation).toBe("add-allergy");
  });

  it("prefers eventCoding.code over eventUri (a message with both is invalid R4: refused unless --validation warn)", async () => {
    const request = messageBundle("add-allergy", [example<AllergyIntolerance>("allergyintolerance-example.json")]);
    const header = responseHeader(request);
    header.eventUri = "https://sandbox.example.ae/events/view-patient-profile";

    // MessageHeader.event[x] is a choice: one of eventCoding and eventUri (FHIRPath reaches one: the issue is at the header).
    const strict = await post(createApp().app, request);
    expect(strict.status).toBe(400);
    expect(strict.body.issue).toContainEqual(
      expect.objectContaining({ code: "structure", expression: ["Bundle.entry[0].resource"] }),
    );

    const { app } = createApp({ validation: "warn" });
    const reply = await post(app, request);

    expectOk(reply, request, STANDARD);
    expect((await journalledCall(app, header.id as string)).operation).toBe("add-allergy");
  });

  it.each([
    ["ADD-ALLERGY", STANDARD, "add-allergy"],
    ["Add-Allergy", STANDARD, "add-allergy"],
    ["aDd-AlLeRgY", STANDARD, "add-allergy"],
    ["REMOVE-ALLERGY", ALTERNATE, "remove-allergy"],
    ["View-Patient-Profile", STANDARD, "view-patient-profile"],
  ])("matches event code %s case-insensitively", async (code, path, id) => {
    const { app } = createApp();
    const allergy = example<AllergyIntolerance>("allergyintolerance-example.json");
    const resource =
      id === "view-patient-profile"
        ? example("patient-example.json")
        : id === "remove-allergy"
          ? await stored(app, messageBundle("add-allergy", [allergy]))
          : allergy;
    const request = messageBundle(code, [resource]);

    const reply = await post(app, request, { path });

    expectOk(reply, request, path);
    // The response echoes the coding exactly as it was sent.
    expect(responseHeader(reply.body).eventCoding?.code).toBe(code);
    expect((await journalledCall(app, responseHeader(request).id as string)).operation).toBe(id);
  });

  it.each([
    ["add-allergy", ALTERNATE, STANDARD],
    ["view-patient-profile", ALTERNATE, STANDARD],
    ["remove-allergy", STANDARD, ALTERNATE],
  ])("refuses %s sent to %s with a 404 naming the right path", async (event, wrong, right) => {
    const { app } = createApp();
    const resource =
      event === "view-patient-profile"
        ? example("patient-example.json")
        : { ...example<AllergyIntolerance>("allergyintolerance-example.json"), id: "a1" };
    const request = messageBundle(event, [resource]);

    const reply = await post(app, request, { path: wrong });

    expect(reply.status).toBe(404);
    expect(reply.headers.get("content-type")).toMatch(/^application\/fhir\+json/);
    const outcome = reply.body as OperationOutcome;
    expect(outcome.resourceType).toBe("OperationOutcome");
    expect(outcome.issue.map((i) => i.diagnostics).join(" ")).toContain(right);
    expect((await journalledCall(app, responseHeader(request).id as string)).operation).toBe(event);
  });

  it("answers an unknown event with 400 listing every known code", async () => {
    const { app } = createApp();
    const request = messageBundle("add-alergy", [example<AllergyIntolerance>("allergyintolerance-example.json")]);

    const reply = await post(app, request);

    expect(reply.status).toBe(400);
    const outcome = reply.body as OperationOutcome;
    expect(outcome.resourceType).toBe("OperationOutcome");
    const said = outcome.issue.map((i) => i.diagnostics).join(" ");
    expect(said).toContain("add-alergy");
    for (const [id] of CONTRACT_TABLE) expect(said).toContain(id);
    const call = await journalledCall(app, responseHeader(request).id as string);
    expect(call).toMatchObject({ operation: null, response: { status: 400 } });
  });
});

describe("--base-path", () => {
  it("serves every message path under the prefix and nothing unprefixed", async () => {
    const { app } = createApp({ basePath: "/sandbox" });
    const allergy = example<AllergyIntolerance>("allergyintolerance-example.json");

    const added = messageBundle("add-allergy", [allergy]);
    const addReply = await post(app, added, { path: `/sandbox${STANDARD}` });
    const [saved] = expectOk(addReply, added, `/sandbox${STANDARD}`);
    expect(responseHeader(addReply.body).source.endpoint).toBe(sandboxUrl("/sandbox/uae-fhir/r4/$process-message"));

    const removed = messageBundle("remove-allergy", [saved as AllergyIntolerance]);
    expectOk(await post(app, removed, { path: `/sandbox${ALTERNATE}` }), removed, `/sandbox${ALTERNATE}`);

    for (const path of [STANDARD, ALTERNATE]) {
      const unprefixed = await post(app, messageBundle("add-allergy", [allergy]), { path });
      expect(unprefixed.status).toBe(404);
      expect(unprefixed.body.resourceType).toBe("OperationOutcome");
      expect(unprefixed.body.issue[0].diagnostics).toContain(`/sandbox${STANDARD}`);
    }
  });

  it("names the prefixed path when a known operation is on the wrong one", async () => {
    const { app } = createApp({ basePath: "/sandbox" });
    const request = messageBundle("remove-allergy", [
      { ...example<AllergyIntolerance>("allergyintolerance-example.json"), id: "a1" },
    ]);

    const reply = await post(app, request, { path: `/sandbox${STANDARD}` });

    expect(reply.status).toBe(404);
    expect(reply.body.issue.map((i: { diagnostics: string }) => i.diagnostics).join(" ")).toContain(
      `/sandbox${ALTERNATE}`,
    );
  });

  it.each(["sandbox", "/sandbox/", "sandbox/"])("normalises %j to /sandbox", async (basePath) => {
    const { app } = createApp({ basePath });
    const request = messageBundle("add-allergy", [example<AllergyIntolerance>("allergyintolerance-example.json")]);

    expectOk(await post(app, request, { path: `/sandbox${STANDARD}` }), request, `/sandbox${STANDARD}`);
  });
});

describe("GET /__admin/operations", () => {
  it.each([
    ["", "without a base path"],
    ["/sandbox", "with --base-path /sandbox"],
  ])("lists all 18 operations with their paths and event codes (%s)", async (basePath) => {
    const { app } = createApp({ basePath });

    const res = await app.request("/__admin/operations");

    expect(res.status).toBe(200);
    const { operations } = (await res.json()) as {
      operations: Array<{ id: string; path: string; event: string; aliases: string[]; method: string }>;
    };
    expect(operations.map((op) => [op.id, op.path])).toEqual(
      CONTRACT_TABLE.map(([id, path]) => [id, `${basePath}${path}`]),
    );
    for (const op of operations) {
      expect(op.event).toBe(op.id);
      expect(op.aliases).toEqual([]);
      expect(op.method).toBe("POST");
    }
  });
});
