// The README and the guides as HTML pages the sandbox serves at /__admin/ui/docs/ (no network, no markdown
// library at run time): rendered once by `npm run build` (scripts/build-ui.mjs) with marked.
//
//   README.md                  → docs/index.html       (/__admin/ui/docs/)
//   docs/NAME.md               → docs/NAME.html        (/__admin/ui/docs/NAME)
//   scenarios/README.md        → docs/scenarios-folder.html
//   docs/images/*              → docs/images/*
//
// Links between them are rewritten to those pages; a link to any other file of the repository becomes its text.
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { posix } from "node:path";
import { Marked } from "marked";

/** Source file (relative to the repository) → page name. */
function pagesOf(root) {
  const pages = new Map([["README.md", "index"]]);
  for (const file of readdirSync(new URL("docs/", root)).sort())
    if (file.endsWith(".md")) pages.set(`docs/${file}`, file.slice(0, -3));
  if (existsSync(new URL("scenarios/README.md", root))) pages.set("scenarios/README.md", "scenarios-folder");
  return pages;
}

/** GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens, repeats numbered. */
function slugger() {
  const seen = new Map();
  return (text) => {
    const base = text
      .toLowerCase()
      .replace(/<[^>]*>/g, "")
      .replace(/[^\p{L}\p{N}\s_-]/gu, "")
      .replace(/\s/g, "-");
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    return n === 0 ? base : `${base}-${n}`;
  };
}

const escapeHtml = (text) =>
  text.replaceAll("&", "&amp;").replaceAll("<", "&lt;").replaceAll(">", "&gt;").replaceAll('"', "&quot;");

function page({ title, body, pages, current }) {
  const nav = [...pages]
    .map(([, name]) => {
      const href = name === "index" ? "./" : name;
      const label = name === "index" ? "README" : name;
      return `<li><a href="${href}"${name === current ? ' aria-current="page"' : ""}>${label}</a></li>`;
    })
    .join("");
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="icon" href="data:,"><title>${escapeHtml(title)} · uae-fhir-sandbox docs</title>
<link rel="stylesheet" href="../assets/dashboard.css"></head>
<body><a class="skip-link" href="#main">Skip to content</a>
<header class="top"><p class="brand"><a href="../">uae-fhir-sandbox</a> <span class="version">documentation</span></p>
<nav aria-label="Documentation"><ul>${nav}</ul></nav></header>
<main id="main" class="doc">${body}</main></body></html>
`;
}

/**
 * Renders the documentation into `out` (a folder URL).
 *
 * @param {URL} root the repository
 * @param {URL} out where the pages go
 */
export function renderDocs(root, out) {
  const pages = pagesOf(root);
  mkdirSync(new URL("images/", out), { recursive: true });
  for (const [source, name] of pages) {
    const dir = posix.dirname(source);
    const slug = slugger();
    const marked = new Marked({
      gfm: true,
      walkTokens(token) {
        if (token.type !== "link" && token.type !== "image") return;
        const href = token.href;
        if (/^[a-z][a-z0-9+.-]*:/i.test(href) || href.startsWith("#")) return;
        const [path, anchor] = href.split("#");
        const target = posix.normalize(posix.join(dir, path));
        const hash = anchor === undefined ? "" : `#${anchor}`;
        if (pages.has(target)) {
          const to = pages.get(target);
          token.href = `${to === "index" ? "./" : to}${hash}`;
        } else if (token.type === "image" && target.startsWith("docs/images/")) {
          token.href = `images/${posix.basename(target)}`;
        } else {
          // Not a page here (a source file, the Dockerfile): said, not linked.
          token.href = "";
        }
      },
      renderer: {
        heading({ tokens, depth }) {
          const html = this.parser.parseInline(tokens);
          return `<h${depth} id="${slug(html)}">${html}</h${depth}>\n`;
        },
        link({ href, tokens }) {
          const text = this.parser.parseInline(tokens);
          return href === "" ? text : `<a href="${escapeHtml(href)}">${text}</a>`;
        },
        html({ text }) {
          // Raw HTML of the markdown is shown as text: the pages carry only what marked makes.
          return escapeHtml(text);
        },
      },
    });
    const markdown = readFileSync(new URL(source, root), "utf8");
    const title = /^# (.+)$/m.exec(markdown)?.[1] ?? name;
    writeFileSync(new URL(`${name}.html`, out), page({ title, body: marked.parse(markdown), pages, current: name }));
  }
  const images = new URL("docs/images/", root);
  if (existsSync(images))
    for (const file of readdirSync(images)) copyFileSync(new URL(file, images), new URL(`images/${file}`, out));
}
