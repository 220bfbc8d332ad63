// node scripts/write-code-cache.mjs [BUNDLE_DIR]: writes BUNDLE_DIR/server.code-cache (default: bundle/), V8's code
// cache for server.cjs, which bundle/uae-fhir-sandbox.mjs uses at start (see scripts/bundle-entry.mjs).
//
// A training run of the image's command, from the current directory (its scenarios/ loaded, as at a real start):
// serve on a free port, answer one add-allergy message (the one `example add-allergy` prints), stop on SIGTERM; the
// entry writes the cache at exit, holding what that run compiled. V8 takes the cache only from the same node binary
// with the same V8 flags: run this with the node and NODE_OPTIONS that will run the bundle (npm run build does with
// this machine's node; the Dockerfile's runtime stage with the image's node and NODE_OPTIONS). Needs only node.
import { execFileSync, spawn } from "node:child_process";
import { existsSync, rmSync } from "node:fs";
import { resolve } from "node:path";

const DIR = resolve(process.argv[2] ?? "bundle");
const ENTRY = resolve(DIR, "uae-fhir-sandbox.mjs");
const CACHE = resolve(DIR, "server.code-cache");
/** Generous: the release builds the arm64 image under emulation, where node starts many times slower. */
const TIMEOUT_MS = 120_000;
const MESSAGE_PATH = "/uae-fhir/r4/$process-message";

// The sandbox's own settings from this environment (AUTH, ADMIN_TOKEN, ...) could refuse the message: only
// NODE_OPTIONS is kept, as the V8 flags the cache is made for.
const env = process.env.NODE_OPTIONS === undefined ? {} : { NODE_OPTIONS: process.env.NODE_OPTIONS };

// A cache from another build would be refused anyway; without one, the training run compiles as a first start does.
rmSync(CACHE, { force: true });
const message = execFileSync(process.execPath, [ENTRY, "example", "add-allergy"], {
  encoding: "utf8",
  // Its stderr says where to post the message: not for the build's output (execFileSync's error carries it).
  stdio: ["ignore", "pipe", "pipe"],
  env,
  timeout: TIMEOUT_MS,
});

const child = spawn(process.execPath, [ENTRY, "serve", "--port", "0", "--host", "127.0.0.1"], {
  env: { ...env, UAE_FHIR_SANDBOX_WRITE_CODE_CACHE: "1" },
  stdio: ["ignore", "pipe", "inherit"],
});
const timer = setTimeout(() => {
  child.kill("SIGKILL");
  console.error(`write-code-cache: no answer from ${ENTRY} within ${TIMEOUT_MS} ms`);
  process.exitCode = 1;
}, TIMEOUT_MS);
const exited = new Promise((done) => child.on("exit", (code, signal) => done(code ?? signal)));

const url = await new Promise((done, fail) => {
  let seen = "";
  child.stdout.on("data", (chunk) => {
    seen += chunk;
    const found = /listening on (http:\/\/[^\s"]+)/.exec(seen)?.[1];
    if (found) done(found);
  });
  child.on("exit", () => fail(new Error(`${ENTRY} stopped before listening:\n${seen}`)));
});
const answer = await fetch(`${url}${MESSAGE_PATH}`, {
  method: "POST",
  headers: { "content-type": "application/json" },
  body: message,
});
const answerText = await answer.text();
child.kill("SIGTERM");
const ended = await exited;
clearTimeout(timer);
if (answer.status !== 200)
  throw new Error(`write-code-cache: the message was answered ${answer.status}: ${answerText.slice(0, 500)}`);
if (ended !== 0) throw new Error(`write-code-cache: ${ENTRY} exited with ${ended}`);
if (!existsSync(CACHE)) throw new Error(`write-code-cache: ${CACHE} was not written`);
