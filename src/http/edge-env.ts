import type { Socket } from "node:net";
import type { Access } from "../auth/bearer.js";
import type { Workspace } from "../workspace/workspace.js";
import type { CallState } from "./call-state.js";

// The edge's per-request environment, in a module of its own below the edge's middleware and routes.
/** Per-request values the edge shares with the call recorder. */
export interface EdgeVariables {
  /** The workspace the request acts in (CONTRACT §13). */
  workspace: Workspace;
  /** The `/w/{workspace}` prefix the URL came with, or "": URLs in the answer keep it. */
  workspacePrefix: string;
  /** With --auth oauth2, on a message path: who the token speaks for, or why it is refused. */
  access: Access | undefined;
  /**
   * The caller proved no client (CONTRACT §15): under --auth oauth2, it sent no valid access token (or, at the
   * token endpoint, no valid client authentication). Its call goes to the refused log, never a workspace's journal.
   */
  anonymous: boolean;
  /** The workspace the request named (its prefix or header; default when none), null when it was no valid name. */
  namedWorkspace: string | null;
  /** The call being recorded, filled in as it goes; absent where nothing records (the admin API). */
  call: CallState | undefined;
}

/** The Node adapter's bindings, when a real socket serves the request (absent in-process). */
export interface EdgeBindings {
  incoming?: { socket?: Socket; rawHeaders?: string[] };
}

export type EdgeEnv = { Variables: EdgeVariables; Bindings: EdgeBindings };
