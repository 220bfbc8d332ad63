import type { Child } from "hono/jsx";
import { useEffect, useRef, useState } from "hono/jsx/dom";
import { ago, instant } from "../format.js";

/** What went wrong, in words, as an alert; nothing when nothing did. */
export const Problem = ({ message }: { message: string | undefined }) =>
  message ? (
    <p role="alert" class="error">
      {message}
    </p>
  ) : null;

/** What went wrong fetching. */
export const ErrorNote = ({ error }: { error: Error }) => <Problem message={error.message} />;

/**
 * A table of data: a caption (shown, or only for screen readers), column headers, rows; in a box that scrolls
 * sideways in a narrow window rather than the page.
 */
export const DataTable = ({
  caption,
  hiddenCaption,
  columns,
  children,
}: {
  caption: Child;
  hiddenCaption?: boolean;
  columns: string[];
  children: Child;
}) => (
  <div class="table-wrap">
    <table>
      <caption class={hiddenCaption ? "visually-hidden" : undefined}>{caption}</caption>
      <thead>
        <tr>
          {columns.map((c) => (
            <th scope="col">{c}</th>
          ))}
        </tr>
      </thead>
      <tbody>{children}</tbody>
    </table>
  </div>
);

/**
 * A moment, the one way every page shows one: ISO 8601 in UTC (see `instant`), how long ago in its tooltip (worked
 * out again when the pointer comes, so it does not go stale). A date or partial date is shown as written; none, "—".
 */
export function Time({ at }: { at: string | null | undefined }) {
  if (!at) return <>—</>;
  const shown = instant(at);
  if (shown === null) return <time datetime={at}>{at}</time>;
  const refresh = (event: Event) => {
    (event.currentTarget as HTMLElement).title = ago(shown);
  };
  return (
    <time datetime={shown} title={ago(shown)} onMouseEnter={refresh}>
      {shown}
    </time>
  );
}

export const Loading = () => <p class="muted">Loading…</p>;

/** Terms and their values: a description list. */
export const Facts = ({ items }: { items: Array<[string, Child]> }) => (
  <dl class="facts">
    {items.map(([term, value]) => (
      <div>
        <dt>{term}</dt>
        <dd>{value ?? "—"}</dd>
      </div>
    ))}
  </dl>
);

/** A state or outcome as a word with a tone (the word carries the meaning; the colour only repeats it). */
export const Badge = ({ tone, children }: { tone?: "good" | "bad" | "warn" | "info"; children: Child }) => (
  <span class={`badge ${tone ?? ""}`}>{children}</span>
);

export function toneOfStatus(status: number | null): "good" | "bad" | "warn" | undefined {
  if (status === null) return "bad";
  if (status >= 500 || status >= 400) return "bad";
  if (status >= 300) return "warn";
  return "good";
}

export function toneOfCode(code: string | null): "good" | "bad" | "warn" | undefined {
  if (code === "ok") return "good";
  if (code === "fatal-error") return "bad";
  if (code === "transient-error") return "warn";
  return undefined;
}

/** A button that copies text to the clipboard and says so. */
export function CopyButton({ text, label }: { text: string; label: string }) {
  const [said, setSaid] = useState("");
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(text);
      setSaid("Copied.");
    } catch {
      setSaid("The browser did not allow copying: select the text and copy it.");
    }
  };
  return (
    <span class="copy">
      <button type="button" onClick={copy}>
        {label}
      </button>
      <span role="status" class="muted">
        {said}
      </span>
    </span>
  );
}

/** Calls `fn` at most once per `ms`, the last call always honoured: live bursts become one fetch. */
export function useThrottled(fn: () => void, ms: number): () => void {
  const latest = useRef(fn);
  latest.current = fn;
  const timer = useRef<ReturnType<typeof setTimeout> | null>(null);
  const last = useRef(0);
  useEffect(
    () => () => {
      if (timer.current) clearTimeout(timer.current);
    },
    [],
  );
  return () => {
    if (timer.current) return;
    const wait = Math.max(0, last.current + ms - Date.now());
    timer.current = setTimeout(() => {
      timer.current = null;
      last.current = Date.now();
      latest.current?.();
    }, wait);
  };
}
