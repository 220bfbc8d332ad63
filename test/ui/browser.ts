import { existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import axe from "axe-core";
import { type BrowserContext, chromium, type Page } from "playwright-core";
import { expect } from "vitest";
import { ROOT } from "../cli/cli-process.js";

/**
 * Debian's Chromium, headless, driven by playwright-core: one browser per
 * test file (tests within a file run in order), a fresh profile each time.
 * `.ci/run` installs it when missing (apt-get install chromium).
 */
export const CHROMIUM = "/usr/bin/chromium";

/** Generous: a loaded 2-core machine runs the browser beside the sandbox and the rest of the suite. */
export const UI_TIMEOUT_MS = 20_000;
export const UI_TEST_TIMEOUT_MS = 120_000;

const ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

/** Where each page's screenshot is kept as a test artifact (git-ignored). */
export const SCREENSHOTS = join(ROOT, "test-results", "screenshots");

export interface Browser {
  context: BrowserContext;
  /** A new tab: its own sessionStorage, so each test signs in (or not) afresh. */
  page(viewport?: { width: number; height: number }): Promise<Page>;
  close(): Promise<void>;
}

export async function launchBrowser(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: apt-get install -y chromium (.ci/run does)`);
  const profile = mkdtempSync(join(tmpdir(), "uae-fhir-sandbox-chromium-"));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: ARGS,
    viewport: { width: 1280, height: 800 },
    timeout: UI_TIMEOUT_MS,
  });
  context.setDefaultTimeout(UI_TIMEOUT_MS);
  const problems: string[] = [];
  return {
    context,
    async page(viewport) {
      const page = await context.newPage();
      if (viewport) await page.setViewportSize(viewport);
      // A script error on any page fails the test that made it.
      page.on("pageerror", (error) => problems.push(`${page.url()}: ${error.message}`));
      return page;
    },
    async close() {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
      expect(problems, "errors thrown by the dashboard's script").toEqual([]);
    },
  };
}

/** Saves what a person sees in the window as test-results/screenshots/NAME.png (docs/images takes its copies). */
export async function screenshot(page: Page, name: string): Promise<void> {
  mkdirSync(SCREENSHOTS, { recursive: true });
  await page.screenshot({ path: join(SCREENSHOTS, `${name}.png`) });
}

interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: Array<{ target: unknown[]; failureSummary?: string }>;
}

/**
 * Runs axe-core (WCAG 2.x A and AA rules and best practices) on the page as
 * it is now; resolves with its serious and critical violations, described.
 * axe is evaluated through the browser's debugging protocol, which the
 * dashboard's Content-Security-Policy (no inline script) does not apply to.
 */
export async function seriousViolations(page: Page): Promise<string[]> {
  await page.evaluate(axe.source);
  const violations = (await page.evaluate(async () => {
    const { axe } = globalThis as unknown as { axe: { run(): Promise<{ violations: unknown[] }> } };
    return (await axe.run()).violations;
  })) as AxeViolation[];
  return violations
    .filter((v) => v.impact === "serious" || v.impact === "critical")
    .map(
      (v) =>
        `${v.impact} ${v.id}: ${v.help} — ${v.nodes
          .slice(0, 3)
          .map((n) => `${JSON.stringify(n.target)} ${n.failureSummary ?? ""}`)
          .join(" | ")}`,
    );
}
