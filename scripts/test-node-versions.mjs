// `npm run test:node-versions`: the build and the test suite under each supported Node major other than the one
// that ran `npm test` (.ci/run runs both). The binaries come from the npm registry's `node-<platform>-<arch>`
// packages (the node binary ships inside the package), fetched once into a cache folder:
//
//   NODE_VERSIONS         the majors to run (default "22 24")
//   NODE_VERSIONS_CACHE   where the binaries are kept (default ~/.cache/uae-fhir-sandbox/node)
//
// Each major runs `npm run build` and `vitest run` with its node first on PATH, so npm, tsc, esbuild's wrapper,
// vitest and every child process the tests spawn (process.execPath) run on it. Exits 1 if any run fails.
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import { delimiter, join } from "node:path";

const ROOT = new URL("../", import.meta.url).pathname;
const MAJORS = (process.env.NODE_VERSIONS ?? "22 24").split(/\s+/).filter(Boolean);
const CACHE = process.env.NODE_VERSIONS_CACHE || join(homedir(), ".cache", "uae-fhir-sandbox", "node");
const PACKAGE = `node-${process.platform}-${process.arch}`;

/** Runs a command with inherited output; its exit status and wall time. */
function run(command, args, options = {}) {
  const started = performance.now();
  const result = spawnSync(command, args, { stdio: "inherit", ...options });
  if (result.error) throw result.error;
  return { ok: result.status === 0, seconds: (performance.now() - started) / 1000 };
}

/** The cached node binary of `major`, fetched from the registry (npm pack, then the binary taken out) if missing. */
function nodeOf(major) {
  const dir = join(CACHE, major);
  const bin = join(dir, "bin", "node");
  if (existsSync(bin)) return bin;
  const work = mkdtempSync(join(tmpdir(), "node-versions-"));
  try {
    console.log(`fetching ${PACKAGE}@${major} from the npm registry into ${dir}`);
    const pack = spawnSync("npm", ["pack", `${PACKAGE}@${major}`, "--json", "--pack-destination", work], {
      encoding: "utf8",
      stdio: ["ignore", "pipe", "inherit"],
    });
    if (pack.status !== 0) throw new Error(`npm pack ${PACKAGE}@${major} failed (exit ${pack.status})`);
    const [{ filename, version }] = JSON.parse(pack.stdout);
    const untar = spawnSync("tar", ["-xzf", join(work, filename), "-C", work, "package/bin/node"], {
      stdio: "inherit",
    });
    if (untar.status !== 0) throw new Error(`could not take bin/node out of ${filename}`);
    mkdirSync(join(dir, "bin"), { recursive: true });
    renameSync(join(work, "package", "bin", "node"), bin);
    writeFileSync(join(dir, "VERSION"), `${version}\n`);
    return bin;
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

/** Each failed test of a vitest JSON report as "file > name: first line of the message", so CI's tail names it. */
function failuresOf(report) {
  const failures = [];
  for (const file of report.testResults ?? []) {
    const where = file.name.startsWith(ROOT) ? file.name.slice(ROOT.length) : file.name;
    for (const test of file.assertionResults ?? []) {
      if (test.status !== "failed") continue;
      const message = (test.failureMessages ?? [])[0] ?? "";
      failures.push(`${where} > ${test.fullName}: ${message.split("\n")[0].slice(0, 300)}`);
    }
    // A file that failed before its tests ran (an import error, a hook) has no failed test of its own.
    if (file.status === "failed" && !(file.assertionResults ?? []).some((t) => t.status === "failed")) {
      failures.push(`${where}: ${(file.message ?? "failed").split("\n")[0].slice(0, 300)}`);
    }
  }
  return failures;
}

const results = [];
for (const major of MAJORS) {
  const bin = nodeOf(major);
  const env = { ...process.env, PATH: `${join(bin, "..")}${delimiter}${process.env.PATH}` };
  const version = spawnSync("node", ["--version"], { env, encoding: "utf8" }).stdout.trim();
  if (!version.startsWith(`v${major}.`)) throw new Error(`node on PATH is ${version}, expected ${major}.x`);
  console.log(`\n== Node ${version}: npm run build, then vitest run ==\n`);
  const build = run("npm", ["run", "build"], { cwd: ROOT, env });
  const report = join(mkdtempSync(join(tmpdir(), "node-versions-report-")), "vitest.json");
  const suite = build.ok
    ? run("npx", ["vitest", "run", "--reporter=default", "--reporter=json", `--outputFile.json=${report}`], {
        cwd: ROOT,
        env,
      })
    : { ok: false, seconds: 0 };
  const counts = existsSync(report) ? JSON.parse(readFileSync(report, "utf8")) : {};
  rmSync(join(report, ".."), { recursive: true, force: true });
  results.push({
    version,
    build,
    suite,
    tests: { passed: counts.numPassedTests ?? 0, failed: counts.numFailedTests ?? 0 },
    failures: failuresOf(counts),
  });
}

console.log("\n| node | build | test suite (wall) | tests passed / failed |\n|---|---|---|---|");
for (const { version, build, suite, tests } of results) {
  const cell = (r) => `${r.ok ? "passed" : "**failed**"}, ${r.seconds.toFixed(0)} s`;
  console.log(
    `| ${version} | ${cell(build)} | ${suite.seconds > 0 ? cell(suite) : "not run"} | ${tests.passed} / ${tests.failed} |`,
  );
}
for (const { version, failures } of results) {
  for (const failure of failures) console.log(`failed on ${version}: ${failure}`);
}
// The plain closing line CI reads: the tests of every run together (a build that failed counts as one failure).
const passed = results.reduce((sum, r) => sum + r.tests.passed, 0);
const failed = results.reduce((sum, r) => sum + r.tests.failed + (r.build.ok ? 0 : 1), 0);
console.log(`\nnode-versions: ${passed} passed, ${failed} failed`);
process.exit(results.every((r) => r.build.ok && r.suite.ok) ? 0 : 1);
