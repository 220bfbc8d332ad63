import { deflateRawSync, inflateRawSync } from "node:zlib";

/** Characters of text gathered before a block is packed: about 70 add-allergy calls, a millisecond to deflate. */
export const BLOCK_CHARS = 256 * 1024;

/** Texts of the open block compared with a new one: the journal keeps the answer the duplicate memory kept just before. */
const RECENT = 16;

/** Texts this short are kept as they are: a handle into a block would cost as much. */
const KEPT_PLAIN = 64;

/**
 * Where a block's texts are written as UTF-8 before deflating, one for the process (packing is synchronous): writing
 * each text into it costs a fifth of joining them and encoding the joined string. Grown when a block needs more.
 */
let scratch = Buffer.alloc(0);

/** Packed blocks whose text is kept decoded, for reads that walk the journal in order. */
const DECODED_BLOCKS = 2;

/** One block of texts: gathered as strings, then packed into one deflated buffer. */
class Block {
  /** The texts while the block is open (or if packing failed); undefined once packed. */
  texts: string[] | undefined = [];
  /** Where each text ends in the block's text (characters). */
  readonly ends: number[] = [];
  chars = 0;
  packed: Buffer | undefined;
}

/**
 * A text kept by PackedTexts. `text` gives it back, unpacking its block when
 * it is packed; `toJSON` makes it serialize as the text it stands for.
 */
export class KeptText {
  constructor(
    private readonly owner: PackedTexts | undefined,
    private readonly block: Block | string,
    private readonly index = 0,
  ) {}

  get text(): string {
    if (typeof this.block === "string") return this.block;
    const texts = this.block.texts;
    if (texts) return texts[this.index] as string;
    const decoded = (this.owner as PackedTexts).decoded(this.block);
    return decoded.slice(this.block.ends[this.index - 1] ?? 0, this.block.ends[this.index]);
  }

  /** The text's length in characters, without unpacking it. */
  get length(): number {
    if (typeof this.block === "string") return this.block.length;
    return (this.block.ends[this.index] as number) - (this.block.ends[this.index - 1] ?? 0);
  }

  toJSON(): string {
    return this.text;
  }

  /** A text kept as it is, outside any block. */
  static plain(text: string): KeptText {
    return new KeptText(undefined, text);
  }
}

/**
 * Large texts kept for later reading (journaled bodies, remembered answers)
 * packed together: texts are gathered into blocks of BLOCK_CHARS characters,
 * and a full block is deflated as one. Calls of one sandbox repeat each other
 * (the same resources, codes and headers), so a block packs about tenfold —
 * where deflating each body alone packs about twofold at ten times the cost.
 * A block is freed when no KeptText of it is left. Reading a packed text
 * inflates its block (about a millisecond), and the last DECODED_BLOCKS
 * blocks read stay decoded, so walking a journal in order inflates each
 * block once.
 */
export class PackedTexts {
  #open = new Block();
  /**
   * The last full block, packed only when the open one fills in turn: what was kept a moment ago (a call's request,
   * read by the request log and the journal file as it is recorded) is never read back from a packed block.
   */
  #full: Block | undefined;
  #decoded: Array<{ block: Block; text: string }> = [];
  #packedBytes = 0;

  constructor(private readonly blockChars = BLOCK_CHARS) {}

  keep(text: string): KeptText {
    // A text UTF-8 cannot carry (a lone surrogate) would not come back the same: kept as it is.
    if (text.length <= KEPT_PLAIN || !text.isWellFormed()) return KeptText.plain(text);
    let block = this.#open;
    const texts = block.texts as string[];
    for (let i = texts.length - 1; i >= 0 && i >= texts.length - RECENT; i--) {
      if (texts[i] === text) return new KeptText(this, block, i);
    }
    if (block.chars > 0 && block.chars + text.length > this.blockChars) {
      if (this.#full) this.#pack(this.#full);
      this.#full = block;
      block = this.#open = new Block();
    }
    const into = block.texts as string[];
    into.push(text);
    block.chars += text.length;
    block.ends.push(block.chars);
    return new KeptText(this, block, into.length - 1);
  }

  /** Deflated bytes of the blocks packed so far (freed blocks included): for the benchmark's figures. */
  get packedBytes(): number {
    return this.#packedBytes;
  }

  #pack(block: Block): void {
    const texts = block.texts as string[];
    // UTF-8 takes at most three bytes for a UTF-16 code unit.
    if (scratch.length < block.chars * 3) scratch = Buffer.allocUnsafe(block.chars * 3);
    let bytes = 0;
    for (const text of texts) bytes += scratch.write(text, bytes, "utf8");
    // Level 1: nine tenths of the best packing of these texts at a third of the default level's cost.
    block.packed = deflateRawSync(scratch.subarray(0, bytes), { level: 1 });
    this.#packedBytes += block.packed.length;
    block.texts = undefined;
  }

  /** The whole text of a packed block. */
  decoded(block: Block): string {
    const hit = this.#decoded.find((d) => d.block === block);
    if (hit) return hit.text;
    const text = inflateRawSync(block.packed as Buffer).toString("utf8");
    this.#decoded.unshift({ block, text });
    if (this.#decoded.length > DECODED_BLOCKS) this.#decoded.pop();
    return text;
  }

  /** Forgets the decoded blocks and the blocks being filled (the journal was cleared). */
  clear(): void {
    this.#decoded = [];
    this.#full = undefined;
    this.#open = new Block();
  }
}
