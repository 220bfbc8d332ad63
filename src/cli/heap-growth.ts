import { setFlagsFromString } from "node:v8";

/**
 * How far V8 lets the heap grow past what the last full collection left
 * alive, in percent. V8's own factor is 1.1 to 4 by its measure of the
 * mutator: under a load test it picks 4, and a sandbox holding 90 MiB of
 * journal and store sat at 300–900 MiB resident. At 30 % it stays within
 * about a third of that for 2–3 % more CPU; lower costs far more CPU for
 * little memory (docs/benchmarks.md, "what was tried").
 */
export const HEAP_GROWING_PERCENT = 30;

const FLAG = /^--heap[-_]growing[-_]percent(=|$)/;

/**
 * Bounds V8's heap growth for this process (HEAP_GROWING_PERCENT), unless
 * Node was given `--heap-growing-percent` on its command line (NODE_OPTIONS
 * does not take it): a process-wide setting, so only the CLI process sets it,
 * not a sandbox embedded in someone's tests. Not in the bundle's training
 * run either (UAE_FHIR_SANDBOX_WRITE_CODE_CACHE): V8 refuses a code cache
 * made under other flags than those the next start compiles with, and the
 * flag is set only after compiling. Says whether it set it.
 */
export function boundHeapGrowth(
  execArgv: readonly string[] = process.execArgv,
  env: NodeJS.ProcessEnv = process.env,
  setFlags: (flags: string) => void = setFlagsFromString,
): boolean {
  if (env.UAE_FHIR_SANDBOX_WRITE_CODE_CACHE === "1") return false;
  if (execArgv.some((arg) => FLAG.test(arg))) return false;
  setFlags(`--heap-growing-percent=${HEAP_GROWING_PERCENT}`);
  return true;
}
