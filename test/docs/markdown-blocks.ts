// The fenced blocks of a Markdown page, with their line numbers and the `<!-- doc-test: … -->` markers on the lines
// just before each fence. Markers are checked here, so a misspelt marker or a skip without a reason is an error rather
// than a block that silently runs (or silently does not).

export type Marker =
  | { kind: "skip"; reason: string }
  | { kind: "server" }
  | { kind: "background" }
  | { kind: "output" }
  | { kind: "log" };

export interface Block {
  /** 1-based line of the opening fence. */
  line: number;
  /** The info string's first word, lower case (`sh`, `json`, `text`, or "" for a bare fence). */
  lang: string;
  info: string;
  /** The block's content, without the fences. */
  text: string;
  markers: Marker[];
}

/** Languages whose blocks a reader runs in a shell: these are the blocks the page tests execute. */
export const SHELL_LANGS = new Set(["sh", "bash"]);

const FENCE = /^( {0,3})(`{3,}|~{3,})(.*)$/;
const MARKER = /^doc-test:\s*([a-z-]+)\s*(?:[—–:-]+\s*)?([\s\S]*)$/;

export function isShell(block: Block): boolean {
  return SHELL_LANGS.has(block.lang);
}

export function markerOf<K extends Marker["kind"]>(block: Block, kind: K): Extract<Marker, { kind: K }> | undefined {
  return block.markers.find((m) => m.kind === kind) as Extract<Marker, { kind: K }> | undefined;
}

/** The HTML comments on the lines directly above `index` (the fence), top to bottom. */
function commentsAbove(lines: readonly string[], index: number): string[] {
  const comments: string[] = [];
  let i = index - 1;
  while (i >= 0) {
    const end = (lines[i] as string).trim();
    if (!end.endsWith("-->")) break;
    let start = i;
    while (start >= 0 && !(lines[start] as string).includes("<!--")) start--;
    if (start < 0) break;
    const text = lines
      .slice(start, i + 1)
      .join("\n")
      .trim();
    const m = /^<!--([\s\S]*)-->$/.exec(text);
    if (!m) break;
    comments.unshift((m[1] as string).trim().replace(/\s+/g, " "));
    i = start - 1;
  }
  return comments;
}

function parseMarker(comment: string, where: string): Marker | undefined {
  if (!comment.startsWith("doc-test")) return undefined;
  const m = MARKER.exec(comment);
  const kind = m?.[1];
  const rest = (m?.[2] ?? "").trim();
  switch (kind) {
    case "skip":
      if (rest === "") throw new Error(`${where}: "doc-test: skip" needs a reason: <!-- doc-test: skip — <reason> -->`);
      return { kind, reason: rest };
    case "server":
    case "background":
    case "output":
    case "log":
      if (rest !== "") throw new Error(`${where}: "doc-test: ${kind}" takes no argument (got ${JSON.stringify(rest)})`);
      return { kind };
    default:
      throw new Error(
        `${where}: unknown marker ${JSON.stringify(comment)}; the markers are skip — <reason>, server, background, output, log`,
      );
  }
}

/** Every fenced block of `markdown`; `file` names the page in errors. Throws on a malformed marker or fence. */
export function parseBlocks(markdown: string, file = "page"): Block[] {
  const lines = markdown.split(/\r?\n/);
  const blocks: Block[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = FENCE.exec(lines[i] as string);
    if (!open) continue;
    const fence = open[2] as string;
    const info = (open[3] as string).trim();
    const start = i;
    let end = i + 1;
    while (end < lines.length) {
      const close = FENCE.exec(lines[end] as string);
      if (close && (close[2] as string).startsWith(fence) && (close[3] as string).trim() === "") break;
      end++;
    }
    if (end >= lines.length) throw new Error(`${file}:${start + 1}: the block opened here is never closed`);
    const markers = commentsAbove(lines, start)
      .map((c) => parseMarker(c, `${file}:${start + 1}`))
      .filter((m): m is Marker => m !== undefined);
    blocks.push({
      line: start + 1,
      lang: (info.split(/\s+/)[0] ?? "").toLowerCase(),
      info,
      text: lines.slice(start + 1, end).join("\n"),
      markers,
    });
    i = end;
  }
  checkMarkers(blocks, file);
  return blocks;
}

/** Markers that cannot mean anything where they are: an output with nothing before it to compare, a server on JSON. */
function checkMarkers(blocks: readonly Block[], file: string): void {
  let previousShell: Block | undefined;
  for (const block of blocks) {
    const where = `${file}:${block.line}`;
    const kinds = block.markers.map((m) => m.kind);
    if (new Set(kinds).size !== kinds.length) throw new Error(`${where}: a marker is given twice`);
    if (isShell(block)) {
      if (kinds.includes("output") || kinds.includes("log"))
        throw new Error(`${where}: output and log markers go on a json or text block, not on a ${block.lang} block`);
      if (kinds.length > 1) throw new Error(`${where}: a shell block takes one marker (got ${kinds.join(", ")})`);
      previousShell = block;
      continue;
    }
    if (kinds.includes("server") || kinds.includes("background") || kinds.includes("skip"))
      throw new Error(`${where}: skip, server and background go on sh or bash blocks, not on a ${block.lang} block`);
    if (kinds.length > 1) throw new Error(`${where}: one of output or log, not both`);
    if (kinds.length === 1) {
      if (previousShell === undefined) throw new Error(`${where}: an ${kinds[0]} block needs a shell block before it`);
      if (kinds[0] === "output" && block.lang !== "json" && block.lang !== "text")
        throw new Error(`${where}: an output block is json or text (got ${JSON.stringify(block.lang)})`);
      if (kinds[0] === "log" && block.lang !== "text") throw new Error(`${where}: a log block is text`);
      const skip = markerOf(previousShell, "skip");
      if (skip)
        throw new Error(
          `${where}: this ${kinds[0]} block follows the skipped block at line ${previousShell.line}, so it cannot be compared: drop its marker`,
        );
    }
  }
}
