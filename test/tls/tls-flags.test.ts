import { describe, expect, it } from "vitest";
import { resolveServeConfig, UsageError } from "../../src/cli/flags.js";

// The TLS flags are read together: a combination that cannot mean what it says is a usage error naming the flags,
// never a setting quietly ignored.
const resolve = (values: Record<string, string | boolean>, env: NodeJS.ProcessEnv = {}) =>
  resolveServeConfig({ scenarios: "", ...values }, env);
const HTTPS = { "tls-cert": "server.crt", "tls-key": "server.key" };

describe("the TLS flags", () => {
  it("none given: plain HTTP, as always", () => {
    expect(resolve({}).tls).toBeUndefined();
  });

  it("a certificate and key: HTTPS on --port; with a CA, client certificates are required unless told otherwise", () => {
    expect(resolve(HTTPS).tls).toEqual({
      certFile: "server.crt",
      keyFile: "server.key",
      clientCaFile: undefined,
      clientAuth: "none",
      port: undefined,
    });
    expect(resolve({ ...HTTPS, "tls-client-ca": "ca.crt" }).tls?.clientAuth).toBe("required");
    expect(resolve({ ...HTTPS, "tls-client-ca": "ca.crt", "tls-client-auth": "optional" }).tls?.clientAuth).toBe(
      "optional",
    );
    expect(resolve({ ...HTTPS, "tls-port": "8443" }).tls?.port).toBe(8443);
  });

  it("each is an environment variable too", () => {
    const tls = resolve({}, { TLS_CERT: "a.crt", TLS_KEY: "a.key", TLS_CLIENT_CA: "ca.crt", TLS_PORT: "8443" }).tls;
    expect(tls).toMatchObject({ certFile: "a.crt", keyFile: "a.key", clientCaFile: "ca.crt", port: 8443 });
    expect(resolve({ ...HTTPS, "tls-client-ca": "ca.crt" }, { WORKSPACE_FROM_CERT: "true" }).sandbox).toMatchObject({
      workspaceFromCert: true,
    });
  });

  it.each([
    [{ "tls-cert": "server.crt" }, "--tls-cert needs --tls-key too"],
    [{ "tls-key": "server.key" }, "--tls-key needs --tls-cert too"],
    [{ "tls-client-ca": "ca.crt" }, "--tls-client-ca needs HTTPS: --tls-cert and --tls-key"],
    [{ "tls-port": "8443" }, "--tls-port needs HTTPS"],
    [{ ...HTTPS, "tls-client-auth": "required" }, "--tls-client-auth required needs --tls-client-ca"],
    [{ ...HTTPS, port: "8443", "tls-port": "8443" }, "--tls-port 8443 is --port too"],
    [
      { ...HTTPS, "tls-client-auth": "sometimes", "tls-client-ca": "ca.crt" },
      "expected one of none, optional, required",
    ],
    [{ ...HTTPS, "workspace-from-cert": true }, "--workspace-from-cert needs mutual TLS"],
    [
      { ...HTTPS, "tls-client-ca": "ca.crt", "tls-client-auth": "none", "workspace-from-cert": true },
      "--workspace-from-cert needs mutual TLS",
    ],
    [
      { ...HTTPS, "tls-client-ca": "ca.crt", "workspace-from-cert": true, auth: "oauth2", clients: "clients.yaml" },
      "--workspace-from-cert is not for --auth oauth2",
    ],
  ])("%o is refused: %s", (values, said) => {
    expect(() => resolve(values as Record<string, string | boolean>)).toThrow(UsageError);
    expect(() => resolve(values as Record<string, string | boolean>)).toThrow(said);
  });
});
