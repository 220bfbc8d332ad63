// `npm run dev [-- serve flags]`: for people changing the code. Builds once if dist/ is not current (as `npm start`
// does), then recompiles src/ into dist/ on every change (tsc --watch) and restarts the server on every recompiled
// module it runs (node --watch). The dashboard's client and the container bundle are not rebuilt: `npm run build`
// for those. Ctrl-C stops both.
import { spawn, spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../", import.meta.url));
const node = process.execPath;
const run = (args, options = {}) => spawn(node, args, { cwd: ROOT, stdio: "inherit", ...options });

const built = spawnSync(node, ["scripts/build-stamp.mjs", "start"], { cwd: ROOT, stdio: "inherit" });
if (built.status !== 0) process.exit(built.status ?? 1);

const tsc = run([
  fileURLToPath(import.meta.resolve("typescript/bin/tsc")),
  "-p",
  "tsconfig.json",
  "--watch",
  "--preserveWatchOutput",
]);
// dist/ is current: the server starts now, and node restarts it when tsc rewrites a module it loaded.
const server = run(["--watch", "--watch-preserve-output", "dist/cli/main.js", "serve", ...process.argv.slice(2)]);

const stop = () => {
  tsc.kill("SIGTERM");
  server.kill("SIGTERM");
};
process.on("SIGINT", stop);
process.on("SIGTERM", stop);
let left = 2;
for (const child of [tsc, server]) {
  child.on("exit", () => {
    left--;
    // One ended on its own (tsc failed to start, say): stop the other too.
    if (left === 1) stop();
    if (left === 0) process.exit(0);
  });
}
