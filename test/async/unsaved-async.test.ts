import { DatabaseSync } from "node:sqlite";
import { afterEach, describe, expect, it } from "vitest";
import { createApp } from "../../src/app.js";
import { allergyMessage, patientId, tempDir } from "../state/state-support.js";
import { post, responseHeader, STANDARD } from "../support/messages.js";
import { startReceiver } from "../support/receiver.js";

// --state-file: a message whose changes cannot be written is answered 503, not 202 — it was not accepted, so no
// asynchronous answer goes out for it.

const QUIET = { info: () => undefined, warn: () => undefined, error: () => undefined };
const closers: Array<() => unknown> = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

describe("an asynchronous message the state file cannot take", () => {
  it("is answered 503 and its answer is never sent", async () => {
    const dir = tempDir();
    closers.push(dir.remove);
    const inbox = await startReceiver();
    closers.push(inbox.close);
    const sandbox = createApp({ stateFile: dir.file }, { logger: QUIET });
    closers.push(sandbox.close);
    const path = `${STANDARD}?async=true&response-url=${encodeURIComponent(inbox.url)}`;
    const patient = patientId(7);

    const other = new DatabaseSync(dir.file);
    closers.push(() => other.close());
    other.exec("BEGIN IMMEDIATE");
    const blocked = await post(sandbox.app, allergyMessage("blocked", patient), { path });
    expect(blocked.status).toBe(503);
    other.exec("COMMIT");

    const accepted = await post(sandbox.app, allergyMessage("accepted", patient), { path });
    expect(accepted.status).toBe(202);
    // The first answer the receiver gets is the accepted message's: the blocked one's never went.
    expect(responseHeader(JSON.parse((await inbox.next()).body)).response?.identifier).toBe("accepted");
  });
});
