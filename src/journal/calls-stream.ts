import type { CallRecord } from "./call-record.js";
import { bodyJson, type CallJsonSink, callJsonParts } from "./call-view.js";
import { RecordedRequest, RecordedResponse } from "./kept-call.js";

/** Listings are sent in chunks of about this size. */
export const CHUNK = 64 * 1024;

/** UTF-8 takes at most three bytes for a UTF-16 code unit. */
const MAX_UTF8_PER_CHAR = 3;

/** Where a listing gets each buffer of CHUNK bytes it writes into. */
export type FreshChunk = () => Buffer;

/** A new buffer for each chunk: for a reader that keeps what it is given (a web stream's). */
const newChunk: FreshChunk = () => Buffer.allocUnsafe(CHUNK);

/**
 * Text and bytes written into buffers of CHUNK bytes, taken a few at a time: a listing's bytes are made once,
 * where joining strings and encoding the joined string made each character twice (and flattened a rope to do it).
 */
class ByteChunks {
  #buffer: Buffer | undefined;
  #at = 0;
  readonly #full: Buffer[] = [];
  #pending = 0;

  constructor(private readonly fresh: FreshChunk) {}

  /** Bytes written and not taken yet. */
  get pending(): number {
    return this.#pending;
  }

  text(text: string): void {
    if (text.length === 0) return;
    let room = CHUNK - this.#at;
    if (text.length * MAX_UTF8_PER_CHAR > room) {
      const bytes = Buffer.byteLength(text);
      if (bytes > room) this.#close();
      room = CHUNK - this.#at;
      if (bytes > room) {
        this.#full.push(Buffer.from(text, "utf8"));
        this.#pending += bytes;
        return;
      }
    }
    const wrote = this.#open().write(text, this.#at, "utf8");
    this.#at += wrote;
    this.#pending += wrote;
  }

  /** Bytes copied in (they may be a view into a buffer that is reused). */
  bytes(bytes: Buffer): void {
    if (bytes.length > CHUNK - this.#at) this.#close();
    if (bytes.length > CHUNK) this.#full.push(Buffer.from(bytes));
    else this.#at += bytes.copy(this.#open(), this.#at);
    this.#pending += bytes.length;
  }

  /** The chunks written so far, the last one cut where writing stopped. */
  take(): Buffer[] {
    this.#close();
    this.#pending = 0;
    return this.#full.splice(0);
  }

  #open(): Buffer {
    this.#buffer ??= this.fresh();
    return this.#buffer;
  }

  #close(): void {
    if (this.#at === 0 || !this.#buffer) return;
    this.#full.push(this.#buffer.subarray(0, this.#at));
    this.#buffer = undefined;
    this.#at = 0;
  }
}

/**
 * Bytes a body's JSON would change (bodyJson): line breaks for a line of NDJSON ("\n", "\r", U+0085, U+2028,
 * U+2029 in UTF-8) and what jsonText escapes (`<`, `>`, `&`). Bytes of a packed text are well-formed UTF-8 (a text
 * with a lone surrogate is never packed).
 */
const CHANGED_BYTES = [0x0a, 0x0d, 0x3c, 0x3e, 0x26];
const CHANGED_SEQUENCES = ["\u0085", "\u2028", "\u2029"].map((c) => Buffer.from(c, "utf8"));

function asItIs(bytes: Buffer): boolean {
  for (const byte of CHANGED_BYTES) if (bytes.indexOf(byte) >= 0) return false;
  for (const sequence of CHANGED_SEQUENCES) if (bytes.indexOf(sequence) >= 0) return false;
  return true;
}

/** callJsonParts into chunks: a packed body's bytes copied as they are when its JSON would not change them. */
function chunkSink(out: ByteChunks): CallJsonSink {
  return {
    text: (json) => out.text(json),
    body: (side) => {
      const bytes =
        side instanceof RecordedRequest || side instanceof RecordedResponse ? side.keptBody.packedBytes : undefined;
      if (bytes === undefined) out.text(bodyJson(side.body));
      else if (bytes.length > 0 && asItIs(bytes)) out.bytes(bytes);
      else out.text(bodyJson(bytes.toString("utf8")));
    },
  };
}

/** How a listing writes a call, as text: the listing's `serialize`; without it, callJson's line (as bytes). */
export type CallText = (call: CallRecord) => string;

/**
 * Calls serialized as the client reads (callJson, one after `open`, joined by `separator`, then `close`), made a
 * chunk of about 64 KiB at a time: a full journal is never one string, and one write per call would cost more than
 * the call. The calls' bodies that are packed go in as the bytes they are packed as, without being decoded and
 * encoded again. Read as a web stream (`stream`), or by a writer that gives its buffers back (`next`: a ReusableBody).
 */
export class CallsListing {
  /** The size of the buffers `next` writes into. */
  readonly bufferBytes = CHUNK;
  #i = 0;
  #opened = false;
  #done = false;

  constructor(
    private readonly calls: readonly CallRecord[],
    private readonly text: { open: string; separator: string; close: string },
    private readonly serialize?: CallText,
  ) {}

  /** Whether every chunk has been taken. */
  get done(): boolean {
    return this.#done;
  }

  /**
   * The next chunks, about CHUNK bytes in all (more for a call larger than that), written into buffers from `fresh`
   * (a pooled one is cut to what was written; a text or body larger than a chunk gets a buffer of its own).
   */
  next(fresh: FreshChunk): Buffer[] {
    const { calls, text, serialize } = this;
    const out = new ByteChunks(fresh);
    const sink = chunkSink(out);
    if (!this.#opened) {
      this.#opened = true;
      out.text(text.open);
    }
    while (this.#i < calls.length && out.pending < CHUNK) {
      if (this.#i > 0) out.text(text.separator);
      const call = calls[this.#i++] as CallRecord;
      if (serialize) out.text(serialize(call));
      else callJsonParts(call, {}, sink);
    }
    if (this.#i >= calls.length && !this.#done) {
      this.#done = true;
      out.text(text.close);
    }
    return out.take();
  }

  /** The listing as a web stream: a new buffer for each chunk, as its reader keeps them. */
  stream(): ReadableStream<Uint8Array> {
    return new ReadableStream<Uint8Array>(
      {
        pull: (controller) => {
          for (const chunk of this.next(newChunk)) controller.enqueue(chunk);
          if (this.#done) controller.close();
        },
      },
      // Pulled only when read: a writer that takes the listing itself (withReusableBody) must miss no chunk.
      { highWaterMark: 0 },
    );
  }
}

/** The whole journal, or a page of it, as one JSON object `{"calls":[…],"next":…}`. */
export const jsonListing = (calls: readonly CallRecord[], close: string, serialize?: CallText) =>
  new CallsListing(calls, { open: '{"calls":[', separator: ",", close }, serialize);

/** One call a line (NDJSON). */
export const ndjsonListing = (calls: readonly CallRecord[], serialize?: CallText) =>
  new CallsListing(calls, { open: "", separator: "\n", close: calls.length > 0 ? "\n" : "" }, serialize);
