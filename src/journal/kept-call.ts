import type { KeptText, PackedTexts } from "../text/packed-texts.js";
import type { CallDraft, CallRecord } from "./call-record.js";
import { type Redaction, redactBodyText, redactUrl } from "./redact.js";

/**
 * One side of a recorded call, its body kept by PackedTexts and read back through `body`, a getter on the prototype
 * (no property defined per record). Its members are the subclass's own, enumerable, in the order every draft gives
 * them; readers that copy a side member by member add `body` themselves (callView); JSON.stringify goes through
 * toJSON.
 */
abstract class RecordedSide {
  readonly #body: KeptText;

  constructor(body: KeptText) {
    this.#body = body;
  }

  get body(): string {
    return this.#body.text;
  }

  /** The body as kept: a writer of bytes copies a packed one without decoding it (callsJson). */
  get keptBody(): KeptText {
    return this.#body;
  }
}

/** A side's body length in characters, without reading a kept body's text (it may be kept as bytes, or packed). */
export function bodyLength(side: { body: string }): number {
  return side instanceof RecordedSide ? side.keptBody.length : side.body.length;
}

/** The request of a recorded call. */
export class RecordedRequest extends RecordedSide {
  constructor(
    readonly method: string,
    readonly url: string,
    readonly path: string,
    readonly headers: Record<string, string>,
    body: KeptText,
  ) {
    super(body);
  }

  toJSON() {
    return { method: this.method, url: this.url, path: this.path, headers: this.headers, body: this.body };
  }
}

/** The response of a recorded call. */
export class RecordedResponse extends RecordedSide {
  constructor(
    readonly status: number,
    readonly headers: Record<string, string>,
    body: KeptText,
  ) {
    super(body);
  }

  toJSON() {
    return { status: this.status, headers: this.headers, body: this.body };
  }
}

/**
 * A body as the record keeps it: the text the duplicate memory kept already, when redaction left it as it is. `bytes`:
 * the sent text's UTF-8, made already, for the packing. `shared` is this very call's text (the edge hands over the
 * duplicate memory's texts of the message it answered, and only them): its length is checked, not its characters,
 * and the bytes then stand for it in the duplicate memory too.
 */
function keptBody(
  sent: string,
  redacted: string,
  shared: KeptText | undefined,
  texts: PackedTexts,
  bytes?: Buffer,
): KeptText {
  const same = redacted === sent;
  if (shared !== undefined && same && shared.length === sent.length) {
    if (bytes !== undefined) shared.withBytes(bytes);
    return shared;
  }
  return texts.keep(redacted, same ? bytes : undefined);
}

/**
 * The record the journal keeps of a call, redacted (what of it may be kept, Redaction): the draft's members in the
 * draft's order but `secretHeaders` and `kept`, then the journal's, with both bodies kept by `texts` (packed with
 * other calls' bodies once their block is full) or, handed over in `kept`, the texts the duplicate memory kept of
 * them. Built member by member, in one pass: on Node 20 an object spread followed by new members gives every record a
 * hidden class of its own, about 300 bytes per call.
 */
export function keptCall(
  draft: CallDraft,
  extra: { id: string; workspace: string },
  texts: PackedTexts,
  redaction: Redaction,
): CallRecord {
  const out: Record<string, unknown> = {};
  let size = 0;
  for (const key in draft) {
    if (key === "request") {
      const { method, url, path, headers, body } = draft.request;
      const redacted = redactBodyText(body);
      const read = redacted === body ? draft.kept?.requestBytes : undefined;
      size += read === undefined ? Buffer.byteLength(redacted) : read.length;
      out[key] = new RecordedRequest(
        method,
        redactUrl(url),
        redactUrl(path),
        redaction.headers(headers, draft.secretHeaders),
        keptBody(body, redacted, draft.kept?.request, texts, read),
      );
    } else if (key === "response") {
      const response = draft.response;
      if (!response) {
        out[key] = null;
        continue;
      }
      const redacted = redactBodyText(response.body);
      const sent = redacted === response.body ? draft.kept?.responseBytes : undefined;
      size += sent === undefined ? Buffer.byteLength(redacted) : sent.length;
      out[key] = new RecordedResponse(
        response.status,
        redaction.headers(response.headers),
        keptBody(response.body, redacted, draft.kept?.response, texts, sent),
      );
    } else if (key === "upstream") out[key] = draft.upstream === undefined ? undefined : redactUrl(draft.upstream);
    else if (key !== "secretHeaders" && key !== "kept") out[key] = draft[key as keyof CallDraft];
  }
  out.id = extra.id;
  out.workspace = extra.workspace;
  out.size = size;
  return out as unknown as CallRecord;
}
