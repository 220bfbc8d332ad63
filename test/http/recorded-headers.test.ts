import { connect } from "node:net";
import type { AllergyIntolerance } from "fhir/r4.js";
import { afterEach, describe, expect, it } from "vitest";
import { createSandbox, type Sandbox } from "../../src/sandbox.js";
import { envelope, example, messageBundle } from "../support/messages.js";
import { within } from "../support/within.js";

/**
 * The headers an answer carries and the journal keeps, written from CONTRACT §5 (every answer names its journal
 * call in X-Sandbox-Call-Id, and the rule that answered in X-Sandbox-Rule) and from how HTTP treats header
 * fields (RFC 9110 §5: names case-insensitive, a field sent twice is one list joined with ", "). The journal shows header names lower-cased, in name order. Checked over a real
 * socket (the Node adapter) and in-process (web Request/Response), which must record the same.
 */

const RULES = {
  name: "headers",
  rules: [
    {
      name: "teapot-with-headers",
      when: { operation: "add-allergy", headers: { "X-Case": "teapot" } },
      respond: {
        status: 418,
        headers: { "X-Custom": "  padded value  ", "Retry-After": "7" },
        outcome: { diagnostics: "short and stout" },
      },
    },
  ],
};

/** What the client sends besides the body (raw lines, so that repeats and case are exactly as written). */
const REQUEST_LINES = [
  "Host: sandbox.test",
  "Content-Type: application/json",
  "X-Case: teapot",
  "X-Dup: one",
  "x-DUP: two",
  "X-Padded:    spaced out   ",
];

/** A valid add-allergy message. */
const BODY = envelope(
  messageBundle("add-allergy", [example<AllergyIntolerance>("allergyintolerance-example.json")], { id: "msg-hdr" }),
);

/** The journal's request headers for those lines, by hand: lower-cased, repeats joined, sorted by name. */
const RECORDED_REQUEST = {
  connection: "keep-alive",
  "content-length": String(Buffer.byteLength(BODY)),
  "content-type": "application/json",
  host: "sandbox.test",
  "x-case": "teapot",
  "x-dup": "one, two",
  "x-padded": "spaced out",
};

/** The journal's answer headers, by hand: the rule's (names lower-cased, values trimmed) and CONTRACT §5's, in name order. */
const recordedAnswer = (callId: string | undefined) => ({
  "content-type": "application/fhir+json; charset=utf-8",
  "retry-after": "7",
  "x-custom": "padded value",
  "x-sandbox-call-id": callId,
  "x-sandbox-rule": "teapot-with-headers",
});

/** Sends one request as raw bytes and returns the answer's status line and raw header lines. */
function rawPost(
  url: string,
  path: string,
  body: string,
  requestLines: readonly string[] = REQUEST_LINES,
): Promise<{ status: string; headers: string[] }> {
  const { hostname, port } = new URL(url);
  return within(
    new Promise((resolve, reject) => {
      const socket = connect(Number(port), hostname);
      let got = "";
      socket.setEncoding("latin1");
      socket.on("data", (chunk) => {
        got += chunk;
        const end = got.indexOf("\r\n\r\n");
        if (end < 0) return;
        const [status = "", ...headers] = got.slice(0, end).split("\r\n");
        socket.destroy();
        resolve({ status, headers });
      });
      socket.on("error", reject);
      const lines = [
        `POST ${path} HTTP/1.1`,
        ...requestLines,
        "Connection: keep-alive",
        `Content-Length: ${Buffer.byteLength(body)}`,
      ];
      socket.write(`${lines.join("\r\n")}\r\n\r\n${body}`);
    }),
    "the answer's headers",
  );
}

let sandbox: Sandbox | undefined;
afterEach(async () => {
  await sandbox?.close();
  sandbox = undefined;
});

describe("headers of an answer and of its journal record", () => {
  it("over a socket: X-Sandbox-Call-Id and X-Sandbox-Rule on the wire, rule headers merged by name; the journal keeps both sides", async () => {
    sandbox = await createSandbox({ scenarios: "/nonexistent-scenarios-folder" });
    sandbox.addRules(RULES);
    const answer = await rawPost(sandbox.url, "/uae-fhir/r4/$process-message", BODY);
    expect(answer.status).toBe("HTTP/1.1 418 I'm a Teapot");
    const [call] = sandbox.calls();
    const sent = answer.headers.filter((line) => !/^(date|connection|keep-alive|content-length):/i.test(line));
    // As a web Headers writes them: lower-case names in name order, a name given twice one line.
    // The edge's nosniff and CSP too (CONTRACT §15), which the journal does not keep.
    expect(sent).toEqual([
      "content-security-policy: default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
      "content-type: application/fhir+json; charset=utf-8",
      "retry-after: 7",
      "x-content-type-options: nosniff",
      "x-custom: padded value",
      `x-sandbox-call-id: ${call?.id}`,
      "x-sandbox-rule: teapot-with-headers",
    ]);
    expect(call?.request.headers).toEqual(RECORDED_REQUEST);
    expect(Object.keys(call?.request.headers ?? {})).toEqual(Object.keys(RECORDED_REQUEST));
    expect(call?.response?.headers).toEqual(recordedAnswer(call?.id));
    expect(Object.keys(call?.response?.headers ?? {})).toEqual(Object.keys(recordedAnswer(call?.id)));
  });

  it("in-process, the same request is recorded with the same headers", async () => {
    sandbox = await createSandbox({ scenarios: "/nonexistent-scenarios-folder", listen: false });
    sandbox.addRules(RULES);
    const headers = new Headers();
    for (const line of [...REQUEST_LINES, "Connection: keep-alive", `Content-Length: ${Buffer.byteLength(BODY)}`]) {
      const colon = line.indexOf(":");
      headers.append(line.slice(0, colon), line.slice(colon + 1));
    }
    const reply = await sandbox.app.request("http://sandbox.test/uae-fhir/r4/$process-message", {
      method: "POST",
      headers,
      body: BODY,
    });
    expect(reply.status).toBe(418);
    const [call] = sandbox.calls();
    expect(reply.headers.get("x-sandbox-call-id")).toBe(call?.id);
    expect(call?.request.headers).toEqual(RECORDED_REQUEST);
    expect(call?.response?.headers).toEqual(recordedAnswer(call?.id));
  });

  it("over a socket, the X-Sandbox-Workspace header in any case chooses the workspace (CONTRACT §13)", async () => {
    sandbox = await createSandbox({ scenarios: "/nonexistent-scenarios-folder" });
    const answer = await rawPost(sandbox.url, "/uae-fhir/r4/$process-message", BODY, [
      "Host: sandbox.test",
      "Content-Type: application/json",
      "x-SANDBOX-workspace:   team-raw  ",
    ]);
    expect(answer.status).toBe("HTTP/1.1 200 OK");
    expect(sandbox.calls()).toEqual([]);
    const listed = await fetch(`${sandbox.url}/w/team-raw/__admin/calls`);
    const { calls } = (await listed.json()) as { calls: Array<{ workspace: string; request: { headers: object } }> };
    expect(calls).toHaveLength(1);
    expect(calls[0]?.workspace).toBe("team-raw");
    expect(calls[0]?.request.headers).toMatchObject({ "x-sandbox-workspace": "team-raw" });
  });
});
