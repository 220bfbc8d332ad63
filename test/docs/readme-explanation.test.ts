import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { createApp } from "../../src/app.js";
import { admin } from "../admin/admin-client.js";
import { ROOT } from "../cli/cli-process.js";
import { STANDARD } from "../support/messages.js";

// The README's "When something doesn't match" shows real output: the same steps, in-process, give the same text.

const README = readFileSync(join(ROOT, "README.md"), "utf8");

function section(title: string): string {
  const start = README.indexOf(`## ${title}\n`);
  if (start < 0) throw new Error(`README has no section ${title}`);
  const end = README.indexOf("\n## ", start + 3);
  return README.slice(start, end < 0 ? undefined : end);
}

/** The fenced blocks of a text, by language. */
const blocks = (text: string, lang: string) =>
  [...text.matchAll(new RegExp(`\`\`\`${lang}\\n([\\s\\S]*?)\\n\`\`\``, "g"))].map((m) => m[1] as string);

describe("README: when something doesn't match", () => {
  it("shows the headers and the explanation the sandbox gives for the misspelt header", async () => {
    const scenarios = section("Scenarios");
    const rule = blocks(scenarios, "yaml")[0] as string;
    const bundle = /cat > add-allergy\.json <<'EOF'\n([\s\S]*?)\nEOF\n/.exec(README)?.[1] as string;
    const dir = mkdtempSync(join(tmpdir(), "readme-explain-"));
    try {
      cpSync(join(ROOT, "scenarios"), dir, { recursive: true });
      writeFileSync(join(dir, "50-allergy-down.yaml"), rule);
      const sandbox = createApp(
        { scenarios: dir, watch: false },
        { logger: { info: () => undefined, error: () => undefined } },
      );
      const res = await sandbox.app.request(STANDARD, {
        method: "POST",
        headers: { "content-type": "application/json", "x-sandbox-scenario": "allergy-dwn" },
        body: JSON.stringify({ content: `${bundle}\n` }),
      });
      const headers = [...res.headers].filter(([name]) => name.startsWith("x-sandbox")).map(([n, v]) => `${n}: ${v}`);
      const call = await admin(sandbox.app, "GET", `/calls/${res.headers.get("x-sandbox-call-id")}`);
      const { summary, rules } = call.body.explanation;
      // What the README's jq prints.
      const lines = [
        summary,
        ...rules.map(
          (r: { rule: string; outcome: string; failed?: string }) =>
            `${r.rule}: ${r.outcome}${r.failed ? ` — ${r.failed}` : ""}`,
        ),
      ];
      sandbox.close();

      const [shownHeaders, shownExplanation] = blocks(section("When something doesn't match"), "text");
      expect(headers.join("\n")).toBe(shownHeaders);
      expect(lines.join("\n")).toBe(shownExplanation);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
