import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { parse, stringify } from "yaml";
import { runCli } from "../../src/cli/main.js";
import { compareAnswers } from "../../src/record/compare.js";
import { createSandbox, type Sandbox } from "../../src/sandbox.js";
import { http, killStray, startCli } from "../cli/cli-process.js";
import { responseHeader } from "../support/messages.js";
import { type Exchange, runSession } from "./session.js";

// Real servers: B (the "real service"), A (the CLI recording through --proxy B), C (serving only the export).
const opened: Sandbox[] = [];
const dirs: string[] = [];
afterEach(async () => {
  await killStray();
  await Promise.all(opened.splice(0).map((s) => s.close()));
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

async function sandbox(init: Parameters<typeof createSandbox>[0] = {}): Promise<Sandbox> {
  const s = await createSandbox({ host: "127.0.0.1", port: 0, ...init });
  opened.push(s);
  return s;
}

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "record-replay-"));
  dirs.push(dir);
  return dir;
}

/** Runs the CLI in-process, collecting its output. */
async function run(args: string[]) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runCli(args, { out: (l) => out.push(l), err: (l) => err.push(l), env: {} });
  return { code, stdout: out.join("\n"), stderr: err.join("\n") };
}

// biome-ignore lint/suspicious/noExplicitAny: tests read arbitrary call JSON
type Call = any;

/** Records a client session through A = `serve --proxy B --journal-file`, then stops A. */
async function record() {
  const dir = tempDir();
  const journal = join(dir, "calls.ndjson");
  const empty = join(dir, "no-scenarios");
  mkdirSync(empty);
  const upstream = await sandbox();
  const { url: recorder } = await startCli([
    "--proxy",
    upstream.url,
    "--journal-file",
    journal,
    "--scenarios",
    empty,
    "--no-watch",
  ]);
  const session = await runSession(recorder, "https://clinic.example.ae/fhir");
  const calls: Call[] = (await http(`${recorder}/__admin/calls?direction=inbound`)).json.calls;
  const scenarioExport = await http(`${recorder}/__admin/calls/export?format=scenario`);
  return { dir, journal, upstream, recorder, session, calls, scenarioExport };
}

/** The recorded answer as it would correlate with a new request: its message id and source. */
function correlatedWith(recorded: Exchange, request: Exchange): Exchange {
  if (recorded.body.resourceType !== "Bundle") return recorded;
  const body = structuredClone(recorded.body);
  const header = body.entry[0].resource;
  header.response.identifier = request.messageId;
  header.destination = [{ endpoint: request.source }];
  return { ...recorded, body };
}

describe("record through --proxy, export, replay", { timeout: 60_000 }, () => {
  it("a session recorded through a proxy, exported and served again gives the client the same answers", async () => {
    const { dir, journal, upstream, recorder, session, calls, scenarioExport } = await record();

    // A answered exactly what B answered, and recorded it with the upstream it came from.
    const upstreamCalls = upstream.calls({ direction: "inbound" });
    expect(session).toHaveLength(8);
    expect(upstreamCalls).toHaveLength(session.length);
    expect(calls).toHaveLength(session.length);
    session.forEach((exchange, i) => {
      const real = upstreamCalls[i] as Call;
      expect(exchange.status, exchange.step).toBe(real.response.status);
      expect(exchange.body, exchange.step).toEqual(real.response.body);
      expect(calls[i].upstream, exchange.step).toBe(`${upstream.url}/uae-fhir/r4/$process-message`);
      expect(calls[i].response.status).toBe(exchange.status);
      expect(calls[i].response.body).toEqual(exchange.body);
      expect(calls[i].request.headers.authorization).toBe("[redacted]");
    });
    expect(session.map((e) => e.status)).toEqual([200, 200, 200, 200, 200, 200, 200, 400]);
    expect(responseHeader(session[6]?.body).response?.code).toBe("fatal-error");

    // The journal file holds the same calls.
    const lines = readFileSync(journal, "utf8")
      .trimEnd()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(lines.map((l) => l.id)).toEqual(calls.map((c) => c.id));
    expect(lines.every((l) => l.upstream === `${upstream.url}/uae-fhir/r4/$process-message`)).toBe(true);

    // Export the file; the sandbox validates the result; the admin export of A's memory has the same rules.
    const scenarios = join(dir, "scenarios");
    const exported = await run(["export", "--from", journal, "--to", join(scenarios, "recorded.yaml")]);
    expect(exported.code, exported.stderr).toBe(0);
    const text = readFileSync(join(scenarios, "recorded.yaml"), "utf8");
    expect(text).toMatch(/^# Exported by uae-fhir-sandbox \S+ on \d{4}-\d\d-\d\dT/);
    expect(text).toContain(`# from ${journal}`);
    expect(text).toContain("no operation"); // the unknown event is listed as not exported
    expect((await run(["validate", scenarios])).code).toBe(0);
    expect(scenarioExport.status).toBe(200);
    expect(scenarioExport.headers.get("content-type")).toMatch(/^application\/yaml/);
    expect(scenarioExport.text).toContain(`the in-memory journal of ${recorder}`);
    expect(parse(scenarioExport.text).rules).toEqual(parse(text).rules);

    const rules = parse(text).rules as Array<Record<string, Call>>;
    const profile = rules.find((r) => r.when.operation === "view-patient-profile");
    expect(profile?.when).toEqual({
      operation: "view-patient-profile",
      patient: "urn:ae:emirates-id|784-1979-7000001-0",
    });
    expect(profile?.sequence).toHaveLength(2);
    const addAllergy = rules.find((r) => r.when.operation === "add-allergy");
    expect(addAllergy?.when.fhirpath).toBe(
      "Bundle.entry.resource.ofType(AllergyIntolerance).where(id = 'client-allergy-cashew').exists()",
    );
    expect(addAllergy?.respond.body.id).toBe("{{ uuid() }}");
    expect(addAllergy?.respond.body.entry[0].resource.response.identifier).toBe("{{ request.messageId }}");
    // The task's id is a fresh UUID per message: not matched on.
    expect(rules.find((r) => r.when.operation === "add-task")?.when.fhirpath).toBeUndefined();

    // C serves only the export. The client runs its session again, with new message ids and a new source.
    const replayed = await sandbox({ scenarios });
    const again = await runSession(replayed.url, "https://clinic-2.example.ae/fhir");
    expect(again).toHaveLength(session.length);
    again.forEach((now: Exchange, i) => {
      const then = session[i] as Exchange;
      // The same answer as recorded, but correlated with the new request (checked below).
      const comparison = compareAnswers(correlatedWith(then, now), now);
      expect(comparison.differences, now.step).toEqual([]);
      expect(now.messageId).not.toBe(then.messageId);
      if (now.body.resourceType === "Bundle") {
        // The templates made the answer correct for the new request.
        const header = responseHeader(now.body);
        expect(header.response?.identifier, now.step).toBe(now.messageId);
        expect(header.destination?.[0]?.endpoint, now.step).toBe("https://clinic-2.example.ae/fhir");
        expect(header.id).not.toBe(responseHeader(then.body).id);
        expect(now.body.id).not.toBe(then.body.id);
        expect(Date.parse(now.body.timestamp)).toBeGreaterThanOrEqual(Date.parse(then.body.timestamp));
      }
    });
    // Every routable message was answered by an exported rule, none by the built-in behaviour.
    const answeredBy = replayed.calls({ direction: "inbound" }).map((c) => c.rule);
    expect(answeredBy.slice(0, 7).every((r) => typeof r === "string" && r.startsWith("recorded "))).toBe(true);
    expect(answeredBy[7]).toBeNull();

    // `replay` re-sends the recorded calls to C (rule counters reset first) and finds nothing different.
    expect((await http(`${replayed.url}/__admin/reset`, { method: "POST" })).status).toBe(200);
    const report = join(dir, "replay.xml");
    const result = await run(["replay", journal, "--target", replayed.url, "--junit", report]);
    expect(result.code, result.stdout).toBe(0);
    expect(result.stdout.match(/ same$/gm)).toHaveLength(session.length);
    expect(result.stdout).toContain(`${session.length} calls replayed: ${session.length} same, 0 different`);
    const xml = readFileSync(report, "utf8");
    expect(xml.match(/<testcase /g)).toHaveLength(session.length);
    expect(xml).toContain('failures="0"');
    expect(xml).not.toContain("<failure");
  });

  it("replay reports a real difference with its FHIRPath, in the report and the JUnit XML, and exits 1", async () => {
    const { dir, journal } = await record();
    const exported = await run(["export", "--from", journal]);
    expect(exported.code, exported.stderr).toBe(0);
    // A target whose add-allergy rule answers another allergen code.
    const scenario = parse(exported.stdout);
    const rule = scenario.rules.find((r: Call) => r.when.operation === "add-allergy");
    expect(rule.respond.body.entry[1].resource.code.coding[0].code).toBe("227493005");
    rule.respond.body.entry[1].resource.code.coding[0].code = "91935009";
    const changed = join(dir, "changed");
    mkdirSync(changed);
    writeFileSync(join(changed, "recorded.yaml"), stringify(scenario));
    const target = await sandbox({ scenarios: changed });

    const report = join(dir, "reports", "replay.xml");
    const result = await run(["replay", journal, "--target", target.url, "--junit", report]);
    expect(result.code, result.stdout).toBe(1);
    expect(result.stdout).toMatch(/#1 {2}add-allergy +200 → 200 {2}1 difference/);
    expect(result.stdout).toContain('Bundle.entry[1].resource.code.coding[0].code: "227493005" → "91935009"');
    expect(result.stdout).toMatch(/#2 {2}view-patient-profile +200 → 200 {2}same/);
    expect(result.stdout).toContain("8 calls replayed: 7 same, 1 different");
    const xml = readFileSync(report, "utf8");
    expect(xml).toContain('tests="8" failures="1"');
    expect(xml.match(/<failure /g)).toHaveLength(1);
    expect(xml).toMatch(
      /<testcase classname="replay\.add-allergy" name="#1 add-allergy[^"]*"[^>]*>\s*<failure message="1 difference/,
    );
    expect(xml).toContain("Bundle.entry[1].resource.code.coding[0].code: &quot;227493005&quot; → &quot;91935009&quot;");
  });
});
