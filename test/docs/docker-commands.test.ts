import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join, posix } from "node:path";
import { describe, expect, it } from "vitest";
import { ROOT } from "../cli/cli-process.js";

// The docs' `docker run … uae-fhir-sandbox <command>` lines cannot run here (no container engine; their blocks are
// skip-marked), so what they name is checked against the image's layout instead: the runtime stage's WORKDIR and
// COPY lines of the Dockerfile, and the folders the command itself mounts. A command naming a file the image does not
// have (`node dist/cli/main.js …` in an image that ships bundle/, not dist/) fails here.

const PAGES = [
  "README.md",
  ...readdirSync(join(ROOT, "docs"))
    .filter((f) => f.endsWith(".md"))
    .sort()
    .map((f) => `docs/${f}`),
];

/** The last stage's instructions (the image that is run), `\` continuations joined, comments dropped. */
function runtimeStage(dockerfile: string): Array<{ keyword: string; args: string }> {
  const joined = dockerfile
    .split("\n")
    .filter((l) => !l.trim().startsWith("#"))
    .join("\n")
    .replace(/\\\n/g, " ");
  const instructions = joined
    .split("\n")
    .map((l) => /^\s*(\S+)\s*(.*)$/.exec(l))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => ({ keyword: (m[1] as string).toUpperCase(), args: (m[2] as string).trim() }));
  const from = instructions.findLastIndex((i) => i.keyword === "FROM");
  return instructions.slice(from);
}

interface Layout {
  workdir: string;
  /** Image path → where its content comes from in this repository (the build stage's /app is the built checkout). */
  copied: Map<string, string | undefined>;
}

function imageLayout(): Layout {
  const stage = runtimeStage(readFileSync(join(ROOT, "Dockerfile"), "utf8"));
  const workdir = stage.findLast((i) => i.keyword === "WORKDIR")?.args ?? "/";
  const copied = new Map<string, string | undefined>();
  for (const copy of stage.filter((i) => i.keyword === "COPY")) {
    const words = copy.args.split(/\s+/).filter((w) => !w.startsWith("--") || w.startsWith("--from="));
    const fromBuild = words[0]?.startsWith("--from=") ?? false;
    const sources = words.slice(fromBuild ? 1 : 0, -1);
    const target = posix.resolve(workdir, words.at(-1) as string);
    for (const source of sources) {
      const inImage = (words.at(-1) as string).endsWith("/") ? posix.join(target, posix.basename(source)) : target;
      const repo = fromBuild
        ? source.startsWith(`${workdir}/`)
          ? join(ROOT, source.slice(workdir.length + 1))
          : undefined
        : join(ROOT, source);
      copied.set(inImage, repo);
    }
  }
  return { workdir, copied };
}

/** Whether `path` (absolute, in the image) is there: copied, inside a copied folder, or a folder above one. */
function inImage(layout: Layout, path: string): boolean {
  for (const [at, repo] of layout.copied) {
    if (path === at || at.startsWith(`${path}/`)) return true;
    if (path.startsWith(`${at}/`) && repo !== undefined && existsSync(join(repo, path.slice(at.length + 1))))
      return true;
  }
  return false;
}

/** Shell words of a command line (single and double quotes, no expansion). */
function words(line: string): string[] {
  return [...line.matchAll(/'([^']*)'|"((?:[^"\\]|\\.)*)"|(\S+)/g)].map((m) => m[1] ?? m[2] ?? m[3] ?? "");
}

/** Options of `docker run` that take no value; every other option takes one (`-p 8080:8080`, `-v a:b`). */
const FLAGS = new Set(["--rm", "-d", "--detach", "-i", "-t", "-it", "-ti", "--init", "--read-only", "--interactive"]);
const IMAGE = /(^|\/)uae-fhir-sandbox(:[\w.-]+)?$/;

interface DockerCommand {
  where: string;
  text: string;
  /** Container paths of the -v / --volume mounts. */
  mounts: string[];
  /** What runs instead of the image's CMD: the program and its arguments (empty: the CMD). */
  command: string[];
}

/** Every `docker run` of the image in `markdown` (blocks and inline code), with `\` continuations joined. */
function dockerRuns(markdown: string, page: string): DockerCommand[] {
  const lines = markdown.split("\n");
  const out: DockerCommand[] = [];
  lines.forEach((line, i) => {
    const at = line.indexOf("docker run ");
    if (at < 0) return;
    let text = line.slice(at);
    for (let j = i + 1; text.trimEnd().endsWith("\\") && j < lines.length; j++)
      text = `${text.trimEnd().slice(0, -1)} ${lines[j]?.trim()}`;
    // Up to the end of an inline code span, a comment or the end of the command.
    text = text
      .split("`")[0]
      ?.split(/\s#\s/)[0]
      ?.split(/\s(?:&&|\|\||;|\|)\s/)[0] as string;
    const w = words(text).slice(2);
    const mounts: string[] = [];
    let k = 0;
    for (; k < w.length; k++) {
      const word = w[k] as string;
      if (!word.startsWith("-")) break;
      if (FLAGS.has(word) || word.includes("=")) continue;
      const value = w[++k] ?? "";
      if (word === "-v" || word === "--volume") mounts.push(value.split(":")[1] ?? "");
    }
    const image = w[k];
    if (image === undefined || !IMAGE.test(image)) return;
    out.push({ where: `${page}:${i + 1}`, text: text.trim(), mounts, command: w.slice(k + 1) });
  });
  return out;
}

const looksLikePath = (w: string) => !w.startsWith("-") && /^[\w.$/-]+$/.test(w) && /\/|\.(m|c)?js$/.test(w);

/** What a command names that the image does not have. */
function missingInImage(run: DockerCommand, layout: Layout): string[] {
  const [program, ...args] = run.command;
  if (program === undefined) return [];
  const problems: string[] = [];
  if (program === "node" && !inImage(layout, "/usr/local/bin/node")) problems.push("node is not in the image");
  for (const arg of args.filter(looksLikePath)) {
    const path = posix.resolve(layout.workdir, arg);
    const mounted = run.mounts.some((m) => path === m || path.startsWith(`${m}/`));
    if (!mounted && !inImage(layout, path))
      problems.push(
        `${arg} (${path}) is not in the image: the Dockerfile's runtime stage copies ${[...layout.copied.keys()].join(", ")}`,
      );
  }
  return problems;
}

describe("the docs' docker commands name what the image has", () => {
  const layout = imageLayout();

  it("reads the image's layout from the Dockerfile: the bundle and the scenarios under /app", () => {
    expect(layout.workdir).toBe("/app");
    expect(inImage(layout, "/app/bundle/uae-fhir-sandbox.mjs")).toBe(true);
    expect(inImage(layout, "/app/scenarios/10-magic-patients.yaml")).toBe(true);
    expect(inImage(layout, "/app/dist/cli/main.js")).toBe(false);
  });

  it("finds a command that names no file of the image (the one scenarios.md once showed)", () => {
    const [old] = dockerRuns(
      '`docker run --rm -v "$PWD/scenarios:/app/scenarios:ro" uae-fhir-sandbox node dist/cli/main.js validate /app/scenarios`.',
      "old",
    );
    expect(old?.mounts).toEqual(["/app/scenarios"]);
    expect(old?.command).toEqual(["node", "dist/cli/main.js", "validate", "/app/scenarios"]);
    expect(missingInImage(old as DockerCommand, layout)).toEqual([expect.stringMatching(/^dist\/cli\/main\.js /)]);
  });

  it.each(PAGES)("%s", (page) => {
    const runs = dockerRuns(readFileSync(join(ROOT, page), "utf8"), page);
    const problems = runs.flatMap((run) => missingInImage(run, layout).map((p) => `${run.where}: ${run.text}\n  ${p}`));
    expect(problems).toEqual([]);
    // The validate command of the scenarios page is found and runs a file of the image.
    if (page === "docs/scenarios.md")
      expect(runs.map((r) => r.command.slice(0, 3))).toContainEqual([
        "node",
        "bundle/uae-fhir-sandbox.mjs",
        "validate",
      ]);
  });
});
