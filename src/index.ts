export { createApp, defaultDeps, type Logger, type SandboxApp, type SandboxDeps } from "./app.js";
export { DEFAULT_OPTIONS, type SandboxOptions } from "./config/options.js";
export type { Handler, HandlerInput, HandlerResult, HandlerTable } from "./handlers/handler.js";
export { type RunningServer, startServer } from "./server/start-server.js";
