// Whether dist/ and bundle/ were built from the sources as they are now, so that `npm start` builds only when they
// were not (a full build takes a minute or more on a busy machine; a start should take a second or two).
//
//   node scripts/build-stamp.mjs begin   first step of `npm run build`: notes the sources' fingerprint as the build
//                                        reads them (in dist/.build-stamp.pending)
//   node scripts/build-stamp.mjs done    last step of `npm run build`: the build succeeded, so that fingerprint is
//                                        the build's (dist/.build-stamp)
//   node scripts/build-stamp.mjs start   `npm start`'s prestart: runs `npm run build` unless dist/.build-stamp
//                                        matches the sources now; says why when it builds
//   node scripts/build-stamp.mjs check   exit 0 when the build is current, 1 (and why) when it is not
//
// The fingerprint is each input file's path, size and modification time (not its content: reading every file would
// cost more than the check saves). A file edited, added or removed, a `git checkout` or `git pull`, a changed
// package-lock.json: all change it. Taken at the build's start, so an edit made while the build runs is built next time.
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, statSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../", import.meta.url));
const STAMP = join(ROOT, "dist", ".build-stamp");
const PENDING = `${STAMP}.pending`;

/** What the build reads: the code, the build's scripts and settings, and the pages the dashboard renders. */
const INPUTS = [
  "src",
  "scripts",
  "docs",
  "package.json",
  "package-lock.json",
  "tsconfig.json",
  "README.md",
  "scenarios/README.md",
];

/** The inputs' fingerprint: a hash of every file's path, size and modification time, in path order. */
function fingerprint() {
  const hash = createHash("sha256");
  const add = (path) => {
    let stat;
    try {
      stat = statSync(path);
    } catch {
      hash.update(`${relative(ROOT, path)} absent\n`);
      return;
    }
    if (stat.isDirectory()) {
      for (const name of readdirSync(path).sort()) add(join(path, name));
      return;
    }
    hash.update(`${relative(ROOT, path)} ${stat.size} ${stat.mtimeMs}\n`);
  };
  for (const input of INPUTS) add(join(ROOT, input));
  return hash.digest("hex");
}

const read = (file) => {
  try {
    return readFileSync(file, "utf8");
  } catch {
    return undefined;
  }
};

/** Why the build is not current, or undefined when it is. */
function staleness() {
  const stamp = read(STAMP);
  if (stamp === undefined || !existsSync(join(ROOT, "dist", "cli", "main.js"))) return "dist/ is not built yet";
  return stamp === fingerprint() ? undefined : "the sources changed since the last build";
}

const step = process.argv[2];
if (step === "begin") {
  mkdirSync(join(ROOT, "dist"), { recursive: true });
  writeFileSync(PENDING, fingerprint());
} else if (step === "done") {
  if (!existsSync(PENDING)) throw new Error("no dist/.build-stamp.pending: run the whole npm run build");
  renameSync(PENDING, STAMP);
} else if (step === "check") {
  const why = staleness();
  if (why !== undefined) console.error(why);
  process.exit(why === undefined ? 0 : 1);
} else if (step === "start") {
  const why = staleness();
  if (why !== undefined) {
    console.error(`${why}: building first (npm run build; a minute or two)`);
    const npm = process.env.npm_execpath;
    const built = npm
      ? spawnSync(process.execPath, [npm, "run", "build"], { cwd: ROOT, stdio: "inherit" })
      : spawnSync("npm", ["run", "build"], { cwd: ROOT, stdio: "inherit", shell: process.platform === "win32" });
    process.exit(built.status ?? 1);
  }
} else {
  console.error("usage: node scripts/build-stamp.mjs begin|done|start|check");
  process.exit(2);
}
