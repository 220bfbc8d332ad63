import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { format } from "node:util";
import type { AllergyIntolerance, Bundle, Patient } from "fhir/r4.js";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { SandboxDeps } from "../../src/app.js";
import { createSandbox, type Sandbox, type SandboxInit } from "../../src/index.js";
import { envelope, example, focusOf, messageBundle, post, responseHeader, STANDARD } from "../support/messages.js";

// The package's in-process API (src/sandbox.ts) as a test suite uses it. Real sockets (127.0.0.1, port 0)
// where the URL matters; `listen: false` elsewhere.

const quiet: Partial<SandboxDeps> = { logger: { info: () => undefined, error: () => undefined } };
const LONG = 60_000; // a waitFor deadline far beyond the test timeout: reaching it would fail the test

const open: Sandbox[] = [];
const dirs: string[] = [];
afterEach(async () => {
  vi.useRealTimers();
  await Promise.all(open.splice(0).map((s) => s.close()));
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

async function sandbox(init: SandboxInit = {}): Promise<Sandbox> {
  const s = await createSandbox({ ...init, deps: { ...quiet, ...init.deps } });
  open.push(s);
  return s;
}

function folder(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), "create-sandbox-test-"));
  dirs.push(dir);
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  return dir;
}

const cashew = () => example<AllergyIntolerance>("allergyintolerance-example.json");
const fish = () => example<AllergyIntolerance>("allergyintolerance-fishallergy.json");
const patient = () => example<Patient>("patient-example.json");
const CASHEW = "Bundle.entry.resource.ofType(AllergyIntolerance).code.coding.where(code = '227493005').exists()";

/** POSTs a message over real HTTP; the parsed answer. */
async function send(url: string, bundle: Bundle, headers: Record<string, string> = {}) {
  const res = await fetch(`${url}${STANDARD}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: envelope(bundle),
  });
  return { status: res.status, headers: res.headers, body: (await res.json()) as Bundle };
}

describe("createSandbox() on a port", () => {
  it("listens on 127.0.0.1, on a free port by default, and its url works with fetch", async () => {
    const s = await sandbox();
    expect(s.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(Number(new URL(s.url).port)).toBeGreaterThan(0);

    const health = await fetch(`${s.url}/__admin/health`);
    expect(health.status).toBe(200);
    expect(await health.json()).toMatchObject({ status: "ok" });

    const request = messageBundle("add-allergy", [cashew()]);
    const reply = await send(s.url, request);
    expect(reply.status).toBe(200);
    expect(responseHeader(reply.body).response).toMatchObject({
      identifier: request.entry?.[0]?.resource?.id,
      code: "ok",
    });
    // The response names the listening URL as its source.
    expect(responseHeader(reply.body).source.endpoint).toBe(`${s.url}${STANDARD}`);
  });

  it("calls(filter) returns the recorded calls, oldest first, as GET /__admin/calls shows them", async () => {
    const s = await sandbox();
    await send(s.url, messageBundle("add-allergy", [cashew()], { id: "msg-allergy" }));
    await send(s.url, messageBundle("view-patient-profile", [patient()], { id: "msg-profile" }));

    expect(s.calls().map((c) => c.messageId)).toEqual(["msg-allergy", "msg-profile"]);
    const [allergy, ...rest] = s.calls({ operation: "add-allergy" });
    expect(rest).toEqual([]);
    expect(allergy).toMatchObject({
      direction: "inbound",
      operation: "add-allergy",
      messageId: "msg-allergy",
      request: { method: "POST", path: STANDARD, body: { content: expect.any(String) } },
      response: { status: 200, body: { resourceType: "Bundle", type: "message" } },
    });
    expect(s.calls({ limit: 1 }).map((c) => c.messageId)).toEqual(["msg-profile"]);
    expect(s.calls({ direction: "outbound" })).toEqual([]);

    const admin = (await (await fetch(`${s.url}/__admin/calls`)).json()) as { calls: unknown[] };
    expect(admin.calls).toEqual(s.calls());
  });

  it("close() frees the port, refuses later requests, and can be called again", async () => {
    const s = await createSandbox({ deps: quiet });
    const { port } = new URL(s.url);
    await s.close();
    await s.close();

    await expect(fetch(`${s.url}/__admin/health`)).rejects.toThrow();
    // The same port can be bound again at once.
    const other = createServer();
    await new Promise<void>((resolve, reject) => {
      other.once("error", reject);
      other.listen(Number(port), "127.0.0.1", resolve);
    });
    await new Promise<void>((resolve) => other.close(() => resolve()));
  });

  it("close() lets a call in flight finish and journals it before closing the journal file", async () => {
    const file = join(folder({}), "calls.ndjson");
    let started!: () => void;
    let release!: () => void;
    const inHandler = new Promise<void>((resolve) => {
      started = resolve;
    });
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const s = await createSandbox({
      journalFile: file,
      deps: {
        ...quiet,
        // A profile view that waits for the test: the call is in flight for as long as the test wants.
        handlers: {
          "view-patient-profile": async () => {
            started();
            await gate;
            return { kind: "ok", resources: [] };
          },
        },
      },
    });
    const answer = fetch(`${s.url}${STANDARD}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: envelope(messageBundle("view-patient-profile", [patient()])),
    });
    await inHandler;
    const closed = s.close();
    release();
    const res = await answer;
    expect(res.status).toBe(200);
    const id = res.headers.get("x-sandbox-call-id");
    await closed;
    const lines = readFileSync(file, "utf8").split("\n").filter(Boolean);
    expect(lines.map((l) => JSON.parse(l).id)).toEqual([id]);
  });

  it("rejects when the port is taken", async () => {
    const s = await sandbox();
    const port = Number(new URL(s.url).port);
    await expect(createSandbox({ port, deps: quiet })).rejects.toThrow(/EADDRINUSE/);
  });
});

describe("verify() and waitFor()", () => {
  it("verify() says ok with the matching call ids, or false with the near misses", async () => {
    const s = await sandbox({ listen: false });
    await post(s.app, messageBundle("add-allergy", [fish()], { id: "msg-fish" }));
    await post(s.app, messageBundle("view-patient-profile", [patient()]));
    const [fishCall] = s.calls({ messageId: "msg-fish" });

    const miss = s.verify({ operation: "add-allergy", where: CASHEW });
    expect(miss).toMatchObject({ ok: false, matched: 0, callIds: [] });
    // The add-allergy call fails one criterion (the FHIRPath), the profile view two: closest first.
    expect(miss.nearMisses[0]).toMatchObject({ callId: fishCall?.id, operation: "add-allergy" });
    expect(miss.nearMisses[0]?.reasons).toHaveLength(1);
    expect(miss.nearMisses[1]?.reasons).toHaveLength(2);

    await post(s.app, messageBundle("add-allergy", [cashew()], { id: "msg-cashew" }));
    const [cashewCall] = s.calls({ messageId: "msg-cashew" });
    const hit = s.verify({ operation: "add-allergy", where: CASHEW, count: 1 });
    expect(hit).toMatchObject({ ok: true, matched: 1, callIds: [cashewCall?.id], nearMisses: [] });
    expect(s.verify({ operation: "add-allergy", atLeast: 3 }).ok).toBe(false);
    expect(s.verify({ operation: "add-allergy", atMost: 2 }).ok).toBe(true);
  });

  it.each([
    { name: "a FHIRPath that does not parse", expectation: { where: "Bundle.entry.where(" }, error: /bad expectation/ },
    { name: "count with atLeast", expectation: { count: 1, atLeast: 1 }, error: /either count, or atLeast/ },
    { name: "an unknown key", expectation: { operaton: "add-allergy" }, error: /bad expectation/ },
    { name: "a negative count", expectation: { count: -1 }, error: /bad expectation/ },
  ])("verify() throws and waitFor() rejects on a malformed expectation: $name", async ({ expectation, error }) => {
    const s = await sandbox({ listen: false });
    const bad = expectation as Parameters<Sandbox["verify"]>[0];
    expect(() => s.verify(bad)).toThrow(error);
    await expect(s.waitFor(bad, LONG)).rejects.toThrow(error);
  });

  it("waitFor() resolves as soon as a matching call arrives, over HTTP", async () => {
    const s = await sandbox();
    let settled = false;
    const pending = s.waitFor({ operation: "add-allergy", where: CASHEW }, LONG).finally(() => {
      settled = true;
    });

    // A call that does not match leaves it waiting.
    await send(s.url, messageBundle("add-allergy", [fish()]));
    await Promise.resolve();
    expect(settled).toBe(false);

    await send(s.url, messageBundle("add-allergy", [cashew()], { id: "msg-cashew" }));
    const result = await pending;
    expect(result).toMatchObject({ ok: true, matched: 1, callIds: [s.calls({ messageId: "msg-cashew" })[0]?.id] });
  });

  it("waitFor() resolves at once when the expectation already holds", async () => {
    const s = await sandbox({ listen: false });
    await post(s.app, messageBundle("add-allergy", [cashew()]));
    expect(await s.waitFor({ operation: "add-allergy" }, LONG)).toMatchObject({ ok: true, matched: 1 });
  });

  it("waitFor() resolves with ok: false and the near misses at its timeout, not before", async () => {
    const s = await sandbox({ listen: false });
    await post(s.app, messageBundle("add-allergy", [fish()], { id: "msg-fish" }));
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });

    let settled = false;
    const pending = s.waitFor({ operation: "add-allergy", where: CASHEW }, 1000).finally(() => {
      settled = true;
    });
    await vi.advanceTimersByTimeAsync(999);
    expect(settled).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(settled).toBe(true);
    const result = await pending;
    expect(result).toMatchObject({ ok: false, matched: 0 });
    expect(result.nearMisses.map((m) => m.callId)).toEqual(s.calls({ messageId: "msg-fish" }).map((c) => c.id));
  });
});

describe("reset() and addRules()", () => {
  const LOCKED = `
rules:
  - name: locked-once
    when: { operation: add-allergy, headers: { X-Test: locked } }
    times: 1
    respond:
      status: 503
      headers: { Retry-After: "1" }
      outcome: { diagnostics: "Locked; retry in 1 second." }
`;

  it("addRules(yaml) answers with the rule, ahead of the built-in behaviour, and returns its ids", async () => {
    const s = await sandbox();
    const ids = s.addRules(LOCKED);
    expect(ids).toHaveLength(1);
    expect(ids[0]).toMatch(/^runtime-\d+#1$/);

    const first = await send(s.url, messageBundle("add-allergy", [cashew()]), { "x-test": "locked" });
    expect(first.status).toBe(503);
    expect(first.headers.get("retry-after")).toBe("1");
    expect(responseHeader(first.body).response?.code).toBe("transient-error");
    // times: 1 — the next one gets the built-in answer.
    const second = await send(s.url, messageBundle("add-allergy", [cashew()]), { "x-test": "locked" });
    expect(second.status).toBe(200);
    expect(s.calls().map((c) => [c.rule, c.response?.status])).toEqual([
      ["locked-once", 503],
      [null, 200],
    ]);
  });

  it("addRules(object) takes the same document as an object", async () => {
    const s = await sandbox({ listen: false });
    s.addRules({
      rules: [
        {
          name: "refuse-all-allergies",
          when: { operation: "add-allergy" },
          respond: { outcome: { code: "business-rule", diagnostics: "Allergies are read-only today." } },
        },
      ],
    });
    const reply = await post(s.app, messageBundle("add-allergy", [cashew()]));
    expect(reply.status).toBe(200);
    expect(responseHeader(reply.body).response?.code).toBe("fatal-error");
    expect(JSON.stringify(reply.body)).toContain("Allergies are read-only today.");
    expect(s.calls()[0]?.rule).toBe("refuse-all-allergies");
  });

  it("addRules() with an invalid document throws with line:column and adds nothing", async () => {
    const s = await sandbox({ listen: false });
    const invalid = "rules:\n  - name: oops\n    when: { operation: add-allergy }\n    respond: { status: 503 }\n";
    expect(() => s.addRules(invalid)).toThrow(/runtime-\d+:4:5: rules\.0\.respond: a response needs one of/);
    expect(() => s.addRules("rules: [\n")).toThrow(/runtime-\d+:\d+:\d+: /);
    expect(() => s.addRules({ rules: [{ respnd: {} }] })).toThrow(/unknown key "respnd"/);

    const reply = await post(s.app, messageBundle("add-allergy", [cashew()]));
    expect(reply.status).toBe(200);
    expect(s.calls()[0]?.rule).toBeNull();
  });

  it("reset() clears the journal, the patients' state and the rule counters; added rules stay", async () => {
    const s = await sandbox({ listen: false });
    s.addRules(LOCKED);
    const locked = { headers: { "x-test": "locked" } };
    const message = () => messageBundle("add-allergy", [cashew(), patient()], { focus: [0] });
    expect((await post(s.app, message(), locked)).status).toBe(503);
    expect((await post(s.app, message(), locked)).status).toBe(200);
    const patientPath = "/__admin/patients/example";
    expect((await s.app.request(patientPath)).status).toBe(200);

    s.reset();

    expect(s.calls()).toEqual([]);
    expect((await s.app.request(patientPath)).status).toBe(404);
    // The counter is back to zero: the times-1 rule answers once more.
    expect((await post(s.app, message(), locked)).status).toBe(503);
  });
});

describe("options and dependencies", () => {
  it("listen: false serves app.request and app.fetch without a port, and url is empty", async () => {
    const s = await sandbox({ listen: false });
    expect(s.url).toBe("");

    const viaRequest = await post(s.app, messageBundle("add-allergy", [cashew()], { id: "msg-request" }));
    expect(viaRequest.status).toBe(200);
    const viaFetch = await s.app.fetch(
      new Request(`http://sandbox.test${STANDARD}`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: envelope(messageBundle("add-allergy", [fish()], { id: "msg-fetch" })),
      }),
    );
    expect(viaFetch.status).toBe(200);
    const body = (await viaFetch.json()) as Bundle;
    expect(responseHeader(body).source.endpoint).toBe(`http://sandbox.test${STANDARD}`);
    expect(focusOf(body)[0]?.resourceType).toBe("AllergyIntolerance");
    expect(s.calls().map((c) => c.messageId)).toEqual(["msg-request", "msg-fetch"]);
  });

  it("scenarios: loads a folder's fixtures and rules", async () => {
    const dir = folder({
      "10-suite.yaml": `
name: suite scenarios
fixtures:
  patients:
    - patient:
        resourceType: Patient
        id: suite-amal
        identifier: [{ system: urn:ae:emirates-id, value: 784-1985-1000011-4 }]
rules:
  - name: suite-teapot
    when: { operation: view-patient-profile, headers: { X-Test: teapot } }
    respond: { status: 418, body: { teapot: true } }
`,
    });
    const s = await sandbox({ listen: false, scenarios: dir });
    expect((await s.app.request("/__admin/patients/suite-amal")).status).toBe(200);

    const reply = await post(s.app, messageBundle("view-patient-profile", [patient()]), {
      headers: { "x-test": "teapot" },
    });
    expect(reply).toMatchObject({ status: 418, body: { teapot: true } });
    expect(s.calls()[0]?.rule).toBe("suite-teapot");
  });

  it("an invalid scenarios folder makes createSandbox reject with file:line:column", async () => {
    const dir = folder({
      "bad.yaml": "rules:\n  - name: x\n    when: { operaton: add-allergy }\n    respond: { builtIn: true }\n",
    });
    await expect(createSandbox({ listen: false, scenarios: dir, deps: quiet })).rejects.toThrow(
      /bad\.yaml:3:\d+: .*unknown key "operaton"/,
    );
  });

  it("deps: a fixed clock and id generator give the same answer, byte for byte, on every run", async () => {
    const fixed = () => {
      let n = 0;
      const deps: Partial<SandboxDeps> = {
        now: () => new Date("2026-01-15T05:30:00.000Z"),
        newId: () => `00000000-0000-4000-8000-${String(++n).padStart(12, "0")}`,
      };
      return deps;
    };
    const request = envelope(messageBundle("add-allergy", [cashew(), patient()], { id: "msg-fixed", focus: [0] }));
    const answer = async () => {
      const s = await sandbox({ listen: false, deps: fixed() });
      const res = await s.app.request(STANDARD, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: request,
      });
      return { text: await res.text(), call: s.calls()[0] };
    };

    const first = await answer();
    const second = await answer();
    expect(second.text).toBe(first.text);

    const body = JSON.parse(first.text) as Bundle;
    const ids = /^00000000-0000-4000-8000-\d{12}$/;
    expect(body.id).toMatch(ids);
    expect(body.timestamp).toBe("2026-01-15T05:30:00.000Z");
    expect(responseHeader(body).id).toMatch(ids);
    const [stored] = focusOf(body);
    expect(stored?.id).toMatch(ids);
    expect(stored?.meta?.lastUpdated).toBe("2026-01-15T05:30:00.000Z");
    expect(first.call?.at).toBe("2026-01-15T05:30:00.000Z");
  });

  it("close() stops the sandbox's timers: scheduled pushes and pending waitFor calls", async () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    const dir = folder({ "push.yaml": "push:\n  - name: later\n    after: 3600s\n" });
    const s = await createSandbox({ listen: false, scenarios: dir, deps: quiet });
    const pending = s.waitFor({ operation: "add-allergy" }, LONG);
    expect(vi.getTimerCount()).toBe(2);

    await s.close();

    expect(vi.getTimerCount()).toBe(0);
    expect(await pending).toMatchObject({ ok: false, matched: 0 });
    // After close, waitFor answers at once rather than starting a timer.
    expect(await s.waitFor({ operation: "add-allergy" }, LONG)).toMatchObject({ ok: false });
    expect(vi.getTimerCount()).toBe(0);
  });
});

describe("createSandbox() with the default logger", () => {
  it("logs a refused reload as its problems alone, with no trailing ` undefined`", async () => {
    const dir = folder({ "rules.yaml": "rules: []\n" });
    const lines: string[] = [];
    const spy = vi.spyOn(console, "error").mockImplementation((...args: unknown[]) => {
      lines.push(format(...args));
    });
    vi.spyOn(console, "log").mockImplementation(() => undefined);
    try {
      const s = await createSandbox({ listen: false, scenarios: dir, watch: false });
      open.push(s);
      writeFileSync(join(dir, "rules.yaml"), "rules:\n  - when: { operation: add-allergy }\n");
      const reload = await s.app.request("/__admin/scenarios/reload", { method: "POST" });
      expect(reload.status).toBe(400);
    } finally {
      spy.mockRestore();
      vi.restoreAllMocks();
    }
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^scenarios not reloaded, the previous set keeps serving:\n.*rules\.yaml:2:/);
    expect(lines[0]).not.toMatch(/undefined/);
  });
});
