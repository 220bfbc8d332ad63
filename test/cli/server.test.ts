import { readFileSync } from "node:fs";
import type { AllergyIntolerance, Bundle, Patient } from "fhir/r4.js";
import { afterEach, describe, expect, it } from "vitest";
import { SERVE_FLAGS } from "../../src/cli/flags.js";
import { envelope, example, messageBundle, responseHeader, STANDARD } from "../support/messages.js";
import { cli, http, killStray, ROOT, runToExit, serve, startCli } from "./cli-process.js";

// Real processes and sockets: each test starts its own `node dist/cli/main.js`.
afterEach(killStray);

const JSON_HEADERS = { "content-type": "application/json" };
const MiB = 1024 * 1024;

const postMessage = (url: string, body: string | ReadableStream<Uint8Array>, path = STANDARD) =>
  http(`${url}${path}`, {
    method: "POST",
    headers: JSON_HEADERS,
    body,
    ...(typeof body === "string" ? {} : { duplex: "half" }),
  } as RequestInit);

const addAllergy = () => messageBundle("add-allergy", [example<AllergyIntolerance>("allergyintolerance-example.json")]);

/** A request body streamed in 64 KiB chunks without a Content-Length (chunked transfer encoding). */
function streamed(total: number): ReadableStream<Uint8Array> {
  const chunk = new TextEncoder().encode("x".repeat(64 * 1024));
  let sent = 0;
  return new ReadableStream({
    pull(controller) {
      if (sent >= total) return controller.close();
      controller.enqueue(chunk);
      sent += chunk.byteLength;
    },
  });
}

describe("uae-fhir-sandbox serve, over real HTTP", { timeout: 30_000 }, () => {
  it("answers the health check", async () => {
    const { url } = await startCli();
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const health = await http(`${url}/__admin/health`);
    expect(health.status).toBe(200);
    expect(health.json).toMatchObject({ status: "ok" });
  });

  it("processes add-allergy sent in the envelope: 200 application/fhir+json response message", async () => {
    const { url } = await startCli();
    const request = addAllergy();
    const reply = await postMessage(url, envelope(request));
    expect(reply.status).toBe(200);
    expect(reply.headers.get("content-type")).toMatch(/^application\/fhir\+json/);
    expect(reply.json).toMatchObject({ resourceType: "Bundle", type: "message" });
    const header = responseHeader(reply.json as Bundle);
    expect(header.response).toMatchObject({ identifier: request.entry?.[0]?.resource?.id, code: "ok" });
    expect(header.source.endpoint).toBe(`${url}${STANDARD}`);
    const types = (reply.json as Bundle).entry?.map((e) => e.resource?.resourceType);
    expect(types).toContain("AllergyIntolerance");
  });

  it("processes view-patient-profile: 200 response message with the Patient and its summary", async () => {
    const { url } = await startCli();
    const patient = example<Patient>("patient-example.json");
    const reply = await postMessage(url, envelope(messageBundle("view-patient-profile", [patient])));
    expect(reply.status).toBe(200);
    expect(reply.headers.get("content-type")).toMatch(/^application\/fhir\+json/);
    expect(responseHeader(reply.json as Bundle).response?.code).toBe("ok");
    const types = (reply.json as Bundle).entry?.map((e) => e.resource?.resourceType);
    expect(types).toEqual(expect.arrayContaining(["Patient", "Composition"]));
  });

  it.each([
    ["with a Content-Length", () => JSON.stringify({ content: "x".repeat(5 * MiB) })],
    ["streamed without a Content-Length", () => streamed(5 * MiB)],
  ])("refuses a 5 MiB body %s with 413 that the client receives (no reset)", async (_, body) => {
    const { url } = await startCli();
    const reply = await postMessage(url, body());
    expect(reply.status).toBe(413);
    expect(reply.headers.get("content-type")).toMatch(/^application\/fhir\+json/);
    expect(reply.json).toMatchObject({ resourceType: "OperationOutcome", issue: [{ code: "too-long" }] });
    expect((await http(`${url}/__admin/health`)).status).toBe(200);
  });

  it.each([
    ["as the body", () => `${"[".repeat(10_000)}${"]".repeat(10_000)}`],
    ["inside content", () => JSON.stringify({ content: `${'{"a":'.repeat(10_000)}1${"}".repeat(10_000)}` })],
  ])("refuses 10,000-level nested JSON %s with 400 and keeps serving", async (_, body) => {
    const { url, child } = await startCli();
    const reply = await postMessage(url, body());
    expect(reply.status).toBe(400);
    expect(reply.json).toMatchObject({ resourceType: "OperationOutcome" });
    expect(reply.json.issue[0].diagnostics).toMatch(/nesting deeper than/);
    expect((await http(`${url}/__admin/health`)).status).toBe(200);
    expect((await postMessage(url, envelope(addAllergy()))).status).toBe(200);
    expect(child.process.exitCode).toBeNull();
  });
});

describe("stopping", { timeout: 30_000 }, () => {
  it.each(["SIGTERM", "SIGINT"] as const)(
    "exits 0 promptly on %s, after printing its shutdown line",
    async (signal) => {
      const { url, child } = await startCli(["--log-format", "pretty"]);
      // An idle keep-alive connection must not hold the shutdown until the grace period ends.
      expect((await http(`${url}/__admin/health`)).status).toBe(200);
      child.process.kill(signal);
      // The grace period for calls in flight is 5 s; with none in flight the exit must come well before it.
      const exit = await child.waitForExit(4_000);
      expect(exit).toEqual({ code: 0, signal: null });
      expect(child.stdout).toContain(`received ${signal}, shutting down`);
      expect(child.stdout.trimEnd().endsWith("stopped")).toBe(true);
      expect(child.stderr).toBe("");
    },
  );
});

describe("configuration from environment variables and flags", { timeout: 30_000 }, () => {
  it("reads PORT, HOST, BASE_PATH, BUSINESS_ERRORS, ADMIN_TOKEN, RESPONSE_ENVELOPE and MAX_BODY", async () => {
    const { url } = await serve(
      cli(["serve"], {
        PORT: "0",
        HOST: "127.0.0.1",
        BASE_PATH: "/sandbox",
        BUSINESS_ERRORS: "http",
        ADMIN_TOKEN: "t",
        RESPONSE_ENVELOPE: "true",
        MAX_BODY: "64kb",
      }),
    );
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);

    // ADMIN_TOKEN: admin calls need the token, the health check does not.
    expect((await http(`${url}/__admin/calls`)).status).toBe(401);
    expect((await http(`${url}/__admin/calls`, { headers: { authorization: "Bearer wrong" } })).status).toBe(401);
    expect((await http(`${url}/__admin/calls`, { headers: { authorization: "Bearer t" } })).status).toBe(200);
    expect((await http(`${url}/__admin/health`)).status).toBe(200);

    // BASE_PATH: messages under /sandbox, not at the root.
    expect((await postMessage(url, envelope(addAllergy()))).status).toBe(404);
    const reply = await postMessage(url, envelope(addAllergy()), `/sandbox${STANDARD}`);
    expect(reply.status).toBe(200);

    // RESPONSE_ENVELOPE: the response message comes back as {"content": "<bundle string>"}.
    expect(typeof reply.json.content).toBe("string");
    expect(JSON.parse(reply.json.content)).toMatchObject({ resourceType: "Bundle", type: "message" });

    // MAX_BODY: 64 KiB.
    const over = JSON.stringify({ content: "x".repeat(65 * 1024) });
    expect((await postMessage(url, over, `/sandbox${STANDARD}`)).status).toBe(413);
  });

  it("a flag wins over its environment variable", async () => {
    const { url } = await serve(
      cli(["serve", "--host", "127.0.0.1", "--port", "0", "--base-path", "/from-flag"], {
        PORT: "1",
        BASE_PATH: "/from-env",
      }),
    );
    expect(new URL(url).port).not.toBe("1");
    expect((await postMessage(url, envelope(addAllergy()), `/from-flag${STANDARD}`)).status).toBe(200);
    expect((await postMessage(url, envelope(addAllergy()), `/from-env${STANDARD}`)).status).toBe(404);
  });

  it.each([
    [["--port", "abc"], {}, /--port "abc"/],
    [["--port", "70000"], {}, /--port "70000"/],
    [[], { PORT: "eighty" }, /PORT "eighty"/],
    [[], { BUSINESS_ERRORS: "nope" }, /BUSINESS_ERRORS "nope".*message, http/],
    [["--business-errors", "nope"], {}, /--business-errors "nope"/],
    [["--max-body", "lots"], {}, /--max-body "lots"/],
    [[], { JOURNAL_LIMIT: "0" }, /JOURNAL_LIMIT "0"/],
    [[], { LENIENT_ENVELOPE: "maybe" }, /LENIENT_ENVELOPE "maybe"/],
    [["--no-such-flag"], {}, /no-such-flag/],
    [["frobnicate"], {}, /serve takes no arguments, only options: frobnicate/],
  ] as const)("exits 2 on a bad value: %j %j", async (args, env, message) => {
    const run = await runToExit(["serve", "--host", "127.0.0.1", ...args], env);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(message);
    expect(run.stderr).toContain("--help");
    expect(run.stdout).not.toMatch(/listening on/);
  });
});

describe("--help and --version", { timeout: 30_000 }, () => {
  it("--help exits 0 and lists every serve flag with its environment variable", async () => {
    const run = await runToExit(["--help"]);
    expect(run.code).toBe(0);
    const lines = run.stdout.split("\n");
    for (const f of SERVE_FLAGS) {
      const line = lines.find((l) => new RegExp(`^\\s*(-\\w, )?--${f.name}\\b`).test(l));
      expect(line, `--help has no line for --${f.name}`).toBeDefined();
      expect(line).toContain(`Env: ${f.env}`);
      if (f.default) expect(line).toContain(`(default: ${f.default})`);
    }
    const listed = lines.flatMap((l) => /^\s*(?:-\w, )?--([a-z-]+)/.exec(l)?.[1] ?? []);
    expect(listed).toEqual(SERVE_FLAGS.map((f) => f.name));
  });

  it("--version prints the package version and exits 0", async () => {
    const { version } = JSON.parse(readFileSync(`${ROOT}package.json`, "utf8")) as { version: string };
    const run = await runToExit(["--version"]);
    expect(run.code).toBe(0);
    expect(run.stdout.trim()).toBe(version);
  });
});
