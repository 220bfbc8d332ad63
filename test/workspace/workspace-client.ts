import type { Bundle } from "fhir/r4.js";
import type { Hono } from "hono";
import { admin } from "../admin/admin-client.js";
import { post, type Reply, STANDARD } from "../support/messages.js";

/** How a client names its workspace (CONTRACT §13): the path prefix /w/{workspace}, or the X-Sandbox-Workspace header. */
export type Naming = "prefix" | "header";

/** The header CONTRACT §13 names, written out. */
export const WORKSPACE_HEADER = "X-Sandbox-Workspace";

/** A client of one workspace: every message and admin call names it the chosen way. */
export interface WorkspaceClient {
  name: string;
  /** POSTs a message (default to the standard path) in the workspace. */
  send(bundle: Bundle | string, path?: string): Promise<Reply>;
  /** Calls the admin API in the workspace. */
  admin(method: string, path: string, options?: { body?: unknown; token?: string }): Promise<Reply>;
}

export function workspaceClient(app: Hono, name: string, naming: Naming): WorkspaceClient {
  const prefix = naming === "prefix" ? `/w/${name}` : "";
  const headers: Record<string, string> = naming === "header" ? { [WORKSPACE_HEADER]: name } : {};
  return {
    name,
    send: (bundle, path = STANDARD) => post(app, bundle, { path: `${prefix}${path}`, headers }),
    admin: (method, path, options = {}) => admin(app, method, path, { ...options, prefix, headers }),
  };
}
