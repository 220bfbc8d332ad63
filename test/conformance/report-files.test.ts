import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parse, type TestSuites } from "junit2json";
import { afterAll, describe, expect, it } from "vitest";
import { writeReportFiles } from "../../src/conformance/report/report-files.js";
import { emittedProblems } from "../support/validator.js";
import { failingReport } from "./fixtures/session-reports.js";

// conformance run --out DIR: testreport.json, junit.xml and report.json, in a folder made if missing.

describe("writeReportFiles", () => {
  const dirs: string[] = [];
  afterAll(() => {
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });

  it("writes the three files into a new folder: the TestReport, the JUnit XML, the session report as is", async () => {
    const dir = mkdtempSync(join(tmpdir(), "reports-"));
    dirs.push(dir);
    const out = join(dir, "nested", "out");
    const report = failingReport();

    const paths = await writeReportFiles(out, report);

    expect(readdirSync(out).sort()).toEqual(["junit.xml", "report.json", "testreport.json"]);
    expect(paths).toEqual({
      testreport: join(out, "testreport.json"),
      junit: join(out, "junit.xml"),
      report: join(out, "report.json"),
    });
    const testReport = JSON.parse(readFileSync(paths.testreport, "utf8"));
    expect(testReport).toMatchObject({ resourceType: "TestReport", status: "completed", result: "fail" });
    expect(emittedProblems(testReport)).toEqual([]);
    const junit = (await parse(readFileSync(paths.junit, "utf8"))) as TestSuites;
    expect(junit.testsuite?.[0]).toMatchObject({ tests: 7, failures: 1, skipped: 1 });
    expect(JSON.parse(readFileSync(paths.report, "utf8"))).toEqual(report);
  });
});
