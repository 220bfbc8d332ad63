// `npm run dev [-- serve flags]`: for people changing the code. Builds once if dist/ is not current (as `npm start`
// does) and serves; then recompiles src/ into dist/ on every change (tsc --watch) and restarts the server after each
// compile without errors, once (node --watch would restart it for every file tsc writes). The dashboard's client and
// the container bundle are not rebuilt: `npm run build` for those. Ctrl-C stops both.
import { spawn, spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../", import.meta.url));
const node = process.execPath;
const flags = process.argv.slice(2);

const built = spawnSync(node, ["scripts/build-stamp.mjs", "start"], { cwd: ROOT, stdio: "inherit" });
if (built.status !== 0) process.exit(built.status ?? 1);

let server;
let stopping = false;
/** Starts the server, after the one running (if any) has stopped. */
function restart() {
  const start = () => {
    server = spawn(node, ["dist/cli/main.js", "serve", ...flags], { cwd: ROOT, stdio: "inherit" });
  };
  if (!server || server.exitCode !== null || server.signalCode !== null) return start();
  server.once("exit", () => {
    if (!stopping) start();
  });
  server.kill("SIGTERM");
}

restart();
const tsc = spawn(
  node,
  [fileURLToPath(import.meta.resolve("typescript/bin/tsc")), "-p", "tsconfig.json", "--watch", "--preserveWatchOutput"],
  { cwd: ROOT, stdio: ["ignore", "pipe", "inherit"] },
);
// tsc's first compile rewrites dist/ as it already is: the server started from it keeps running.
let compiles = 0;
tsc.stdout.setEncoding("utf8").on("data", (text) => {
  process.stdout.write(text);
  for (const [, errors] of text.matchAll(/Found (\d+) errors?\. Watching for file changes\./g)) {
    compiles++;
    if (compiles > 1 && errors === "0") {
      console.log("dev: src/ recompiled; restarting the server");
      restart();
    }
  }
});

const stop = () => {
  stopping = true;
  tsc.kill("SIGTERM");
  server?.kill("SIGTERM");
};
process.on("SIGINT", stop);
process.on("SIGTERM", stop);
tsc.on("exit", () => {
  stopping = true;
  server?.kill("SIGTERM");
  if (!server || server.exitCode !== null || server.signalCode !== null) process.exit(0);
  server.once("exit", () => process.exit(0));
});
