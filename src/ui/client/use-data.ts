import { useCallback, useEffect, useRef, useState } from "hono/jsx/dom";
import { api } from "./api.js";

export interface Loaded<T> {
  data: T | undefined;
  error: Error | undefined;
  /** Fetches again (live events call it); overlapping calls collapse into one that runs after. */
  reload(): void;
}

/**
 * Data of the admin API for a component: fetched on mount and whenever
 * `path` changes, again on reload(). An answer to an older request never
 * replaces a newer one.
 */
export function useData<T>(path: string | null): Loaded<T> {
  const [data, setData] = useState<T | undefined>(undefined);
  const [error, setError] = useState<Error | undefined>(undefined);
  const [version, setVersion] = useState(0);
  const latest = useRef(0);
  useEffect(() => {
    if (path === null) return;
    const ticket = ++latest.current;
    api<T>(path).then(
      (value) => {
        if (ticket !== latest.current) return;
        setData(value);
        setError(undefined);
      },
      (e: unknown) => {
        if (ticket === latest.current) setError(e as Error);
      },
    );
  }, [path, version]);
  const reload = useCallback(() => setVersion((v) => v + 1), []);
  return { data, error, reload };
}
