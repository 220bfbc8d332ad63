import { describe, expect, it } from "vitest";
import { InternTable } from "../../src/store/intern-table.js";

// The table the store shares strings and parts through: bounded whatever it
// is sent, and keeping what is in use.

describe("InternTable", () => {
  it("gives back the value first kept under a key", () => {
    const table = new InternTable<object>(8);
    const first = { n: 1 };
    table.set("a", first);

    expect(table.get("a")).toBe(first);
    expect(table.get("b")).toBeUndefined();
  });

  it("never holds more than its budget, however many distinct keys it is sent", () => {
    const table = new InternTable<string>(64);
    let most = 0;
    for (let i = 0; i < 20_000; i++) {
      const key = `display ${i}`;
      table.get(key) ?? table.set(key, key);
      most = Math.max(most, table.size);
    }

    expect(most).toBeLessThanOrEqual(64);
    expect(most).toBeGreaterThan(16); // it does hold entries: half the budget and more
  });

  it("keeps a key in use through a flood of others, and forgets one no longer used", () => {
    const table = new InternTable<object>(64);
    const hot = { kept: "hot" };
    const cold = { kept: "cold" };
    table.set("hot", hot);
    table.set("cold", cold);
    for (let i = 0; i < 20_000; i++) {
      table.set(`unique ${i}`, {});
      if (i % 10 === 0) expect(table.get("hot")).toBe(hot);
    }

    expect(table.get("hot")).toBe(hot);
    expect(table.get("cold")).toBeUndefined();
  });
});
