import { createServer } from "node:net";
import type { AllergyIntolerance, Patient } from "fhir/r4.js";
import { afterEach, describe, expect, it, vi } from "vitest";
import { createApp } from "../../src/app.js";
import { listCalls } from "../admin/admin-client.js";
import { example, messageBundle, post, responseHeader, STANDARD } from "../support/messages.js";

// --proxy in-process: the upstream is a fake fetch (deps.fetch), except where a refused connection is the point.
afterEach(() => {
  vi.useRealTimers();
});

const UPSTREAM = "http://upstream.test:9000/real";
const UPSTREAM_BODY = { resourceType: "Bundle", id: "answered-upstream", type: "message", entry: [] };

interface Forwarded {
  url: string;
  method: string | undefined;
  headers: Headers;
  body: string;
}

/** A fake upstream that records what reaches it and answers `status` with UPSTREAM_BODY and some headers. */
function fakeUpstream(status = 200) {
  const forwarded: Forwarded[] = [];
  const fetch = (async (input: string | URL | Request, init: RequestInit = {}) => {
    forwarded.push({
      url: String(input),
      method: init.method,
      headers: new Headers(init.headers),
      body: String(init.body),
    });
    return new Response(JSON.stringify(UPSTREAM_BODY), {
      status,
      headers: { "content-type": "application/fhir+json", "x-upstream": "yes", "keep-alive": "timeout=5" },
    });
  }) as typeof globalThis.fetch;
  return { forwarded, fetch };
}

const EID = "urn:ae:emirates-id";
const addAllergy = () =>
  messageBundle("add-allergy", [
    {
      ...example<AllergyIntolerance>("allergyintolerance-example.json"),
      patient: { identifier: { system: EID, value: "784-1990-1234567-6" } },
    } as AllergyIntolerance,
  ]);
const viewProfile = () =>
  messageBundle("view-patient-profile", [
    { resourceType: "Patient", identifier: [{ system: EID, value: "784-1990-1234567-6" }] } as Patient,
  ]);

describe("--proxy", () => {
  it("a scenario rule still answers in proxy mode; the upstream never sees that message", async () => {
    const upstream = fakeUpstream();
    const sandbox = createApp({ proxy: UPSTREAM }, { fetch: upstream.fetch });
    sandbox.scenarios.add(`
rules:
  - name: scripted allergy refusal
    when: { operation: add-allergy }
    respond:
      outcome: { diagnostics: "Allergies are read-only today" }
`);
    const scripted = await post(sandbox.app, addAllergy());
    expect(scripted.status).toBe(200);
    expect(responseHeader(scripted.body).response?.code).toBe("fatal-error");
    expect(JSON.stringify(scripted.body)).toContain("Allergies are read-only today");
    expect(upstream.forwarded).toHaveLength(0);

    const forwarded = await post(sandbox.app, viewProfile());
    expect(forwarded.body).toEqual(UPSTREAM_BODY);
    expect(upstream.forwarded).toHaveLength(1);

    const calls = await listCalls(sandbox.app);
    expect(calls.map((c) => [c.operation, c.rule, c.upstream])).toEqual([
      ["add-allergy", "scripted allergy refusal", undefined],
      ["view-patient-profile", null, `${UPSTREAM}${STANDARD}`],
    ]);
  });

  // The upstream judges bad messages too: the sandbox forwards them rather than answering itself.
  it.each([
    ["a body that is not JSON", "not json", "application/json"],
    ["an unknown event", JSON.stringify({ content: JSON.stringify(messageBundle("no-such-event", [])) }), undefined],
    ["an unsupported content type", "<xml/>", "application/xml"],
  ])("forwards %s", async (_name, body, contentType) => {
    const upstream = fakeUpstream(422);
    const sandbox = createApp({ proxy: UPSTREAM }, { fetch: upstream.fetch });
    const reply = await post(sandbox.app, body, contentType ? { contentType } : {});
    expect(reply.status).toBe(422);
    expect(reply.body).toEqual(UPSTREAM_BODY);
    expect(upstream.forwarded.map((f) => f.body)).toEqual([body]);
  });

  it("a builtIn rule's delay applies first, then the upstream answers, with the rule's headers", async () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    const upstream = fakeUpstream();
    const sandbox = createApp({ proxy: UPSTREAM }, { fetch: upstream.fetch });
    sandbox.scenarios.add(`
rules:
  - name: slow profile
    when: { operation: view-patient-profile }
    respond: { builtIn: true, delay: 2s, headers: { x-scripted: slow } }
`);
    const pending = post(sandbox.app, viewProfile());
    await vi.advanceTimersByTimeAsync(1999);
    expect(upstream.forwarded).toHaveLength(0);
    await vi.advanceTimersByTimeAsync(1);
    const reply = await pending;
    expect(upstream.forwarded).toHaveLength(1);
    expect(reply.body).toEqual(UPSTREAM_BODY);
    expect(reply.headers.get("x-scripted")).toBe("slow");
    const [call] = await listCalls(sandbox.app);
    expect(call).toMatchObject({ rule: "slow profile", upstream: `${UPSTREAM}${STANDARD}` });
  });

  it("an unreachable upstream gives a 502 OperationOutcome naming it, recorded", async () => {
    // A port that was just free: nothing listens there now.
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as { port: number };
    await new Promise((resolve) => server.close(resolve));
    const target = `http://127.0.0.1:${port}`;
    const sandbox = createApp({ proxy: target });

    const reply = await post(sandbox.app, viewProfile());
    expect(reply.status).toBe(502);
    expect(reply.headers.get("content-type")).toMatch(/^application\/fhir\+json/);
    expect(reply.body.resourceType).toBe("OperationOutcome");
    expect(reply.body.issue[0]).toMatchObject({ code: "transient" });
    expect(reply.body.issue[0].diagnostics).toContain(`${target}${STANDARD}`);
    expect(reply.body.issue[0].diagnostics).toContain("ECONNREFUSED");
    const [call] = await listCalls(sandbox.app);
    expect(call).toMatchObject({ upstream: `${target}${STANDARD}`, response: { status: 502 } });
  });

  it("forwards end-to-end headers (Authorization too) but not hop-by-hop ones, and keeps credentials out of the journal", async () => {
    const upstream = fakeUpstream(201);
    const sandbox = createApp({ proxy: UPSTREAM, basePath: "/sandbox" }, { fetch: upstream.fetch });
    const body = JSON.stringify({ content: JSON.stringify(viewProfile()) });
    const reply = await post(sandbox.app, body, {
      path: `/sandbox${STANDARD}`,
      headers: {
        authorization: "Bearer client-secret-xyz",
        "x-correlation-id": "corr-1",
        connection: "keep-alive, x-hop-only",
        "keep-alive": "timeout=5",
        "x-hop-only": "1",
        te: "trailers",
        upgrade: "h2c",
        "proxy-authorization": "Basic cHJveHk6c2VjcmV0",
      },
    });
    // The upstream's answer, unchanged but for its own hop-by-hop headers.
    expect(reply.status).toBe(201);
    expect(reply.body).toEqual(UPSTREAM_BODY);
    expect(reply.headers.get("x-upstream")).toBe("yes");
    expect(reply.headers.get("keep-alive")).toBeNull();

    const [sent] = upstream.forwarded;
    // The path without the base path, under the upstream URL.
    expect(sent?.url).toBe(`${UPSTREAM}${STANDARD}`);
    expect(sent?.method).toBe("POST");
    expect(sent?.body).toBe(body);
    expect(Object.fromEntries(sent?.headers ?? [])).toEqual({
      authorization: "Bearer client-secret-xyz",
      "content-type": "application/json",
      "x-correlation-id": "corr-1",
    });

    const [call] = await listCalls(sandbox.app);
    expect(call.request.headers).toMatchObject({
      authorization: "[redacted]",
      "proxy-authorization": "[redacted]",
      "x-correlation-id": "corr-1",
    });
    expect(JSON.stringify(call)).not.toContain("client-secret-xyz");
    expect(call.response).toMatchObject({ status: 201, body: UPSTREAM_BODY });
  });
});
