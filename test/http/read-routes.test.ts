import type { Bundle } from "fhir/r4.js";
import { afterEach, describe, expect, it } from "vitest";
import { createApp, type SandboxApp, type SandboxDeps } from "../../src/app.js";
import { runCli } from "../../src/cli/main.js";
import type { SandboxOptions } from "../../src/config/options.js";

// The REST read in-process, where options change where fullUrls point or how answers are wrapped: each fullUrl of
// the answer is still read at its own path.

const quiet: Partial<SandboxDeps> = { logger: { info: () => undefined, error: () => undefined } };
const open: SandboxApp[] = [];
afterEach(() => {
  for (const sandbox of open.splice(0)) sandbox.close();
});

async function answered(operation: string, options: Partial<SandboxOptions>, path: string) {
  const out: string[] = [];
  await runCli(["example", operation, "--patient", "784-1990-1234567-6"], {
    out: (l) => out.push(l),
    err: () => undefined,
    env: {},
  });
  const sandbox = createApp({ watch: false, ...options }, quiet);
  open.push(sandbox);
  const res = await sandbox.app.request(path, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: out.join("\n"),
  });
  expect(res.status).toBe(200);
  const text = await res.text();
  const parsed = JSON.parse(text) as { content?: string };
  const bundle = (typeof parsed.content === "string" ? JSON.parse(parsed.content) : parsed) as Bundle;
  return { sandbox, bundle };
}

describe("REST read under other options", () => {
  it.each([
    ["--base-path /sandbox", "add-allergy", { basePath: "/sandbox" }, "/sandbox/uae-fhir/r4/$process-message"],
    // The view's Composition is read from the journal, which keeps the answer as sent: in its envelope.
    ["--response-envelope", "view-patient-profile", { responseEnvelope: true }, "/uae-fhir/r4/$process-message"],
  ] as const)("%s: every fullUrl of a %s answer is read at its path", async (_, operation, options, path) => {
    const { sandbox, bundle } = await answered(operation, options, path);
    const urls = (bundle.entry ?? []).filter((e) => e.fullUrl?.startsWith("http"));
    expect(urls.length).toBeGreaterThanOrEqual(2);
    for (const { fullUrl, resource } of urls) {
      const res = await sandbox.app.request(new URL(fullUrl as string).pathname);
      expect(res.status, fullUrl).toBe(200);
      const read = (await res.json()) as { resourceType: string; id: string };
      expect([read.resourceType, read.id]).toEqual([resource?.resourceType, resource?.id]);
    }
  });

  it("the conformance reads are served as before, and a write to a read path is the 404 it was", async () => {
    const sandbox = createApp({ watch: false }, quiet);
    open.push(sandbox);
    const definition = await sandbox.app.request("/uae-fhir/r4/MessageDefinition/add-allergy");
    expect(definition.status).toBe(200);
    expect(((await definition.json()) as { resourceType: string }).resourceType).toBe("MessageDefinition");
    const post = await sandbox.app.request("/uae-fhir/r4/Patient/x", { method: "POST", body: "{}" });
    expect(post.status).toBe(404);
    expect(await post.text()).toContain("Nothing is served at POST /uae-fhir/r4/Patient/x");
  });
});
