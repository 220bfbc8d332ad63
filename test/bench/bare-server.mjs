// A baseline server for the benchmarks, run as its own process (pinned to a
// core by pinned.mjs): `node bare-server.mjs hono|node PATH CANNED_FILE`.
// It reads the request body and answers a canned FHIR JSON of about the size
// the sandbox sends; what the sandbox costs above it is its own work.
// Prints "listening on URL" like the CLI. With BENCH_EXTRA_ARRAYS=n (the
// allocation section's check of its method), the node:http server also
// allocates n arrays of 1,022 slots per request: 8,224 bytes each (a 32-byte
// JSArray and a 16 + 1,022 × 8-byte FixedArray), kept until the next request.
import { readFileSync } from "node:fs";
import { createServer } from "node:http";
import { createAdaptorServer } from "@hono/node-server";
import { Hono } from "hono";

const [kind, path, cannedFile] = process.argv.slice(2);
const canned = readFileSync(cannedFile, "utf8");
const FHIR_JSON = "application/fhir+json; charset=utf-8";
const extraArrays = Number(process.env.BENCH_EXTRA_ARRAYS ?? 0);

/** The extra arrays, and the array that holds them (16 + 8n bytes), kept where no optimization can drop them. */
function allocateExtra() {
  const arrays = new Array(extraArrays);
  for (let i = 0; i < extraArrays; i++) arrays[i] = new Array(1022);
  globalThis.benchKept = arrays;
}

function nodeServer() {
  return createServer((req, res) => {
    const chunks = [];
    req.on("data", (chunk) => chunks.push(chunk));
    req.on("end", () => {
      Buffer.concat(chunks).toString("utf8");
      if (extraArrays > 0) allocateExtra();
      res.writeHead(200, { "content-type": FHIR_JSON, "content-length": Buffer.byteLength(canned) });
      res.end(canned);
    });
  });
}

function honoServer() {
  const app = new Hono();
  app.post(path, async (c) => {
    await c.req.text();
    return c.body(canned, 200, { "content-type": FHIR_JSON });
  });
  return createAdaptorServer({ fetch: app.fetch });
}

const servers = { node: nodeServer, hono: honoServer };
if (!servers[kind]) throw new Error(`unknown bare server ${kind}; known: ${Object.keys(servers).join(", ")}`);
const server = servers[kind]();
server.listen(0, "127.0.0.1", () => console.log(`listening on http://127.0.0.1:${server.address().port}`));
process.on("SIGTERM", () => server.close(() => process.exit(0)));
