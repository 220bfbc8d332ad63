import { describe, expect, it } from "vitest";
import { admin } from "../admin/admin-client.js";
import { authSandbox } from "./oauth-support.js";

// The admin API with --auth oauth2 (CONTRACT §9, §13): the global --admin-token as before, plus the
// adminToken the clients file gives a workspace — today every admin call acts on the default workspace.

const withWorkspaceToken = (workspace: string) => `clients:
  - { id: suite, secret: suite-secret }
workspaces:
  ${workspace}:
    adminToken: workspace-admin
`;

function sandbox(clients: string, adminToken?: string) {
  const s = authSandbox(clients, adminToken ? { adminToken } : {});
  return s.app;
}

describe("a workspace's own admin token (clients file)", () => {
  it("guards the default workspace's admin API even without --admin-token, and is accepted there", async () => {
    const app = sandbox(withWorkspaceToken("default"));

    const without = await admin(app, "GET", "/calls");
    expect(without.status).toBe(401);
    expect(without.body.issue[0].diagnostics).toMatch(/adminToken of workspace default in the clients file/);
    expect((await admin(app, "GET", "/calls", { token: "workspace-admin" })).status).toBe(200);
    expect((await admin(app, "GET", "/calls", { token: "wrong" })).status).toBe(401);
    expect((await admin(app, "GET", "/health")).status).toBe(200);
  });

  it("with --admin-token too, either token is accepted", async () => {
    const app = sandbox(withWorkspaceToken("default"), "global-admin");

    expect((await admin(app, "POST", "/reset", { token: "global-admin" })).status).toBe(200);
    expect((await admin(app, "POST", "/reset", { token: "workspace-admin" })).status).toBe(200);
    expect((await admin(app, "POST", "/reset")).status).toBe(401);
  });

  it("another workspace's token does not open the default workspace's admin API", async () => {
    const app = sandbox(withWorkspaceToken("clinic-a"), "global-admin");

    expect((await admin(app, "GET", "/calls", { token: "workspace-admin" })).status).toBe(401);
    expect((await admin(app, "GET", "/calls", { token: "global-admin" })).status).toBe(200);
  });

  it("no admin token anywhere: the admin API stays open, as without --auth", async () => {
    const app = sandbox("clients:\n  - { id: suite, secret: suite-secret }\n");

    expect((await admin(app, "GET", "/calls")).status).toBe(200);
  });
});
