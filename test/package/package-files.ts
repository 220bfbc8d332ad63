import { readFileSync } from "node:fs";
import { posix } from "node:path";
import { ROOT } from "../cli/cli-process.js";

/**
 * The project's public home, from package.json's `repository` (npm's registry page and `npm publish --provenance`
 * read the same field): `https://github.com/OWNER/NAME`.
 */
export function repositoryHome(): string {
  const { repository } = JSON.parse(readFileSync(`${ROOT}package.json`, "utf8")) as { repository: { url: string } };
  const match = /^git\+(https:\/\/github\.com\/[\w.-]+\/[\w.-]+?)\.git$/.exec(repository.url);
  if (!match)
    throw new Error(`package.json repository.url is not git+https://github.com/OWNER/NAME.git: ${repository.url}`);
  return match[1] as string;
}

/** `ghcr.io/owner/name`: the image the release workflow pushes (the registry wants lower case). */
export function imageName(): string {
  return `ghcr.io/${repositoryHome().slice("https://github.com/".length).toLowerCase()}`;
}

/**
 * The links of a Markdown document at `doc` (a path in the package), outside code: `relative` — the files they
 * name, as package paths (anchors dropped) — and `home` — the repository paths of links to files on the
 * project's home (`HOME/blob/REF/path`, `HOME/tree/REF/path`).
 */
export function markdownLinks(text: string, doc: string): { relative: string[]; home: string[] } {
  const prose = text.replace(/^```[\s\S]*?^```$/gm, "").replace(/`[^`\n]*`/g, "");
  const home = repositoryHome();
  const out = { relative: [] as string[], home: [] as string[] };
  for (const [, target = ""] of prose.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
    const path = target.split("#")[0] as string;
    const onHome = new RegExp(`^${home.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}/(?:blob|tree)/[^/]+/(.+)$`).exec(path);
    if (onHome) out.home.push(onHome[1] as string);
    else if (path !== "" && !/^[a-z][a-z+.-]*:/i.test(path)) out.relative.push(posix.join(posix.dirname(doc), path));
  }
  return out;
}
