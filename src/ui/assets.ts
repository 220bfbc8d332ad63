import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";

/**
 * What `npm run build` writes beside the compiled UI module (scripts/build-ui.mjs): the client bundle, its CSS,
 * and the documentation as HTML pages with their images. Only names of these shapes are ever read.
 */
const SHAPES: Array<[RegExp, string]> = [
  [/^dashboard\.js$/, "text/javascript; charset=utf-8"],
  [/^dashboard\.css$/, "text/css; charset=utf-8"],
  [/^docs\/[a-z0-9-]+\.html$/, "text/html; charset=utf-8"],
  [/^docs\/images\/[a-z0-9-]+\.png$/, "image/png"],
];

export interface Asset {
  body: Uint8Array<ArrayBuffer>;
  type: string;
  etag: string;
}

const loaded = new Map<string, Asset | null>();

/**
 * A dashboard asset from the package (no CDN, no network), read once. Null
 * for a name that is not an asset, or when the build has not made it (the
 * TypeScript sources run without a build: the pages then say so).
 *
 * @example
 *   asset("docs/pharmacy-guide.html")?.type // "text/html; charset=utf-8"
 */
export function asset(name: string): Asset | null {
  const type = SHAPES.find(([shape]) => shape.test(name))?.[1];
  if (type === undefined) return null;
  let found = loaded.get(name);
  if (found === undefined) {
    try {
      const body = new Uint8Array(readFileSync(new URL(`./assets/${name}`, import.meta.url)));
      found = { body, type, etag: `"${createHash("sha256").update(body).digest("base64url").slice(0, 22)}"` };
    } catch {
      found = null;
    }
    loaded.set(name, found);
  }
  return found;
}
