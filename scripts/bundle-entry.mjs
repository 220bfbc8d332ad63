// bundle/uae-fhir-sandbox.mjs, the image's command (scripts/bundle.mjs copies this file there): runs server.cjs, the
// sandbox's CLI and every dependency in one script, with the V8 code cache beside it when V8 takes it.
//
// Why: compiling the 2.4 MB bundle and the functions a start runs is about a quarter of a cold start. V8 skips that
// work for a script compiled with a code cache: bytecode it serialized after an earlier run of the same source. Node's
// own compile cache (module.enableCompileCache) is Node 22.1+ only and caches what compiling produced, not what the run
// compiled afterwards; vm.Script takes a cache on every supported Node.
//
// server.code-cache is written by scripts/write-code-cache.mjs (npm run build, and the image's build): it runs this
// entry with UAE_FHIR_SANDBOX_WRITE_CODE_CACHE=1, which serves one message and stops, and the cache is written at
// exit. V8 refuses a cache from another node binary or other V8 flags (in NODE_OPTIONS too; Node 20 and 22 count
// --max-old-space-size, Node 24 does not): the script is then compiled as without a cache, which only costs time. The cache starts with the CRC-32 of the
// source it was made from, as V8 checks only the source's length.
//
// NODE_DEBUG=code-cache says whether the cache was used.
import { readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import { debuglog } from "node:util";
import { Script } from "node:vm";
import { crc32 } from "node:zlib";

const SERVER = fileURLToPath(new URL("./server.cjs", import.meta.url));
const CACHE = fileURLToPath(new URL("./server.code-cache", import.meta.url));
const debug = debuglog("code-cache");

const source = readFileSync(SERVER);
const checksum = crc32(source);

/** The cache for exactly this source, or undefined (none, or made from other source). */
function cacheForSource() {
  let file;
  try {
    file = readFileSync(CACHE);
  } catch {
    debug("no cache at %s", CACHE);
    return undefined;
  }
  if (file.length < 4 || file.readUInt32LE(0) !== checksum) {
    debug("%s was made from other source: not used", CACHE);
    return undefined;
  }
  return file.subarray(4);
}

const cachedData = cacheForSource();
// The CommonJS wrapper, on the first line so that stack traces keep server.cjs's line numbers.
const script = new Script(`(function (exports, require, module, __filename, __dirname) {${source.toString("utf8")}\n})`, {
  filename: SERVER,
  cachedData,
});
// V8 says whether it took the cache (cachedDataRejected: false), once it was given one.
if (cachedData) debug(script.cachedDataRejected === false ? "cache used" : "V8 refused the cache (another node or other flags)");

if (process.env.UAE_FHIR_SANDBOX_WRITE_CODE_CACHE === "1") {
  // After the run: the cache then holds the functions the run compiled too, not only the top level.
  process.on("exit", () => {
    const data = script.createCachedData();
    const header = Buffer.alloc(4);
    header.writeUInt32LE(checksum, 0);
    writeFileSync(CACHE, Buffer.concat([header, data]));
  });
}

const module = { exports: {} };
script.runInThisContext()(module.exports, createRequire(SERVER), module, SERVER, fileURLToPath(new URL(".", import.meta.url)));
module.exports.runAsProcess();
