import { type FSWatcher, type watch as fsWatch, readdirSync, type Stats, statSync } from "node:fs";
import { basename, dirname, join, resolve } from "node:path";

export interface PathWatchDeps {
  /** fs.watch, replaceable in tests. */
  watch: typeof fsWatch;
  /** A watcher could not start, or failed later; the message says what it means and what to do. */
  onError(message: string): void;
  /** What is watched for, in the message of onError (default "scenario changes"). */
  subject?: string;
  /** How to reload without the watcher, in the message of onError. */
  byHand?: string;
}

/** A folder to watch, and the one entry of it that matters (all of them when absent). */
interface Target {
  dir: string;
  only?: string;
}

/** What to do about the errors fs.watch gives when a system limit is reached. */
const HINTS: Record<string, string> = {
  ENOSPC: "the system's limit of inotify watches is reached: raise it, e.g. sysctl fs.inotify.max_user_watches=524288",
  EMFILE: "too many open files: raise the limit (ulimit -n) or fs.inotify.max_user_instances",
  ENFILE: "the system's table of open files is full",
};

/**
 * Calls `changed` whenever what `path` names changes — a file, or a folder
 * and every folder under it — and also when it is deleted, replaced by a
 * rename (as editors save) or created. Debounced, so a save of several
 * writes counts once. Non-recursive watchers, renewed before every call:
 * Node 20's recursive watch on Linux loses files replaced by rename, and a
 * folder created, deleted or restored needs watchers of its own. A watcher
 * that cannot start or fails is reported once (until it works again), never
 * thrown. Returns a function that stops watching.
 *
 * @example
 *   const stop = watchPath("./scenarios", () => scenarios.reload(), { watch: fs.watch, onError: log });
 */
export function watchPath(path: string, changed: () => void, deps: PathWatchDeps, debounceMs = 100): () => void {
  let timer: NodeJS.Timeout | undefined;
  let watchers: FSWatcher[] = [];
  let stopped = false;
  const reported = new Set<string>();

  const report = (dir: string, error: unknown) => {
    const { code = "error", message = String(error) } = error as NodeJS.ErrnoException;
    const key = `${dir}\0${code}`;
    if (reported.has(key)) return;
    reported.add(key);
    const hint = HINTS[code] ? `; ${HINTS[code]}` : "";
    deps.onError(
      `cannot watch ${dir} for ${deps.subject ?? "scenario changes"} (${message.includes(code) ? message : `${code}: ${message}`})${hint}. Changes there are not picked up until a later change can watch it again; ${deps.byHand ?? "POST /__admin/scenarios/reload reloads by hand"}.`,
    );
  };
  const watched = (dir: string) => {
    for (const key of reported) if (key.startsWith(`${dir}\0`)) reported.delete(key);
  };

  const rewatch = () => {
    for (const w of watchers) w.close();
    watchers = targets(path).flatMap(({ dir, only }) => {
      try {
        const w = deps.watch(dir, (_event, name) => {
          if (only === undefined || name === null || String(name) === only) schedule();
        });
        // Not retried at once: a limit that is reached stays reached. The next change renews every watcher.
        w.on("error", (error) => {
          report(dir, error);
          w.close();
        });
        watched(dir);
        return [w];
      } catch (error) {
        report(dir, error);
        return [];
      }
    });
  };
  const fire = () => {
    if (stopped) return;
    // Watch anew before reloading: a change made while reloading is then seen, and reloads again.
    rewatch();
    changed();
  };
  const schedule = () => {
    clearTimeout(timer);
    timer = setTimeout(fire, debounceMs);
  };

  rewatch();
  return () => {
    stopped = true;
    clearTimeout(timer);
    for (const w of watchers) w.close();
  };
}

function stat(path: string): Stats | undefined {
  try {
    return statSync(path);
  } catch {
    return undefined;
  }
}

/**
 * The folders to watch for `path`: its own folder, for the entry itself (deleted, renamed, replaced),
 * and when it is a folder, it and every folder under it. When it does not exist: the nearest folder
 * that does, for the first missing step towards it.
 */
function targets(path: string): Target[] {
  const full = resolve(path);
  const found = stat(full);
  if (!found) {
    let child = full;
    let parent = dirname(full);
    while (parent !== child && !stat(parent)?.isDirectory()) {
      child = parent;
      parent = dirname(parent);
    }
    return [{ dir: parent, only: basename(child) }];
  }
  const own: Target = { dir: dirname(full), only: basename(full) };
  return found.isDirectory() ? [own, ...folders(full).map((dir) => ({ dir }))] : [own];
}

/** A folder and every folder under it (those that vanish while being listed are left out). */
function folders(root: string): string[] {
  let names: string[];
  try {
    names = readdirSync(root);
  } catch {
    return [];
  }
  const out = [root];
  for (const name of names) {
    const full = join(root, name);
    if (stat(full)?.isDirectory()) out.push(...folders(full));
  }
  return out;
}
