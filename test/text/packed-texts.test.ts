import { describe, expect, it } from "vitest";
import { KeptText, PackedTexts } from "../../src/text/packed-texts.js";
import { example } from "../support/messages.js";

/** Real R4 JSON (the specification's own examples), each made distinct by an id, as calls of one sandbox are. */
function texts(n: number): string[] {
  const files = ["allergyintolerance-example.json", "condition-example.json", "patient-example.json"];
  return Array.from({ length: n }, (_, i) => {
    const resource = example(files[i % files.length] as string);
    return JSON.stringify({ ...resource, id: `r-${i}` });
  });
}

/** Resolves after the immediates queued so far have run: packing happens there. */
const afterThisTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

describe("packed texts", () => {
  it("gives every text back exactly, packed or not: Arabic, emoji, short, empty and long alike", () => {
    const packed = new PackedTexts(4_000);
    const originals = [
      ...texts(40),
      '{"name":[{"text":"محمد عبدالله الشامسي"}]}'.repeat(20),
      `${"😀 ".repeat(300)}end`,
      "",
      "short",
      "x".repeat(5_000),
      ...texts(10),
    ];
    const kept = originals.map((t) => packed.keep(t));

    expect(packed.packedBytes).toBeGreaterThan(0);
    expect(kept.map((k) => k.text)).toEqual(originals);
    // Read back in another order (blocks decoded, dropped from the cache and decoded again).
    for (let i = kept.length - 1; i >= 0; i -= 7) expect(kept[i]?.text).toBe(originals[i]);
    expect(kept.map((k) => k.length)).toEqual(originals.map((t) => t.length));
    expect(kept.map((k) => JSON.stringify({ body: k }))).toEqual(originals.map((t) => JSON.stringify({ body: t })));
  });

  it("packs calls of one kind about fivefold or better", () => {
    const blockChars = 64 * 1024;
    const packed = new PackedTexts(blockChars);
    const originals = texts(600);
    for (const t of originals) packed.keep(t);

    // The last two blocks (the open one and the full one before it) are not packed yet: a block's worth more left out,
    // for characters longer than a byte.
    const packedInput = originals.reduce((sum, t) => sum + Buffer.byteLength(t), 0) - 3 * blockChars;
    expect(packedInput).toBeGreaterThan(10 * blockChars);
    expect(packed.packedBytes * 5).toBeLessThan(packedInput);
  });

  it("packs a full block only once the next one is full too, so that what was kept a moment ago is read as it is", async () => {
    const packed = new PackedTexts(1_000);
    const text = (i: number) => `${"x".repeat(300)}${i}`;
    for (let i = 0; i < 4; i++) packed.keep(text(i)); // the first block: three texts, the fourth opens the second
    await afterThisTurn();

    expect(packed.packedBytes).toBe(0);
    for (let i = 4; i < 7; i++) packed.keep(text(i)); // the second block is full: the first is packed
    await afterThisTurn();

    expect(packed.packedBytes).toBeGreaterThan(0);
  });

  it("packs a full block after the turn that filled it, not on the request's turn", async () => {
    const packed = new PackedTexts(1_000);
    const text = (i: number) => `${"x".repeat(300)}${i}`;
    const kept = Array.from({ length: 7 }, (_, i) => packed.keep(text(i)));

    expect(packed.packedBytes).toBe(0);
    expect(kept[0]?.packedBytes).toBeUndefined();
    await afterThisTurn();

    expect(packed.packedBytes).toBeGreaterThan(0);
    expect(kept[0]?.packedBytes?.toString("utf8")).toBe(text(0));
    expect(kept.map((k) => k.text)).toEqual(Array.from({ length: 7 }, (_, i) => text(i)));
  });

  it("packs at once when a burst fills more blocks in one turn than may wait: memory stays bounded", async () => {
    const packed = new PackedTexts(1_000);
    const text = (i: number) => `${"y".repeat(300)}${i}`;
    // Blocks of three texts. The seventh text fills the second block: the first waits for the end of the turn. The
    // tenth fills the third: the second would wait too, one more than may, so the first is packed at once.
    const kept: KeptText[] = [];
    for (let i = 0; i < 9; i++) kept.push(packed.keep(text(i)));
    expect(packed.packedBytes).toBe(0);
    for (let i = 9; i < 12; i++) kept.push(packed.keep(text(i)));

    expect(packed.packedBytes).toBeGreaterThan(0);
    expect(kept[0]?.packedBytes).toBeDefined();
    expect(kept[3]?.packedBytes).toBeUndefined();
    await afterThisTurn();
    expect(kept[3]?.packedBytes).toBeDefined();
    expect(kept.map((k) => k.text)).toEqual(Array.from({ length: 12 }, (_, i) => text(i)));
  });

  it("gives a packed text's UTF-8 bytes without decoding it; undefined while it is not packed", async () => {
    const packed = new PackedTexts(1_000);
    const texts = ["محمد عبدالله".repeat(30), "😀 emoji ".repeat(40), "x".repeat(500), "é".repeat(200)];
    const kept = [...texts, ...texts, ...texts].map((t) => packed.keep(t));
    await afterThisTurn();

    expect(kept.at(-1)?.packedBytes).toBeUndefined();
    for (const [i, k] of kept.entries()) {
      if (k.packedBytes) expect(k.packedBytes.equals(Buffer.from(texts[i % texts.length] as string))).toBe(true);
    }
    expect(kept.filter((k) => k.packedBytes).length).toBeGreaterThan(3);
    expect(KeptText.plain("short").packedBytes).toBeUndefined();
  });

  it("keeps a text with a lone surrogate as it is (UTF-8 could not carry it)", () => {
    const packed = new PackedTexts(100);
    const lone = `${"a".repeat(200)}\ud800${"b".repeat(200)}`;
    const kept = [packed.keep(lone), ...texts(5).map((t) => packed.keep(t))];

    expect(kept[0]?.text).toBe(lone);
    expect(kept[0]?.text.isWellFormed()).toBe(false);
  });

  it("a plain KeptText is the text", () => {
    expect(KeptText.plain("héllo").text).toBe("héllo");
    expect(JSON.stringify([KeptText.plain('a"b')])).toBe('["a\\"b"]');
  });
});
