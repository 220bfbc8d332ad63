import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";

const exec = promisify(execFile);
const SCRIPT = fileURLToPath(new URL("./fixtures/adapter-first.mjs", import.meta.url));

// The served listing tells @hono/node-server that it wrote the answer itself. Made with the adapter's own Response
// class (the global one once the adapter has served), that signal would be written as an answer over the listing. A
// fresh process (the suite's workers share modules), built dist/.
describe("a listing served in a process that served with the Node adapter before it loaded the sandbox", () => {
  it("is written whole, once", async () => {
    const { stdout } = await exec(process.execPath, [SCRIPT], { timeout: 60_000 });
    const result = JSON.parse(stdout.trim().split("\n").at(-1) as string);
    expect(result.replaced).not.toBe("Response");
    expect(result.status).toBe(200);
    expect(result.bytes).toBeGreaterThan(300 * 1024);
    expect(result.errors).toEqual([]);
    expect(result.same).toBe(true);
  }, 90_000);
});
