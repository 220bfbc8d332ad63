import type { AllergyIntolerance } from "fhir/r4.js";
import { afterEach, describe, expect, it, vi } from "vitest";
import { createSandbox } from "../../src/index.js";
import { example, messageBundle, post } from "../support/messages.js";

// The embedded API keeps its logger and prints no line per call, unless asked with `log`
// (docs/testing-with-the-sandbox.md, Options).

afterEach(() => {
  vi.restoreAllMocks();
});

const allergy = () => messageBundle("add-allergy", [example<AllergyIntolerance>("allergyintolerance-example.json")]);

/** What is written to stdout while `run` runs (and not passed on). */
async function stdoutOf<T>(run: () => Promise<T>): Promise<{ text: string; result: T }> {
  let text = "";
  vi.spyOn(process.stdout, "write").mockImplementation(((chunk: string | Uint8Array) => {
    text += String(chunk);
    return true;
  }) as typeof process.stdout.write);
  const result = await run();
  vi.restoreAllMocks();
  return { text, result };
}

describe("createSandbox and the request log", () => {
  it("by default: no line per call", async () => {
    const { text, result: status } = await stdoutOf(async () => {
      const sandbox = await createSandbox({ listen: false });
      const answer = await post(sandbox.app, allergy());
      await sandbox.close();
      return answer.status;
    });
    expect(status).toBe(200);
    expect(text).toBe("");
  });

  it("with log: a JSON line per call on stdout", async () => {
    const { text, result: reply } = await stdoutOf(async () => {
      const sandbox = await createSandbox({ listen: false, log: { format: "json" } });
      const answer = await post(sandbox.app, allergy());
      await sandbox.close();
      return answer;
    });
    expect(reply.status).toBe(200);
    const [line, ...others] = text.split("\n").filter(Boolean);
    expect(others).toEqual([]);
    expect(JSON.parse(line as string)).toMatchObject({
      event: "call",
      callId: reply.headers.get("x-sandbox-call-id"),
      operation: "add-allergy",
      status: 200,
      responseCode: "ok",
    });
  });
});

describe("createSandbox's log takes --log-time's values", () => {
  it("time: iso gives the pretty lines the date and the offset", async () => {
    const { text } = await stdoutOf(async () => {
      const sandbox = await createSandbox({ listen: false, log: { format: "pretty", colours: false, time: "iso" } });
      await post(sandbox.app, allergy());
      await sandbox.close();
    });
    expect(text).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}[+-]\d\d:\d\d IN {2}add-allergy +200 ok /m);
  });
});
