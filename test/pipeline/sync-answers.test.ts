import type { AllergyIntolerance } from "fhir/r4.js";
import { describe, expect, it } from "vitest";
import { createApp } from "../../src/app.js";
import { builtInHandlers } from "../../src/handlers/built-in.js";
import type { Handler } from "../../src/handlers/handler.js";
import type { InboundMessage } from "../../src/pipeline/process-message.js";
import { envelope, example, messageBundle, post, STANDARD } from "../support/messages.js";

// The pipeline answers at once when nothing waits (the built-in handlers are synchronous), and with a promise only
// when a handler given to createApp is async: the same answer either way.

const QUIET = { info: () => undefined, error: () => undefined };
const FIXED = { now: () => new Date("2026-01-15T09:30:00.000Z"), newId: counter() };

function counter(): () => string {
  let n = 0;
  return () => `id-${++n}`;
}

const inbound = (body: string): InboundMessage => ({
  path: STANDARD,
  headers: new Headers({ "content-type": "application/json" }),
  body,
  endpoint: `http://localhost${STANDARD}`,
  fhirBase: "http://localhost/uae-fhir/r4",
});

const texts = new Map<string, string>();
/** The add-allergy message of `id`, the same text each time (a resend). */
const allergy = (id: string): string => {
  let text = texts.get(id);
  if (text === undefined) {
    text = envelope(
      messageBundle("add-allergy", [example<AllergyIntolerance>("allergyintolerance-example.json")], { id }),
    );
    texts.set(id, text);
  }
  return text;
};

/** The built-in add-allergy handler, answering a turn later. */
const later: Handler = async (input, context) => {
  await new Promise((resolve) => setImmediate(resolve));
  return (builtInHandlers["add-allergy"] as Handler)(input, context);
};

describe("the message pipeline without promises", () => {
  it("answers a message a synchronous handler takes at once, not as a promise", () => {
    const sandbox = createApp({}, { logger: QUIET });
    try {
      const answers = [
        sandbox.workspace.processMessage(inbound(allergy("sync-1"))),
        sandbox.workspace.processMessage(inbound(allergy("sync-1"))), // the duplicate
        sandbox.workspace.processMessage(inbound("not json")),
        sandbox.workspace.processMessage({ ...inbound(allergy("sync-2")), path: "/nowhere" }),
      ];
      for (const answer of answers) expect(answer).not.toBeInstanceOf(Promise);
      expect(answers.map((a) => (a as { status: number }).status)).toEqual([200, 200, 400, 404]);
      expect((answers[1] as { duplicate: boolean }).duplicate).toBe(true);
    } finally {
      sandbox.close();
    }
  });

  it("answers with a promise when a handler is async, the same answer as a synchronous one's", async () => {
    const sync = createApp({}, { ...FIXED, newId: counter(), logger: QUIET });
    const async = createApp({}, { ...FIXED, newId: counter(), logger: QUIET, handlers: { "add-allergy": later } });
    try {
      const pending = async.workspace.processMessage(inbound(allergy("async-1")));
      expect(pending).toBeInstanceOf(Promise);
      const [a, b] = [await pending, sync.workspace.processMessage(inbound(allergy("async-1")))];
      expect(a).toEqual(b);
      // Over HTTP too, a resend answered from the duplicate memory included.
      for (const id of ["async-2", "async-2"]) {
        const [x, y] = [await post(async.app, allergy(id)), await post(sync.app, allergy(id))];
        expect(x.status).toBe(y.status);
        expect(x.body).toEqual(y.body);
      }
    } finally {
      sync.close();
      async.close();
    }
  });
});
