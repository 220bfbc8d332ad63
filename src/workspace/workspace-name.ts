import { z } from "zod";

/** The workspace of callers that name none: today's single-user sandbox (CONTRACT §13). */
export const DEFAULT_WORKSPACE = "default";

export const WORKSPACE_NAME_RULE = "a workspace name: 1 to 64 lower-case letters, digits or hyphens";

const NAME = /^[a-z0-9-]{1,64}$/;

/** A workspace name (CONTRACT §13): lower-case letters, digits and hyphens, 1 to 64 of them. */
export const workspaceName = z.string().regex(NAME, WORKSPACE_NAME_RULE);

export const isWorkspaceName = (name: string): boolean => NAME.test(name);

/** The path prefix that leads into a workspace: none for the default one, /w/{name} for the others. */
export const workspacePrefix = (name: string): string => (name === DEFAULT_WORKSPACE ? "" : `/w/${name}`);
