import type { Bundle, Task } from "fhir/r4.js";
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Child, killStray, startCli } from "../cli/cli-process.js";
import { confirmationTask, fromPharmacy, subscriptionMessage } from "../orders/pharmacy-client.js";
import { startReceiver } from "../support/receiver.js";
import { type Browser, launchBrowser, screenshot, seriousViolations, UI_TEST_TIMEOUT_MS } from "./browser.js";
import { send } from "./messages.js";

// Orders in a real browser: a local pharmacy receiver subscribes, an order is triggered from the page, the
// pharmacy confirms over HTTP, and the order's page shows the state and the timeline change as they happen.

const LICENCE = "PH-UI-0001";

type Receiver = Awaited<ReturnType<typeof startReceiver>>;
let browser: Browser;

beforeAll(async () => {
  browser = await launchBrowser();
}, UI_TEST_TIMEOUT_MS);

afterAll(async () => {
  await browser?.close();
  await killStray();
});

/** A sandbox (the CLI with `args`) and a pharmacy receiver of its own, for one describe block. */
function sandboxWithReceiver(args: string[]) {
  const it = {} as { sandbox: { child: Child; url: string }; receiver: Receiver };
  beforeAll(async () => {
    [it.sandbox, it.receiver] = await Promise.all([startCli(["--scenarios", "scenarios", ...args]), startReceiver()]);
  }, UI_TEST_TIMEOUT_MS);
  afterAll(async () => {
    await it.receiver?.close();
    it.sandbox?.child.process.kill("SIGTERM");
  });
  return it;
}

/** The Task of an order-fulfillment-request push. */
const pushedTask = (bundle: Bundle) => bundle.entry?.find((e) => e.resource?.resourceType === "Task")?.resource as Task;

/** Subscribes the receiver, then triggers an order for it from the Orders page; resolves on the order's page. */
async function triggerFromThePage(page: Page, url: string, receiver: Receiver): Promise<string> {
  expect((await send(url, subscriptionMessage(LICENCE, receiver.url))).status).toBe(200);
  await page.goto(`${url}/__admin/ui/orders`);
  const form = page.getByRole("region", { name: "Trigger an order" });
  await form.getByRole("checkbox", { name: LICENCE }).check();
  await form.getByLabel("Deadline to confirm").fill("10m");
  await form.getByRole("button", { name: "Trigger order" }).click();
  const heading = page.getByRole("heading", { level: 1, name: /^Order \d+$/ });
  await heading.waitFor();
  return ((await heading.textContent()) as string).replace("Order ", "");
}

const stateOf = (page: Page) => page.getByText(/^State: /).textContent();
const diagram = (page: Page) => page.getByRole("img", { name: "Order state diagram" });
const timeline = (page: Page) => page.getByRole("region", { name: "Timeline" }).getByRole("listitem");

describe.sequential("orders, live", { timeout: UI_TEST_TIMEOUT_MS }, () => {
  const running = sandboxWithReceiver([]);

  it("shows the state and the timeline move as the pharmacy confirms", async () => {
    const { sandbox, receiver } = running;
    const page = await browser.page();
    const id = await triggerFromThePage(page, sandbox.url, receiver);
    await page.getByRole("status").filter({ hasText: "Live updates: on" }).waitFor();
    expect(await stateOf(page)).toBe("State: open");
    expect(await diagram(page).locator("desc").textContent()).toMatch(/^Current state: open\./);
    const row = page.getByRole("row").filter({ has: page.getByRole("rowheader", { name: LICENCE }) });

    const push = await receiver.next();
    // The delivery's 2xx moves the pharmacy's request to delivered (docs/pharmacy-guide.md, state diagrams).
    await row.getByText("delivered", { exact: true }).waitFor();
    await page.evaluate(() => Object.assign(globalThis, { sameDocument: true }));

    const task = pushedTask(push.bundle);
    const confirm = fromPharmacy("confirm-drugs-availability", LICENCE, [
      confirmationTask(task, { availability: "available", options: [{ method: "pickup" }] }),
    ]);
    expect((await send(sandbox.url, confirm)).status).toBe(200);

    // first-confirmed (the default policy): the first available confirmation is allocated at once.
    await page.getByText(/^State: allocated/).waitFor();
    expect(await diagram(page).locator("desc").textContent()).toMatch(/^Current state: allocated\./);
    await timeline(page)
      .filter({ hasText: `${LICENCE}: confirmed available` })
      .waitFor();
    await timeline(page)
      .filter({ hasText: `allocated to ${LICENCE}` })
      .waitFor();
    await row.getByText("allocated", { exact: true }).waitFor();
    expect(await page.evaluate(() => (globalThis as unknown as { sameDocument?: boolean }).sameDocument)).toBe(true);
    // The allocation push reaches the receiver too.
    expect((await receiver.next()).bundle.entry[0].resource.eventCoding.code).toBe("order-allocation");
    await timeline(page)
      .filter({ hasText: `${LICENCE}: allocation delivered` })
      .waitFor();
    expect(id).toMatch(/^\d+$/);

    await screenshot(page, "order");
    expect(await seriousViolations(page)).toEqual([]);
    await page.close();
  });

  it("lists orders and pharmacies with their last delivery", async () => {
    const { sandbox, receiver } = running;
    const page = await browser.page();
    await page.goto(`${sandbox.url}/__admin/ui/orders`);
    await page.getByRole("row").filter({ hasText: "allocated" }).first().waitFor();
    await screenshot(page, "orders");
    expect(await seriousViolations(page)).toEqual([]);

    await page.getByRole("navigation", { name: "Dashboard" }).getByRole("link", { name: "Pharmacies" }).click();
    const row = page.getByRole("row").filter({ has: page.getByRole("rowheader", { name: LICENCE }) });
    await row.waitFor();
    expect(await row.textContent()).toContain(receiver.url);
    // The last push to it: the allocation, answered 200 by the receiver.
    await row.getByRole("link", { name: "order-allocation" }).waitFor();
    expect(await row.textContent()).toMatch(/200/);
    await screenshot(page, "pharmacies");
    expect(await seriousViolations(page)).toEqual([]);
    await page.close();
  });
});

describe.sequential("manual allocation", { timeout: UI_TEST_TIMEOUT_MS }, () => {
  const running = sandboxWithReceiver(["--allocation", "manual"]);

  it("allocates from the page once the pharmacy confirmed", async () => {
    const { sandbox, receiver } = running;
    const page = await browser.page();
    await triggerFromThePage(page, sandbox.url, receiver);
    const task = pushedTask((await receiver.next()).bundle);
    const confirm = fromPharmacy("confirm-drugs-availability", LICENCE, [
      confirmationTask(task, { availability: "available", options: [{ method: "home-delivery" }] }),
    ]);
    expect((await send(sandbox.url, confirm)).status).toBe(200);

    const allocate = page.getByRole("button", { name: `Allocate to ${LICENCE}` });
    await allocate.waitFor();
    expect(await stateOf(page)).toBe("State: open");
    await allocate.click();
    await page.getByText(/^State: allocated/).waitFor();
    expect(await allocate.count()).toBe(0);
    await timeline(page)
      .filter({ hasText: `allocated to ${LICENCE}` })
      .waitFor();
    await page.close();
  });
});
