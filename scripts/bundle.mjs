// `npm run bundle`: the server as one script for the container image, so the
// runtime stage needs no node_modules tree (no package resolution at start, no
// thousands of files to read) and no TypeScript output.
//
//   bundle/uae-fhir-sandbox.mjs   the entry, the image's command: runs server.cjs with its code cache
//                                 (a copy of scripts/bundle-entry.mjs)
//   bundle/server.cjs             src/cli/main.ts and every dependency, minified, as one CommonJS script: a script,
//                                 not an ES module, so that V8 can take a code cache for it (vm.Script)
//   bundle/server.code-cache      V8's code cache for server.cjs, made by this node (scripts/write-code-cache.mjs);
//                                 the image makes its own with the image's node
//   bundle/r4-definitions.json    read at start beside the bundle (src/validation/r4/definitions.ts)
//   bundle/fhirpath-trees.json    read at start beside the bundle (src/validation/invariants/parse-expression.ts),
//                                 written into dist/ by scripts/parse-fhirpath-trees.mjs: `npm run build` runs both
//   bundle/assets/                the dashboard's client, stylesheet and rendered docs, read beside the module that
//                                 serves them (src/ui/assets.ts: ./assets/ from the bundle as from dist/ui/):
//                                 copied from dist/ui/assets, which scripts/build-ui.mjs writes earlier in the build
//   bundle/meta.json              esbuild's metafile: which inputs went in (checked by test/package/bundle.test.ts)
//
// No source maps: the image ships none.
import { execFileSync } from "node:child_process";
import { copyFileSync, cpSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { build } from "esbuild";

const ROOT = new URL("../", import.meta.url);
const OUT = new URL("bundle/", ROOT);
const { version } = JSON.parse(readFileSync(new URL("package.json", ROOT), "utf8"));

const ENTRY = "uae-fhir-sandbox.mjs";

/**
 * src/version.ts reads ../package.json at run time (relative to the compiled
 * module); the bundle has no package.json beside it, so the version is written in.
 */
const inlineVersion = {
  name: "inline-version",
  setup(b) {
    b.onLoad({ filter: /[\\/]src[\\/]version\.ts$/ }, () => ({
      contents: `export const VERSION = ${JSON.stringify(version)};`,
      loader: "ts",
    }));
  },
};

/**
 * pino's transports run in a worker thread (thread-stream) that loads its targets by file name at run time, which a
 * bundle cannot do; the sandbox never uses them (src/log/request-log.ts hands pino its own destination). pino's
 * core stays; lib/transport.js, and with it thread-stream and its worker, is left out for a function that says so.
 */
const pinoWithoutTransports = {
  name: "pino-without-transports",
  setup(b) {
    b.onResolve({ filter: /^\.\/(lib\/)?transport$/ }, (args) =>
      /[\\/]node_modules[\\/]pino[\\/]/.test(args.importer) ? { path: "pino-transport", namespace: "stub" } : undefined,
    );
    b.onLoad({ filter: /^pino-transport$/, namespace: "stub" }, () => ({
      contents:
        'module.exports = function transport() { throw new Error("pino transports are not in the bundle: the sandbox writes to its own destination"); };',
      loader: "js",
    }));
  },
};

/**
 * zod's namespace object (`z`) carries every one of its ~50 message locales (`z.locales`), so bundling `z` keeps them
 * all: about 260 kB of the bundle that V8 compiles at every start. The sandbox uses zod's default, English (which
 * zod's schemas import directly, not through this index); the index is left with English alone.
 */
const zodEnglishOnly = {
  name: "zod-english-only",
  setup(b) {
    b.onResolve({ filter: /^\.\.\/locales\/index\.js$/ }, (args) =>
      /[\\/]node_modules[\\/]zod[\\/]/.test(args.importer)
        ? { path: "zod-locales", namespace: "stub", pluginData: join(args.resolveDir, "../locales") }
        : undefined,
    );
    b.onLoad({ filter: /^zod-locales$/, namespace: "stub" }, (args) => ({
      contents: 'export { default as en } from "./en.js";',
      resolveDir: args.pluginData,
      loader: "js",
    }));
  },
};

/**
 * JSON files bundled as `JSON.parse('…')`, not as object literals: V8 reads a JSON string far faster than the same
 * data as JavaScript source (fhirpath's R4 model is 0.5 MB of it).
 */
const jsonAsJsonParse = {
  name: "json-as-json-parse",
  setup(b) {
    b.onLoad({ filter: /\.json$/ }, (args) => ({
      contents: `module.exports = JSON.parse(${JSON.stringify(JSON.stringify(JSON.parse(readFileSync(args.path, "utf8"))))});`,
      loader: "js",
    }));
  },
};

rmSync(OUT, { recursive: true, force: true });
mkdirSync(OUT, { recursive: true });
const result = await build({
  entryPoints: [new URL("src/cli/main.ts", ROOT).pathname],
  outfile: new URL("server.cjs", OUT).pathname,
  bundle: true,
  platform: "node",
  format: "cjs",
  // The modules that read files beside themselves (the R4 definitions, the trees, the dashboard's assets) do so from
  // import.meta.url, which a CommonJS script has not: server.cjs's own URL instead (see PROLOGUE).
  define: { "import.meta.url": "__serverUrl" },
  target: "node20.19",
  minify: true,
  // Function and class names stay readable in stack traces.
  keepNames: true,
  legalComments: "none",
  metafile: true,
  logLevel: "warning",
  plugins: [inlineVersion, pinoWithoutTransports, zodEnglishOnly, jsonAsJsonParse],
});
// Strict mode for the whole script, as the ES modules it was made from are (a banner would come before esbuild's
// "use strict" and void it), and the URL for import.meta.url. Without src/cli/main.ts's #! line, which esbuild keeps
// and which is no JavaScript inside the entry's function wrapper.
const PROLOGUE = '"use strict";var __serverUrl=require("node:url").pathToFileURL(__filename).href;';
const server = new URL("server.cjs", OUT);
writeFileSync(server, PROLOGUE + readFileSync(server, "utf8").replace(/^#!.*\n/, ""));
copyFileSync(new URL("scripts/bundle-entry.mjs", ROOT), new URL(ENTRY, OUT));
copyFileSync(new URL("src/validation/r4/r4-definitions.json", ROOT), new URL("r4-definitions.json", OUT));
// Without the trees the bundle still works, parsing each expression at start: a slower image, so refuse.
const trees = new URL("dist/validation/invariants/fhirpath-trees.json", ROOT);
if (!existsSync(trees)) throw new Error("dist/validation/invariants/fhirpath-trees.json is missing: run npm run build");
copyFileSync(trees, new URL("fhirpath-trees.json", OUT));
// Without them the dashboard answers every page with "not built": refuse as for the trees.
const assets = new URL("dist/ui/assets/", ROOT);
if (!existsSync(new URL("dashboard.js", assets))) throw new Error("dist/ui/assets is missing: run npm run build");
cpSync(assets, new URL("assets/", OUT), { recursive: true });
writeFileSync(new URL("meta.json", OUT), JSON.stringify(result.metafile));
// Last: the training run serves from the finished bundle/ (data files and assets in place).
execFileSync(process.execPath, [new URL("scripts/write-code-cache.mjs", ROOT).pathname, OUT.pathname], {
  cwd: ROOT,
  stdio: "inherit",
});
