import { watch as fsWatch, type Stats, statSync } from "node:fs";
import type { YamlProblem } from "../config/yaml-file.js";
import type { OperationNames } from "../routing/operation-names.js";
import { type LoadedScenario, type LoadOptions, loadScenarioFolder, type ScenarioLoad } from "./load.js";
import { RuleSet } from "./rules.js";
import { watchPath } from "./watch-path.js";

/** What made a load: the start, a change the watch saw, or a request (POST /__admin/scenarios/reload). */
export type LoadCause = "start" | "file-change" | "admin";

export interface ScenarioEvents {
  /** The folder was (re)loaded; `problems` is empty when the new set is serving. */
  onLoad(result: { ok: boolean; problems: YamlProblem[] }, cause: LoadCause): void;
  /** Watching for changes failed somewhere: changes there are not picked up. */
  onWatchError(message: string): void;
}

export interface ScenarioFolderDeps {
  now(): Date;
  events?: ScenarioEvents;
  /** What `when.operation` may name; default the built-in catalogue's operations. */
  operations?: OperationNames;
  /** Largest scenario document, bytes (--max-scenario-file); default DEFAULT_OPTIONS.maxScenarioFile. */
  maxFileBytes?: number;
  /** fs.watch, replaceable in tests. */
  fsWatch?: typeof fsWatch;
}

/**
 * The scenario files of `--scenarios`: loaded, compiled once and shared,
 * read-only, by every workspace (each keeps its own runtime rules and hit
 * counts: Scenarios). A reload replaces the whole set and bumps `version`;
 * on problems the previous set keeps serving.
 */
export class ScenarioFolder {
  #scenarios: LoadedScenario[] = [];
  #rules = new RuleSet([]);
  #problems: YamlProblem[] = [];
  #loadedAt: Date | undefined;
  #version = 0;
  /** What the last successful load read: a folder, a file, or nothing (it did not exist). */
  #loadedFrom: "folder" | "file" | undefined;

  constructor(
    readonly folder: string | undefined,
    private readonly deps: ScenarioFolderDeps,
  ) {}

  /** How documents are loaded, the folder's and those added at run time alike. */
  get loadOptions(): LoadOptions {
    return {
      ...(this.deps.operations ? { names: this.deps.operations } : {}),
      ...(this.deps.maxFileBytes !== undefined ? { maxBytes: this.deps.maxFileBytes } : {}),
    };
  }

  /** The loaded files, in file order. */
  get scenarios(): readonly LoadedScenario[] {
    return this.#scenarios;
  }

  /** Their rules, indexed. */
  get rules(): RuleSet {
    return this.#rules;
  }

  /** Changes at each successful load: what was built from the files before is stale. */
  get version(): number {
    return this.#version;
  }

  /** The problems of the last load (none when it serves). */
  get problems(): readonly YamlProblem[] {
    return this.#problems;
  }

  get loadedAt(): Date | undefined {
    return this.#loadedAt;
  }

  /**
   * Loads the folder; on problems the previous set keeps serving. A folder
   * (or file) missing at start means none; one that goes away after it was
   * loaded is a problem, so that what it held keeps serving until it is back.
   */
  reload(cause: LoadCause = "admin"): { ok: boolean; problems: YamlProblem[] } {
    if (this.folder === undefined) return { ok: true, problems: [] };
    const present = statOf(this.folder);
    const load: ScenarioLoad =
      !present && this.#loadedFrom
        ? {
            ok: false,
            problems: [
              {
                file: this.folder,
                line: 0,
                column: 0,
                message: `the scenarios ${this.#loadedFrom} is gone; the rules loaded before keep serving, and it is loaded again when it is back`,
              },
            ],
            scenarios: [],
          }
        : loadScenarioFolder(this.folder, this.loadOptions);
    const result = load.ok ? { ok: true, problems: [] } : { ok: false, problems: load.problems };
    if (load.ok) {
      this.#scenarios = load.scenarios;
      this.#rules = new RuleSet(load.scenarios.flatMap((s) => s.rules));
      this.#loadedAt = this.deps.now();
      this.#loadedFrom = present ? (present.isDirectory() ? "folder" : "file") : undefined;
      this.#version++;
    }
    this.#problems = result.problems;
    this.deps.events?.onLoad(result, cause);
    return result;
  }

  /**
   * Reloads when the folder (or file) changes: a file added, changed or
   * removed, a subfolder created, the folder itself deleted (the last set
   * keeps serving) or restored. Returns a function that stops watching.
   */
  watch(debounceMs = 100): () => void {
    if (this.folder === undefined) return () => undefined;
    return watchPath(
      this.folder,
      () => this.reload("file-change"),
      { watch: this.deps.fsWatch ?? fsWatch, onError: (message) => this.deps.events?.onWatchError(message) },
      debounceMs,
    );
  }
}

function statOf(path: string): Stats | undefined {
  try {
    return statSync(path);
  } catch {
    return undefined;
  }
}
