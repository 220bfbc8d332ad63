import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Patient } from "fhir/r4.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApp, type SandboxApp } from "../../src/app.js";
import { type RunningServer, startServer } from "../../src/server/start-server.js";
import { envelope, example, messageBundle, STANDARD } from "../support/messages.js";

// X-Sandbox-Rule names the rule that answered. A header carries visible ASCII as it is; a name with anything else
// (Arabic, a line break, Latin-1, a space at an end) goes as an RFC 8187 ext-value: `UTF-8''` and the name's UTF-8
// percent-encoded. Before, such a name made every answer of its rule fail (500 served, a TypeError in-process).
// Expected values: Python's urllib.parse.quote of the UTF-8 bytes with RFC 8187's attr-char as safe, written out.

const CASES: Array<{ name: string; yaml: string; sent: string }> = [
  { name: "حساسية", yaml: '"حساسية"', sent: "UTF-8''%D8%AD%D8%B3%D8%A7%D8%B3%D9%8A%D8%A9" },
  { name: "line\nbreak", yaml: '"line\\nbreak"', sent: "UTF-8''line%0Abreak" },
  { name: "café", yaml: '"café"', sent: "UTF-8''caf%C3%A9" },
  { name: "é (x)", yaml: '"é (x)"', sent: "UTF-8''%C3%A9%20%28x%29" },
  { name: " padded ", yaml: '" padded "', sent: "UTF-8''%20padded%20" },
  { name: "UTF-8''x", yaml: "\"UTF-8''x\"", sent: "UTF-8''UTF-8%27%27x" },
  { name: "utf-8''%41", yaml: "\"utf-8''%41\"", sent: "UTF-8''utf-8%27%27%2541" },
  // A lone surrogate has no UTF-8: sent as U+FFFD (EF BF BD), the journal keeping the name as written.
  { name: "a\ud800", yaml: '"a\\ud800"', sent: "UTF-8''a%EF%BF%BD" },
  { name: "plain (ASCII) * name's", yaml: '"plain (ASCII) * name\'s"', sent: "plain (ASCII) * name's" },
];

/** A rule per case, chosen by X-Case; the last cases answer with a fault's body, which takes the other header path. */
const RULES = `rules:
${CASES.map(
  (c, i) => `  - name: ${c.yaml}
    when: { headers: { X-Case: "${i}" } }
    respond: { builtIn: true }
  - name: ${c.yaml.replace(/"$/, ' fault"')}
    when: { headers: { X-Case: "fault-${i}" } }
    respond: { fault: malformed-json }`,
).join("\n")}
`;

const QUIET = { info: () => undefined, error: () => undefined };
const message = (id: string) =>
  envelope(messageBundle("view-patient-profile", [example<Patient>("patient-example.json")], { id }));

let dir: string;
let sandbox: SandboxApp;
let server: RunningServer;
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "uae-rule-header-"));
  writeFileSync(join(dir, "rules.yaml"), RULES);
  sandbox = createApp({ scenarios: dir, watch: false }, { logger: QUIET });
  server = await startServer(sandbox, { port: 0, host: "127.0.0.1" });
});
afterAll(async () => {
  await server.close(500);
  sandbox.close();
  rmSync(dir, { recursive: true, force: true });
});

let sent = 0;
const send = (via: "in-process" | "served", xCase: string) => {
  const init = {
    method: "POST",
    headers: { "content-type": "application/json", "X-Case": xCase },
    body: message(`rule-header-${++sent}`),
  };
  return via === "served" ? fetch(`${server.url}${STANDARD}`, init) : sandbox.app.request(STANDARD, init);
};

/** The name back from a header value, as a client would read it. */
const decoded = (value: string) => (value.startsWith("UTF-8''") ? decodeURIComponent(value.slice(7)) : value);

describe("X-Sandbox-Rule for any rule name", () => {
  for (const via of ["in-process", "served"] as const) {
    it.each(CASES.map((c, i) => [JSON.stringify(c.name), i] as const))(
      `${via}: %s is answered, named in a header a client can read back`,
      async (_, i) => {
        const c = CASES[i] as (typeof CASES)[number];
        const answer = await send(via, String(i));
        expect(answer.status).toBe(200);
        expect(((await answer.json()) as { resourceType: string }).resourceType).toBe("Bundle");
        expect(answer.headers.get("x-sandbox-rule")).toBe(c.sent);
        expect(decoded(c.sent)).toBe(c.name.toWellFormed());
        const id = answer.headers.get("x-sandbox-call-id") as string;
        const call = sandbox.journal.list().find((record) => record.id === id);
        // The journal keeps the name as written, and the header as it went out.
        expect(call?.rule).toBe(c.name);
        expect(call?.response?.headers["x-sandbox-rule"]).toBe(c.sent);

        const fault = await send(via, `fault-${i}`);
        expect(fault.status).toBe(200);
        expect(await fault.text()).not.toBe("");
        expect(decoded(fault.headers.get("x-sandbox-rule") as string)).toBe(`${c.name} fault`.toWellFormed());
      },
    );
  }

  it("a served answer's raw header line is the encoded value, in ASCII", async () => {
    const answer = await send("served", "0");
    await answer.arrayBuffer();
    const raw = answer.headers.get("x-sandbox-rule") as string;
    expect(raw).toMatch(/^[!-~]+$/);
  });
});
