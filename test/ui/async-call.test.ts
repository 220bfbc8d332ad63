import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Child, http, killStray, startCli } from "../cli/cli-process.js";
import { envelope, STANDARD } from "../support/messages.js";
import { startReceiver } from "../support/receiver.js";
import { type Browser, launchBrowser, UI_TEST_TIMEOUT_MS } from "./browser.js";
import { addAllergy } from "./messages.js";

// An asynchronous message's two legs on the dashboard: the call answered 202 says where its answer went, and the
// answer's delivery links back to it.

let sandbox: { child: Child; url: string };
let receiver: Awaited<ReturnType<typeof startReceiver>>;
let browser: Browser;

beforeAll(async () => {
  [sandbox, receiver, browser] = await Promise.all([startCli(["--no-watch"]), startReceiver(), launchBrowser()]);
}, UI_TEST_TIMEOUT_MS);

afterAll(async () => {
  await browser?.close();
  await receiver?.close();
  await killStray();
});

describe("an asynchronous message on the dashboard", { timeout: UI_TEST_TIMEOUT_MS }, () => {
  it("links the 202's call and the answer's delivery both ways", async () => {
    const reply = await http(`${sandbox.url}${STANDARD}?async=true&response-url=${encodeURIComponent(receiver.url)}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: envelope(addAllergy()),
    });
    expect(reply.status).toBe(202);
    const inbound = reply.headers.get("x-sandbox-call-id") as string;
    await receiver.next();

    const page = await browser.page();
    await page.goto(`${sandbox.url}/__admin/ui/calls/${inbound}`);
    await page.getByText(`to ${receiver.url}, sent after the 202`).waitFor();
    const legs = page.getByRole("region", { name: "Calls of this message" });
    const delivery = legs.getByRole("row").filter({ hasText: "outbound (attempt 1)" }).getByRole("link");
    await delivery.click();
    // The call's facts (a description list) name the call it answers; the table of the message's calls links it too.
    await page
      .locator("dl")
      .getByRole("link", { name: `call ${inbound}`, exact: true })
      .waitFor();
    await page.getByText("its asynchronous answer (the message was answered 202)").waitFor();
  });
});
