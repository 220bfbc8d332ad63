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

  it("packs a full block only once the next one is full too, so that what was kept a moment ago is read as it is", () => {
    const packed = new PackedTexts(1_000);
    const text = (i: number) => `${"x".repeat(300)}${i}`;
    for (let i = 0; i < 4; i++) packed.keep(text(i)); // the first block: three texts, the fourth opens the second

    expect(packed.packedBytes).toBe(0);
    for (let i = 4; i < 7; i++) packed.keep(text(i)); // the second block is full: the first is packed

    expect(packed.packedBytes).toBeGreaterThan(0);
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
