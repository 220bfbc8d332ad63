import { describe, expect, it, vi } from "vitest";
import type { CallDraft } from "../../src/journal/call-record.js";
import { keptCall } from "../../src/journal/kept-call.js";
import { Redaction } from "../../src/journal/redact.js";
import { callEvent } from "../../src/log/call-event.js";
import { KeptText, PackedTexts } from "../../src/text/packed-texts.js";

// The request log's event of a call reads the answer's text only when it must (a code the pipeline did not pass
// along, a refusal's first issue): a journal body kept as bytes would otherwise be decoded for every call.

const ANSWER = JSON.stringify({
  resourceType: "Bundle",
  type: "message",
  entry: [{ resource: { resourceType: "MessageHeader", response: { identifier: "1", code: "ok" } } }],
  note: "محمد".repeat(30),
});

function recorded(responseCode: string | undefined, status = 200) {
  const draft: CallDraft = {
    id: "7",
    direction: "inbound",
    at: new Date(0),
    durationMs: 1,
    operation: "add-allergy",
    messageId: "m",
    rule: null,
    ...(responseCode !== undefined ? { responseCode } : {}),
    request: { method: "POST", url: "http://x/p", path: "/p", headers: {}, body: "{}".padEnd(100) },
    response: { status, headers: {}, body: ANSWER },
    kept: { responseBytes: Buffer.from(ANSWER) },
  };
  return keptCall(draft, { id: "7", workspace: "default" }, new PackedTexts(), new Redaction());
}

describe("the request log's event of a journaled call", () => {
  it("does not read the answer's text when the pipeline passed its response code along", () => {
    const call = recorded("ok");
    const read = vi.spyOn(KeptText.prototype, "text", "get");
    try {
      expect(callEvent(call).responseCode).toBe("ok");
      expect(read).not.toHaveBeenCalled();
    } finally {
      read.mockRestore();
    }
  });

  it("reads it when it must: the code from the body, a refusal's issue", () => {
    const read = vi.spyOn(KeptText.prototype, "text", "get");
    try {
      expect(callEvent(recorded(undefined)).responseCode).toBe("ok");
      expect(read).toHaveBeenCalled();
      read.mockClear();
      callEvent(recorded("ok", 500));
      expect(read).toHaveBeenCalled();
    } finally {
      read.mockRestore();
    }
  });
});
