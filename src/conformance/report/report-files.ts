import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { SessionReport } from "../session-report.js";
import { conformanceJunit } from "./junit.js";
import { testReport } from "./testreport.js";

/** The files `conformance run --out DIR` writes, by name. */
export const REPORT_FILES = { testreport: "testreport.json", junit: "junit.xml", report: "report.json" } as const;

/**
 * Writes a session's reports into a folder (made if missing): testreport.json (the R4 TestReport), junit.xml, and
 * report.json (the SessionReport as is). Resolves with the paths written.
 */
export async function writeReportFiles(
  folder: string,
  report: SessionReport,
  options: { adminBase?: string } = {},
): Promise<Record<keyof typeof REPORT_FILES, string>> {
  await mkdir(folder, { recursive: true });
  const paths = {
    testreport: join(folder, REPORT_FILES.testreport),
    junit: join(folder, REPORT_FILES.junit),
    report: join(folder, REPORT_FILES.report),
  };
  await Promise.all([
    writeFile(paths.testreport, `${JSON.stringify(testReport(report, options), null, 2)}\n`),
    writeFile(paths.junit, conformanceJunit(report, options)),
    writeFile(paths.report, `${JSON.stringify(report, null, 2)}\n`),
  ]);
  return paths;
}
