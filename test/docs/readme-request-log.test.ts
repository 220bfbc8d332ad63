import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { ROOT } from "../cli/cli-process.js";
import { isShell, parseBlocks, runMarkdown, stopAllPages } from "./doc-blocks.js";

// The README's request log shows a session in words ("the rule of Scenarios saved while it runs, the first example
// sent, …"): this test runs that session as a page — with the README's own blocks where it names them — and checks
// that the sandbox printed every line the README shows, in order (times and durations aside). Its pharmacy is the
// shipped fixture's PH-DXB-0001, whose endpoint (port 9090) the runner maps to a free port nobody listens on.

const README = readFileSync(join(ROOT, "README.md"), "utf8");
/** Measured: 10–20 s on a loaded 2-core machine (CLI starts for example and trigger, three push attempts); ×3. */
const BUDGET_MS = 60_000;

function sectionOf(title: string): string {
  const start = README.indexOf(`## ${title}\n`);
  if (start < 0) throw new Error(`README has no section ${title}`);
  const end = README.indexOf("\n## ", start + 3);
  return README.slice(start, end < 0 ? undefined : end);
}

/** The README's shell block that contains `needle`. */
function shellBlock(needle: string): string {
  const found = parseBlocks(README, "README.md").filter((b) => isShell(b) && b.text.includes(needle));
  if (found.length !== 1) throw new Error(`README has ${found.length} shell blocks with ${needle}`);
  return (found[0] as { text: string }).text;
}

const sh = (text: string) => `\`\`\`sh\n${text}\n\`\`\`\n`;
const send = (headers = "") =>
  `curl -s -o /dev/null 'http://localhost:8080/uae-fhir/r4/$process-message' -H 'Content-Type: application/json'${headers} --data-binary @-`;

describe("README: the request log", () => {
  afterEach(stopAllPages);
  it(
    "is what the sandbox prints for the session it describes",
    async () => {
      const shown = /^```text\n(uae-fhir-sandbox [\s\S]*?)\n```$/m.exec(sectionOf("The request log"))?.[1];
      expect(shown, "the request log section shows no session").toBeDefined();
      // One server block: the sandbox started as the README's first line shows, then the session; a log block after it
      // is compared with everything that sandbox printed.
      const session = [
        "npx uae-fhir-sandbox",
        shellBlock("cat > scenarios/50-allergy-down.yaml"),
        shellBlock("cat > add-allergy.json"),
        `npx uae-fhir-sandbox example add-allergy --patient 784-1990-1234567-6 | ${send(" -H 'X-Sandbox-Scenario: allergy-down'")}`,
        "npx uae-fhir-sandbox example update-allergy --patient 784-1990-1234567-6 --bundle |",
        `  jq '.entry[1].resource.id as $id | walk(if type == "string" then gsub($id; "no-such-allergy") else . end)' |`,
        `  jq -Rs '{content: .}' | ${send()}`,
        `jq '{content: .}' add-allergy.json | ${send()}`,
        "npx uae-fhir-sandbox trigger order --pharmacy PH-DXB-0001 --url http://localhost:8080 > /dev/null",
      ].join("\n");
      const page = `<!-- doc-test: server -->\n${sh(session)}\n<!-- doc-test: log -->\n\`\`\`text\n${shown}\n\`\`\`\n`;
      await runMarkdown(page, "README.md (the request log)");
    },
    BUDGET_MS,
  );
});
