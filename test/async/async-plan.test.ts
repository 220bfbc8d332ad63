import { describe, expect, it } from "vitest";
import { SandboxEvents } from "../../src/events.js";
import { asyncPlan } from "../../src/http/async-message.js";
import { PushDispatcher } from "../../src/push/dispatcher.js";
import { ResponseDeliveries } from "../../src/push/response-delivery.js";
import { envelope, messageBundle } from "../support/messages.js";

// The SSRF surface: under --auth oauth2 a caller must not make the sandbox POST where it could not push.

const silent = { error: () => undefined, warn: () => undefined, info: () => undefined, debug: () => undefined };

function deliveries(allow: string[], guardAddresses: boolean) {
  const dispatcher = new PushDispatcher(
    { timeoutMs: 1000, attempts: 1, concurrency: 1, backoffMs: 1, allow, guardAddresses },
    {
      fetch: () => Promise.reject(new Error("no network in this test")),
      events: new SandboxEvents(),
      now: () => new Date(0),
      monotonic: () => 0,
      random: () => 0,
    },
  );
  return new ResponseDeliveries(dispatcher, silent as never);
}

const body = (source: string) => envelope(messageBundle("add-allergy", [], { source }));
const plan = (query: string, d: ResponseDeliveries, source = "https://clinic.example.ae/fhir") =>
  asyncPlan(new URLSearchParams(query), body(source), false, d);

describe("where an asynchronous answer may go", () => {
  // Internal addresses as the pushes' guard names them (loopback, private, link-local, unique-local, unspecified).
  const internal = [
    "http://127.0.0.1:9090/answers",
    "http://10.1.2.3/answers",
    "http://192.168.1.20/answers",
    "http://169.254.169.254/latest/meta-data",
    "http://[::1]:9090/answers",
    "http://[fd00::1]/answers",
    "http://0.0.0.0/answers",
  ];

  it.each(internal)("under --auth oauth2, refuses %s unless --push-allow names it", (url) => {
    const refused = plan(`async=true&response-url=${encodeURIComponent(url)}`, deliveries([], true));
    expect(refused.kind).toBe("refused");
    expect(JSON.stringify(refused)).toContain("--push-allow");
    const host = new URL(url).hostname.replace(/^\[|\]$/g, "");
    expect(plan(`async=true&response-url=${encodeURIComponent(url)}`, deliveries([host], true))).toEqual({
      kind: "async",
      target: url,
    });
  });

  it("under --auth oauth2, refuses an internal source.endpoint as well when no response-url is given", () => {
    const refused = plan("async=true", deliveries([], true), "http://127.0.0.1:9090/answers");
    expect(refused.kind).toBe("refused");
  });

  it("without --auth oauth2 and --push-allow, any http(s) URL is taken, as for pushes", () => {
    expect(plan("async=true&response-url=http://127.0.0.1:9090/a", deliveries([], false))).toEqual({
      kind: "async",
      target: "http://127.0.0.1:9090/a",
    });
  });

  it("--push-allow names hosts: others are refused whatever the mode", () => {
    const d = deliveries(["*.example.ae"], false);
    expect(plan("async=true&response-url=https://his.example.ae/answers", d).kind).toBe("async");
    expect(plan("async=true&response-url=https://elsewhere.test/answers", d).kind).toBe("refused");
  });

  it("no query at all is the synchronous plan", () => {
    expect(plan("", deliveries([], true))).toEqual({ kind: "sync" });
    expect(plan("_format=json", deliveries([], true))).toEqual({ kind: "sync" });
  });
});
