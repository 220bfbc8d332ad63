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

/** A side's body length in characters, without reading a kept body's text (a packed one would be inflated). */
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

/** A body as the record keeps it: the text the duplicate memory kept already, when redaction left it as it is. */
function keptBody(sent: string, redacted: string, shared: KeptText | undefined, texts: PackedTexts): KeptText {
  return shared !== undefined && redacted === sent && shared.length === sent.length ? shared : texts.keep(redacted);
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
      size += Buffer.byteLength(redacted);
      out[key] = new RecordedRequest(
        method,
        redactUrl(url),
        redactUrl(path),
        redaction.headers(headers, draft.secretHeaders),
        keptBody(body, redacted, draft.kept?.request, texts),
      );
    } else if (key === "response") {
      const response = draft.response;
      if (!response) {
        out[key] = null;
        continue;
      }
      const redacted = redactBodyText(response.body);
      // Measured by the bytes the edge wrote, when it wrote this very text.
      const sent = redacted === response.body ? draft.kept?.responseBytes : undefined;
      size += sent === undefined ? Buffer.byteLength(redacted) : sent.length;
      out[key] = new RecordedResponse(
        response.status,
        redaction.headers(response.headers),
        keptBody(response.body, redacted, draft.kept?.response, texts),
      );
    } else if (key === "upstream") out[key] = draft.upstream === undefined ? undefined : redactUrl(draft.upstream);
    else if (key !== "secretHeaders" && key !== "kept") out[key] = draft[key as keyof CallDraft];
  }
  out.id = extra.id;
  out.workspace = extra.workspace;
  out.size = size;
  return out as unknown as CallRecord;
}
