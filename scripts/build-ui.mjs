// Part of `npm run build`: the dashboard's browser code (src/ui/client, TypeScript with Hono's JSX for the DOM)
// bundled into one ES module, and its stylesheet, beside the compiled UI module that serves them:
//
//   dist/ui/assets/dashboard.js    src/ui/client/main.tsx and what it imports (hono/jsx/dom), minified
//   dist/ui/assets/dashboard.css   src/ui/client/dashboard.css
//   dist/ui/assets/docs/           the README and docs/ as HTML pages (scripts/render-docs.mjs)
//
// `node scripts/build-ui.mjs OUTDIR` writes them to another folder (a server bundle keeps its assets beside it).
import { copyFileSync, mkdirSync } from "node:fs";
import { build } from "esbuild";
import { renderDocs } from "./render-docs.mjs";

const ROOT = new URL("../", import.meta.url);
const out = process.argv[2] ? new URL(`${process.argv[2].replace(/\/?$/, "/")}`, `file://${process.cwd()}/`) : new URL("dist/ui/assets/", ROOT);

mkdirSync(out, { recursive: true });
await build({
  entryPoints: [new URL("src/ui/client/main.tsx", ROOT).pathname],
  outfile: new URL("dashboard.js", out).pathname,
  bundle: true,
  format: "esm",
  platform: "browser",
  // Browsers of the last few years; nothing is polyfilled.
  target: ["chrome109", "firefox115", "safari16"],
  minify: true,
  jsx: "automatic",
  jsxImportSource: "hono/jsx/dom",
  legalComments: "none",
  logLevel: "warning",
});
copyFileSync(new URL("src/ui/client/dashboard.css", ROOT), new URL("dashboard.css", out));
renderDocs(ROOT, new URL("docs/", out));
