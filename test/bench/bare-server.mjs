// A baseline server for the benchmarks, run as its own process (pinned to a
// core by pinned.mjs): `node bare-server.mjs hono|node PATH CANNED_FILE`.
// It reads the request body and answers a canned FHIR JSON of about the size
// the sandbox sends; what the sandbox costs above it is its own work.
// Prints "listening on URL" like the CLI.
import { readFileSync } from "node:fs";
import { createServer } from "node:http";
import { createAdaptorServer } from "@hono/node-server";
import { Hono } from "hono";

const [kind, path, cannedFile] = process.argv.slice(2);
const canned = readFileSync(cannedFile, "utf8");
const FHIR_JSON = "application/fhir+json; charset=utf-8";

function nodeServer() {
  return createServer((req, res) => {
    const chunks = [];
    req.on("data", (chunk) => chunks.push(chunk));
    req.on("end", () => {
      Buffer.concat(chunks).toString("utf8");
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
