import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { ROOT } from "./cli-process.js";

/**
 * docs/benchmarks.md reads its scenario-matching figures to the reader in
 * prose beside the tables of the run: the prose must say what the tables say.
 */
const DOC = readFileSync(`${ROOT}docs/benchmarks.md`, "utf8");

/** The number in the first capture of `pattern` (thousands separators dropped). */
function numberAt(pattern: RegExp): number {
  const m = pattern.exec(DOC);
  if (!m?.[1]) throw new Error(`docs/benchmarks.md has no ${pattern}`);
  return Number(m[1].replaceAll(",", ""));
}

/** A cell of the table row that starts with `label` (0 = the first cell after the label). */
function cell(label: string, index: number): number {
  const row = DOC.split("\n").find((line) => line.startsWith(`| ${label} |`));
  if (!row) throw new Error(`docs/benchmarks.md has no table row "${label}"`);
  const cells = row
    .split("|")
    .slice(2, -1)
    .map((c) => c.trim().replaceAll(",", ""));
  return Number(cells[index]);
}

describe("docs/benchmarks.md: the scenario-matching prose agrees with its tables", () => {
  it("matching time of a message against its own operation's rules", () => {
    const rulesTried = cell("view-patient-profile, 10,000 rules loaded (none matching)", 0);
    const micros = cell("view-patient-profile, 10,000 rules loaded (none matching)", 1);
    expect(numberAt(/here ([\d,]+) of them/)).toBe(rulesTried);
    expect(numberAt(/a quarter with FHIRPath: ([\d.]+) ms a message/)).toBeCloseTo(micros / 1000, 1);
  });

  it("throughput ratios: 10,000 rules / 1 rule, the control, the sandbox / bare Hono", () => {
    expect(numberAt(/10,000 rules \/ 1 rule is ([\d.]+) in throughput/)).toBe(
      cell("sandbox: 10,000 rules / 1 rule", 0),
    );
    expect(numberAt(/like the control\s+\(([\d.]+)\)/)).toBe(
      cell("sandbox: 1 rule + heap of 10,000 rules / 1 rule (control)", 0),
    );
    expect(numberAt(/bare Hono's rate\*\* \(([\d.]+);/)).toBe(cell("sandbox (1 rule) / bare Hono", 0));
    expect(numberAt(/bare Hono's rate\*\* \([\d.]+; p50 ([\d.]+)× higher/)).toBe(
      cell("sandbox (1 rule) / bare Hono", 1),
    );
  });

  it("loading time and memory of 10,000 rules", () => {
    const loadMs = numberAt(
      /createApp with its scenarios folder: [\d,]+ ms with 1 rule, ([\d,]+) ms with 10,000 rules/,
    );
    expect(numberAt(/and ([\d.]+) s of loading/)).toBeCloseTo(loadMs / 1000, 1);
    expect(numberAt(/memory — ([\d.]+) MiB retained/)).toBe(cell("sandbox, 10,000 rules", 1));
  });
});
