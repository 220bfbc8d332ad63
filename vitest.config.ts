import { defineConfig } from "vitest/config";

// How the suite fits a 2-core machine (measured: README, development notes).
// - maxWorkers 2: vitest's default on 2 cores is one worker (cores − 1), which leaves a core idle whenever a test
//   waits on a CLI process it started; two keep both busy.
// - isolate false: each worker imports src/, the FHIR definitions and the independent validators once and runs its
//   files one after another, instead of a fresh process and a fresh import per file (seconds each, ~190 files).
//   Files share no mutable state: timers are restored after each test, mocks restored, nothing changes process.env;
//   the one global a served request replaces (fetch's Request and Response) is put back before each file
//   (test/support/fresh-globals.ts).
// - Timeouts: vitest's 5 s and 10 s suit a quiet machine. On a busy 2-core machine (a load average of 12, 2026-11-27)
//   tests ran 3-5 times slower than alone, and seven failed on the 5 s default; tests known to be slow carry their own
//   measured budgets, and the defaults leave the rest the same headroom.
export default defineConfig({
  test: {
    pool: "forks",
    maxWorkers: 2,
    isolate: false,
    setupFiles: ["test/support/fresh-globals.ts"],
    testTimeout: 15_000,
    hookTimeout: 30_000,
  },
});
