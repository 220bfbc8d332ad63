// Run before every test file (vitest.config.ts: setupFiles). The suite shares a worker between files (isolate
// false), but one global differs between a fresh process and one that has served HTTP: @hono/node-server replaces
// globalThis.Request and Response with its own lighter classes the first time a server listens (getRequestListener).
// In-process tests (app.request) must see what a fresh process has, whatever file ran before in the same worker:
// the classes of the worker's start are kept here, once, and put back before each file.

const KEY = Symbol.for("uae-fhir-sandbox.test.fetch-globals");
const store = globalThis as typeof globalThis & { [KEY]?: { Request: typeof Request; Response: typeof Response } };
const first = store[KEY] ?? { Request: globalThis.Request, Response: globalThis.Response };
store[KEY] = first;
for (const name of ["Request", "Response"] as const) {
  if (globalThis[name] !== first[name]) {
    Object.defineProperty(globalThis, name, { value: first[name], writable: true, configurable: true });
  }
}
