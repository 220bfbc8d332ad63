/**
 * uae-fhir-sandbox as a library: `createSandbox` for test suites, `createApp`
 * for the bare Hono app, `startServer` to serve one.
 */
export { createApp, defaultDeps, type Logger, type SandboxApp, type SandboxDeps } from "./app.js";
export { DEFAULT_OPTIONS, type SandboxOptions } from "./config/options.js";
export { DEFAULT_SERVER_LIMITS, type ServerLimits } from "./config/server-limits.js";
export type { Handler, HandlerInput, HandlerResult, HandlerTable } from "./handlers/handler.js";
export type { CallFilter } from "./journal/journal.js";
export type { Expectation, Verification } from "./journal/verify.js";
export { type CallView, createSandbox, type Sandbox, type SandboxInit } from "./sandbox.js";
export { type ListenOptions, type RunningServer, startServer } from "./server/start-server.js";
