// `npm run bundle`: the server as one ES module for the container image, so the
// runtime stage needs no node_modules tree (no package resolution at start, no
// thousands of files to read) and no TypeScript output.
//
//   bundle/uae-fhir-sandbox.mjs   src/cli/main.ts and every dependency, minified
//   bundle/r4-definitions.json    read at start beside the bundle (src/validation/r4/definitions.ts)
//   bundle/fhirpath-trees.json    read at start beside the bundle (src/validation/invariants/parse-expression.ts),
//                                 written into dist/ by scripts/parse-fhirpath-trees.mjs: `npm run build` runs both
//   bundle/assets/                the dashboard's client, stylesheet and rendered docs, read beside the module that
//                                 serves them (src/ui/assets.ts: ./assets/ from the bundle as from dist/ui/):
//                                 copied from dist/ui/assets, which scripts/build-ui.mjs writes earlier in the build
//   bundle/meta.json              esbuild's metafile: which inputs went in (checked by test/package/bundle.test.ts)
//
// No source maps: the image ships none.
import { copyFileSync, cpSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { build } from "esbuild";

const ROOT = new URL("../", import.meta.url);
const OUT = new URL("bundle/", ROOT);
const { version } = JSON.parse(readFileSync(new URL("package.json", ROOT), "utf8"));

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


mkdirSync(OUT, { recursive: true });
const result = await build({
  entryPoints: [new URL("src/cli/main.ts", ROOT).pathname],
  outfile: new URL("dev.mjs", OUT).pathname,
  bundle: true,
  platform: "node",
  format: "esm",
  target: "node20.19",
  minify: false,
  // Function and class names stay readable in stack traces.
  keepNames: true,
  legalComments: "none",
  metafile: true,
  logLevel: "warning",
  plugins: [inlineVersion, pinoWithoutTransports],
  // CommonJS dependencies (fhirpath's models) call require(); an ES module has none of its own.
  banner: { js: 'import { createRequire as __createRequire } from "node:module"; const require = __createRequire(import.meta.url);' },
});

// Without the trees the bundle still works, parsing each expression at start: a slower image, so refuse.
const trees = new URL("dist/validation/invariants/fhirpath-trees.json", ROOT);
if (!existsSync(trees)) throw new Error("dist/validation/invariants/fhirpath-trees.json is missing: run npm run build");

// Without them the dashboard answers every page with "not built": refuse as for the trees.
const assets = new URL("dist/ui/assets/", ROOT);
if (!existsSync(new URL("dashboard.js", assets))) throw new Error("dist/ui/assets is missing: run npm run build");


