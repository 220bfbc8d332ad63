import { describe, expect, it } from "vitest";
import { boundHeapGrowth } from "../../src/cli/heap-growth.js";

function run(execArgv: string[], env: NodeJS.ProcessEnv) {
  const set: string[] = [];
  const applied = boundHeapGrowth(execArgv, env, (flags) => set.push(flags));
  return { applied, set };
}

describe("the CLI bounds V8's heap growth", () => {
  it("asks V8 to grow the heap by 30 % at a time when Node was given no growth of its own", () => {
    expect(run([], {})).toEqual({ applied: true, set: ["--heap-growing-percent=30"] });
    // Other heap flags (the image's --max-old-space-size) are no reason to leave growth unbounded.
    expect(run(["--max-old-space-size=320"], { NODE_OPTIONS: "--max-semi-space-size=8" }).set).toEqual([
      "--heap-growing-percent=30",
    ]);
  });

  it("leaves a growth given on Node's command line, in either spelling", () => {
    expect(run(["--heap-growing-percent=80"], {})).toEqual({ applied: false, set: [] });
    expect(run(["--max-old-space-size=320", "--heap_growing_percent=10"], {})).toEqual({ applied: false, set: [] });
  });

  it("leaves V8's defaults in the bundle's code-cache training run, whose cache V8 would otherwise refuse", () => {
    expect(run([], { UAE_FHIR_SANDBOX_WRITE_CODE_CACHE: "1" })).toEqual({ applied: false, set: [] });
  });
});
