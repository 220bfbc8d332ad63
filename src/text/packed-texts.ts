import { deflateRawSync, inflateRawSync } from "node:zlib";

/** Characters of text gathered before a block is packed: about 50 add-allergy calls, a millisecond to deflate. */
export const BLOCK_CHARS = 256 * 1024;

/** Texts this short are kept as they are: a handle into a block would cost as much. */
const KEPT_PLAIN = 64;

/** UTF-8 takes at most three bytes for a UTF-16 code unit. */
const MAX_UTF8_PER_CHAR = 3;

/**
 * Full blocks waiting to be packed off the request's turn, at most this many: a burst that fills more within one turn
 * packs the oldest at once. With the open block and the last full one, at most three blocks are held as strings
 * during a turn, two after it (as when packing happened on the request's turn).
 */
export const WAITING_BLOCKS = 1;

/**
 * Where a block's texts are written as UTF-8 before deflating, one for the process (each packing is synchronous): writing
 * each text into it costs a fifth of joining them and encoding the joined string. Sized for a block of BLOCK_CHARS;
 * a larger block (one text longer than a block) gets a buffer of its own, so that this never outgrows that.
 */
const scratch = Buffer.allocUnsafe(BLOCK_CHARS * MAX_UTF8_PER_CHAR);

/**
 * Packed blocks kept inflated, most recently read first, for the whole process: reads that walk a journal in order
 * inflate each block once. Kept as UTF-8 bytes; each read decodes only its own text into a string of its own (a slice
 * of a decoded block would keep the whole block alive for as long as the slice lives).
 */
const inflated: Array<{ block: Block; bytes: Buffer }> = [];
const INFLATED_BLOCKS = 2;

/** One block of texts: gathered as strings, then packed into one deflated buffer. */
class Block {
  /** The texts while the block is open or waiting to be packed; undefined once packed. */
  texts: string[] | undefined = [];
  /** Where each text ends in the block: characters while gathering (for `length`)… */
  readonly ends: number[] = [];
  /** …and UTF-8 bytes once packed. */
  byteEnds: number[] | undefined;
  chars = 0;
  packed: Buffer | undefined;
}

/** The UTF-8 bytes of a packed block. */
function inflatedBytes(block: Block): Buffer {
  const at = inflated.findIndex((entry) => entry.block === block);
  const entry = at >= 0 ? (inflated.splice(at, 1)[0] as (typeof inflated)[number]) : undefined;
  // Inflated into one buffer of the block's size (known): in zlib's 16 KiB pieces, joined after, it costs twice as much.
  const size = (block.byteEnds as number[]).at(-1) ?? 0;
  const bytes = entry?.bytes ?? inflateRawSync(block.packed as Buffer, { chunkSize: Math.max(64, size + 64) });
  inflated.unshift({ block, bytes });
  if (inflated.length > INFLATED_BLOCKS) inflated.pop();
  return bytes;
}

/**
 * A text kept by PackedTexts. `text` gives it back, unpacking its block when
 * it is packed; `toJSON` makes it serialize as the text it stands for.
 */
export class KeptText {
  constructor(
    private readonly block: Block | string,
    private readonly index = 0,
  ) {}

  get text(): string {
    const { block, index } = this;
    if (typeof block === "string") return block;
    if (block.texts) return block.texts[index] as string;
    const ends = block.byteEnds as number[];
    return inflatedBytes(block).toString("utf8", ends[index - 1] ?? 0, ends[index]);
  }

  /**
   * The text's UTF-8 bytes when its block is packed (a view into the inflated block: copy them before the next read
   * of another block), else undefined: a writer of bytes then copies them without decoding the text and encoding it
   * again.
   */
  get packedBytes(): Buffer | undefined {
    const { block, index } = this;
    if (typeof block === "string" || block.texts) return undefined;
    const ends = block.byteEnds as number[];
    return inflatedBytes(block).subarray(ends[index - 1] ?? 0, ends[index]);
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
    return new KeptText(text);
  }
}

/**
 * Large texts kept for later reading (journaled bodies, remembered answers)
 * packed together: texts are gathered into blocks of BLOCK_CHARS characters,
 * and a full block is deflated as one. Calls of one sandbox repeat each other
 * (the same resources, codes and headers), so a block packs about fivefold —
 * where deflating each body alone packs about twofold at ten times the cost.
 * A block is freed when no KeptText of it is left. Reading a packed text
 * inflates its block (a fraction of a millisecond); the last blocks read stay
 * inflated, so walking a journal in order inflates each block once. A full
 * block is packed after the turn that filled it (setImmediate), not on the
 * request's turn; a burst that fills more than WAITING_BLOCKS in one turn
 * packs the oldest at once.
 */
export class PackedTexts {
  #open = new Block();
  /**
   * The last full block, packed only when the open one fills in turn: what was kept a moment ago (a call's request,
   * read by the request log and the journal file as it is recorded) is read as it is, unless calls larger than a
   * block come in a burst.
   */
  #full: Block | undefined;
  /** Full blocks to be packed after this turn, oldest first. */
  readonly #waiting: Block[] = [];
  #scheduled = false;
  #packedBytes = 0;

  constructor(private readonly blockChars = BLOCK_CHARS) {}

  keep(text: string): KeptText {
    // A text UTF-8 cannot carry (a lone surrogate) would not come back the same: kept as it is.
    if (text.length <= KEPT_PLAIN || !text.isWellFormed()) return KeptText.plain(text);
    // No search for the same text kept a moment ago: who keeps a text twice hands the KeptText on (KeptBodies).
    let block = this.#open;
    if (block.chars > 0 && block.chars + text.length > this.blockChars) {
      if (this.#full) this.#wait(this.#full);
      this.#full = block;
      block = this.#open = new Block();
    }
    const into = block.texts as string[];
    into.push(text);
    block.chars += text.length;
    block.ends.push(block.chars);
    return new KeptText(block, into.length - 1);
  }

  /** Deflated bytes of the blocks packed so far (freed blocks included): for the benchmark's figures and tests. */
  get packedBytes(): number {
    return this.#packedBytes;
  }

  #wait(block: Block): void {
    this.#waiting.push(block);
    if (this.#waiting.length > WAITING_BLOCKS) this.#pack(this.#waiting.shift() as Block);
    if (this.#scheduled) return;
    this.#scheduled = true;
    // Unref'd: texts waiting to be packed are readable as they are; they need not keep the process alive.
    setImmediate(this.#packWaiting).unref();
  }

  readonly #packWaiting = (): void => {
    this.#scheduled = false;
    for (let block = this.#waiting.shift(); block; block = this.#waiting.shift()) this.#pack(block);
  };

  #pack(block: Block): void {
    const texts = block.texts as string[];
    const room = block.chars * MAX_UTF8_PER_CHAR;
    const into = room <= scratch.length ? scratch : Buffer.allocUnsafe(room);
    const byteEnds: number[] = [];
    let bytes = 0;
    for (const text of texts) {
      bytes += into.write(text, bytes, "utf8");
      byteEnds.push(bytes);
    }
    // Level 1: nine tenths of the best packing of these texts at a third of the default level's cost.
    block.packed = deflateRawSync(into.subarray(0, bytes), { level: 1 });
    block.byteEnds = byteEnds;
    this.#packedBytes += block.packed.length;
    block.texts = undefined;
  }

  /**
   * Starts afresh (the workspace was reset): texts kept so far stay readable until they are dropped (blocks waiting
   * are still packed).
   */
  clear(): void {
    this.#full = undefined;
    this.#open = new Block();
  }
}
