import { createApp, type SandboxApp } from "../../src/app.js";
import type { SandboxOptions } from "../../src/config/options.js";
import { createRequestLog, type LogSettings, type RequestLog } from "../../src/log/request-log.js";

/** Where a request log writes in a test: the text, and a wait for what is expected in it. */
export class LogOutput {
  text = "";
  readonly #waiters = new Set<() => void>();

  write(text: string): void {
    this.text += text;
    for (const waiter of [...this.#waiters]) waiter();
  }

  lines(): string[] {
    return this.text.split("\n").filter((l) => l !== "");
  }

  /** Every line as JSON (the json format). */
  // biome-ignore lint/suspicious/noExplicitAny: tests read arbitrary log events
  events(): any[] {
    return this.lines().map((l) => JSON.parse(l));
  }

  /** Resolves when the text matches `pattern`; rejects after `timeoutMs`. */
  waitFor(pattern: RegExp, timeoutMs = 5_000): Promise<RegExpExecArray> {
    return new Promise((resolve, reject) => {
      const check = () => {
        const match = pattern.exec(this.text);
        if (!match) return;
        clearTimeout(timer);
        this.#waiters.delete(check);
        resolve(match);
      };
      const timer = setTimeout(() => {
        this.#waiters.delete(check);
        reject(new Error(`no ${pattern} in ${timeoutMs} ms; the log: ${JSON.stringify(this.text)}`));
      }, timeoutMs);
      this.#waiters.add(check);
      check();
    });
  }
}

/** A sandbox whose request log (as the CLI wires it) writes to `out` and `err`. */
export function loggedSandbox(
  settings: Partial<LogSettings> = {},
  options: Partial<SandboxOptions> = {},
  deps: Parameters<typeof createApp>[1] = {},
): { sandbox: SandboxApp; log: RequestLog; out: LogOutput; err: LogOutput } {
  const out = new LogOutput();
  const err = new LogOutput();
  const log = createRequestLog({ format: "json", level: "info", colours: false, ...settings }, { out, err });
  const sandbox = createApp({ pushBackoffMs: 1, ...options }, { ...deps, logger: log.logger });
  log.observe(sandbox.sandboxEvents);
  return { sandbox, log, out, err };
}
