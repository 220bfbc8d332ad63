import { afterEach, describe, expect, it } from "vitest";
import { createApp } from "../../src/app.js";
import { registerPharmacy } from "../../src/conformance/kinds/receiver.js";
import type { SessionFacts } from "../../src/conformance/step-context.js";

/**
 * registerPharmacy: a receiver session's pharmacyUrl is checked as a Subscription endpoint is (the pharmacy guide:
 * http(s) only, --push-allow, internal addresses refused under --auth oauth2) and, when it passes, registered in the
 * session's workspace under the session's licence, where the order flow pushes to it.
 */

const apps: Array<ReturnType<typeof createApp>> = [];
afterEach(() => {
  for (const app of apps.splice(0)) app.close();
});

function workspace(options: Parameters<typeof createApp>[0] = {}) {
  const app = createApp({ scenarios: undefined, ...options });
  apps.push(app);
  return app.workspace;
}

const facts = (pharmacyUrl: string | null, pharmacyLicence: string | null = "PH-TEST-0001"): SessionFacts => ({
  id: "s1",
  role: "receiver",
  operations: [],
  pharmacyUrl,
  pharmacyLicence,
  timeScale: 1,
});

const open = { allow: [], guardAddresses: false };

describe("registerPharmacy", () => {
  it("registers the endpoint under the session's licence, as a subscription makes it pushable", () => {
    const ws = workspace();
    const atEnd: Array<() => void> = [];
    const ctx = {
      session: facts("http://127.0.0.1:9090/fhir-hook"),
      workspace: ws,
      onEnd: (f: () => void) => atEnd.push(f),
    };
    expect(registerPharmacy(ctx, open)).toBeNull();
    expect(ws.pharmacies.isActive("PH-TEST-0001")).toBe(true);
    expect(ws.pharmacies.get("PH-TEST-0001")).toMatchObject({
      endpoint: "http://127.0.0.1:9090/fhir-hook",
      source: "conformance",
    });
    // For the session only: at its end the workspace holds no pharmacy of it any more.
    for (const release of atEnd) release();
    expect(ws.pharmacies.get("PH-TEST-0001")).toBeUndefined();
  });

  it("does nothing without a pharmacyUrl: the pharmacy subscribes itself", () => {
    const ws = workspace();
    expect(registerPharmacy({ session: facts(null, null), workspace: ws }, open)).toBeNull();
    expect(ws.pharmacies.size).toBe(0);
  });

  it.each([
    [
      "ftp://127.0.0.1/fhir-hook",
      open,
      "value",
      "pharmacyUrl must be an http:// or https:// URL; other schemes are refused.",
    ],
    ["not a url", open, "value", 'pharmacyUrl "not a url" is not a valid URL.'],
    [
      "http://10.1.2.3:9090/fhir-hook",
      { allow: ["pharmacy.example.ae"], guardAddresses: false },
      "value",
      "The sandbox may not push to 10.1.2.3:9090: allowed hosts are pharmacy.example.ae (--push-allow).",
    ],
  ])("refuses %s as a subscription's endpoint is refused", (url, policy, code, diagnostics) => {
    const ws = workspace();
    expect(registerPharmacy({ session: facts(url), workspace: ws }, policy)).toEqual({
      severity: "error",
      code,
      diagnostics,
      expression: ["pharmacyUrl"],
    });
    expect(ws.pharmacies.size).toBe(0);
  });

  it("under --auth oauth2 refuses a loopback address --push-allow does not name, and takes one it names", () => {
    const ws = workspace();
    const url = "http://127.0.0.1:9090/fhir-hook";
    const refused = registerPharmacy({ session: facts(url), workspace: ws }, { allow: [], guardAddresses: true });
    expect(refused?.code).toBe("business-rule");
    expect(refused?.diagnostics).toMatch(
      /^The sandbox will not push to http:\/\/127\.0\.0\.1:9090\/fhir-hook: .*loopback/,
    );
    expect(refused?.diagnostics).toMatch(/--push-allow 127\.0\.0\.1/);
    const named = { allow: ["*", "127.0.0.1"], guardAddresses: true };
    expect(registerPharmacy({ session: facts(url), workspace: ws }, named)).toBeNull();
  });

  it("counts against --max-pharmacies like a new subscription", () => {
    const ws = workspace({ maxPharmacies: 1 });
    const url = "http://127.0.0.1:9090/fhir-hook";
    expect(registerPharmacy({ session: facts(url, "PH-A"), workspace: ws }, open)).toBeNull();
    // The same licence again takes no room; another is one too many.
    expect(registerPharmacy({ session: facts(url, "PH-A"), workspace: ws }, open)).toBeNull();
    const refused = registerPharmacy({ session: facts(url, "PH-B"), workspace: ws }, open);
    expect(refused?.diagnostics).toMatch(/^Pharmacy PH-B cannot be registered\. .*--max-pharmacies/);
    expect(ws.pharmacies.get("PH-B")).toBeUndefined();
  });
});
