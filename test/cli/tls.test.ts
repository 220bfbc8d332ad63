import { execFile } from "node:child_process";
import { X509Certificate } from "node:crypto";
import { once } from "node:events";
import { copyFileSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { request } from "node:https";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect as connectTls } from "node:tls";
import { promisify } from "node:util";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "../../src/cli/main.js";
import {
  type CertificateAuthority,
  type IssuedCertificate,
  makeCertificateAuthority,
  makeClientCertificate,
  makeServerCertificate,
} from "../../src/tls/make-certificates.js";
import { STANDARD } from "../support/messages.js";
import { cli, killStray, PROCESS_TIMEOUT_MS, runToExit } from "./cli-process.js";

// HTTPS and mutual TLS through the real CLI, with real TLS clients: Node's https and curl (installed by .ci/run,
// as the docs tests need it). Certificates are made here with the CA module; what a client sees and what the
// sandbox logs are checked against the TLS outcomes written out below, not against src/.

const run = promisify(execFile);
const dir = mkdtempSync(join(tmpdir(), "sandbox-tls-"));
const f = (name: string) => join(dir, name);

let message: string;
let testCa: CertificateAuthority;

beforeAll(async () => {
  const ca = await makeCertificateAuthority("Test CA");
  testCa = ca;
  const other = await makeCertificateAuthority("Another CA");
  const files: Record<string, IssuedCertificate> = {
    ca,
    server: await makeServerCertificate(ca, ["localhost", "127.0.0.1"]),
    expired: await makeServerCertificate(ca, ["localhost"], {
      notBefore: new Date("2020-01-01T00:00:00Z"),
      notAfter: new Date("2021-01-01T00:00:00Z"),
    }),
    future: await makeServerCertificate(ca, ["localhost"], {
      notBefore: new Date(Date.now() + 86_400_000),
      days: 30,
    }),
    "team-a": await makeClientCertificate(ca, "team-a"),
    "team-b": await makeClientCertificate(ca, "team-b"),
    stranger: await makeClientCertificate(other, "team-a"),
    "old-ca": await makeCertificateAuthority("Old CA", {
      notBefore: new Date("2020-01-01T00:00:00Z"),
      notAfter: new Date("2021-01-01T00:00:00Z"),
    }),
    "old-client": await makeClientCertificate(ca, "team-a", {
      notBefore: new Date("2020-01-01T00:00:00Z"),
      notAfter: new Date("2021-01-01T00:00:00Z"),
    }),
  };
  for (const [name, issued] of Object.entries(files)) {
    writeFileSync(f(`${name}.crt`), issued.certPem);
    writeFileSync(f(`${name}.key`), issued.keyPem);
  }
  const out: string[] = [];
  const code = await runCli(["example", "view-patient-profile"], { out: (l) => out.push(l), err: () => {}, env: {} });
  expect(code).toBe(0);
  message = out.join("\n");
});

afterEach(killStray);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const HTTPS_LISTENING = /listening on (https:\/\/[^\s"]+)/;

/** Serves with the TLS flags; resolves with the HTTPS URL (under localhost, the name the certificate is for). */
async function serveTls(args: string[]) {
  const child = cli(["serve", "--port", "0", "--host", "127.0.0.1", "--log-format", "json", ...args]);
  const [, url] = await child.waitForOutput(HTTPS_LISTENING);
  return { child, url: (url as string).replace("127.0.0.1", "localhost") };
}

const SERVER = () => ["--tls-cert", f("server.crt"), "--tls-key", f("server.key")];
const MUTUAL = (mode?: string) => [
  ...SERVER(),
  "--tls-client-ca",
  f("ca.crt"),
  ...(mode ? ["--tls-client-auth", mode] : []),
];

type Outcome = { status: number; body: string; headers: Record<string, unknown> } | { error: string };

/** One request on a fresh connection with Node's https client, trusting the test CA; `as` a client certificate. */
function httpsCall(
  url: string,
  options: { as?: string; method?: string; body?: string; headers?: Record<string, string> } = {},
): Promise<Outcome> {
  return new Promise((resolve) => {
    const req = request(
      url,
      {
        method: options.method ?? "GET",
        agent: false,
        ca: readFileSync(f("ca.crt")),
        ...(options.as
          ? { cert: readFileSync(f(`${options.as}.crt`)), key: readFileSync(f(`${options.as}.key`)) }
          : {}),
        headers: options.headers ?? {},
        timeout: PROCESS_TIMEOUT_MS,
      },
      (res) => {
        let body = "";
        res.setEncoding("utf8").on("data", (c: string) => {
          body += c;
        });
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body, headers: res.headers }));
      },
    );
    req.on("error", (error: NodeJS.ErrnoException) => resolve({ error: error.code ?? error.message }));
    req.end(options.body);
  });
}

/** The serial number of the certificate a new TLS connection to `url` is served with. */
async function servedSerial(url: string): Promise<string> {
  const { hostname, port } = new URL(url);
  const socket = connectTls({
    host: "127.0.0.1",
    port: Number(port),
    servername: hostname,
    ca: readFileSync(f("ca.crt")),
  });
  // A reset after the handshake (the socket ended here) is no failure of the check.
  socket.on("error", () => undefined);
  await once(socket, "secureConnect");
  const serial = socket.getPeerX509Certificate()?.serialNumber ?? "";
  socket.end();
  return serial;
}

/** curl's exit code and what it printed: `-w %{http_code}` on stdout, its error on stderr. */
async function curl(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run("curl", ["-sS", "-o", "/dev/null", "-w", "%{http_code}", ...args], {
      timeout: PROCESS_TIMEOUT_MS,
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

const post = (url: string, as?: string, headers: Record<string, string> = {}) =>
  httpsCall(`${url}${STANDARD}`, {
    method: "POST",
    body: message,
    headers: { "content-type": "application/json", ...headers },
    ...(as ? { as } : {}),
  });

describe("HTTPS", () => {
  it("answers a message over HTTPS, names https:// URLs, and refuses plain HTTP on the port with a log line", async () => {
    const { child, url } = await serveTls(SERVER());
    const answer = await post(url);
    expect(answer).toMatchObject({ status: 200 });
    const bundle = JSON.parse((answer as { body: string }).body) as { entry: Array<{ fullUrl?: string }> };
    // The fullUrls the answer names are under the URL it was called on: https.
    const absolute = bundle.entry.map((e) => e.fullUrl ?? "").filter((u) => !u.startsWith("urn:"));
    expect(absolute.length).toBeGreaterThan(0);
    for (const u of absolute) expect(u.startsWith(`${url}/`)).toBe(true);
    // The banner's URLs are https.
    expect(child.stdout).toMatch(/"admin":"https:\/\/127\.0\.0\.1:\d+\/__admin"/);
    const reply = await curl(["--cacert", f("ca.crt"), `${url}/uae-fhir/r4/metadata`]);
    expect(reply).toMatchObject({ code: 0, stdout: "200" });
    // Without the CA, curl does not trust it: the certificate is the one given, not some default.
    expect((await curl([`${url}/uae-fhir/r4/metadata`])).code).toBe(60);
    const plain = await curl([`${url.replace("https:", "http:")}/uae-fhir/r4/metadata`]);
    expect(plain.code).not.toBe(0);
    await child.waitForOutput(/"event":"tls-refused","reason":"plain-http"/, PROCESS_TIMEOUT_MS, "stderr");
  }, 60_000);

  it("serves HTTP on --port and HTTPS on --tls-port at once, the same sandbox on both", async () => {
    const child = cli(["serve", "--port", "0", "--tls-port", "0", "--host", "127.0.0.1", ...SERVER()]);
    const [, https, http] = await child.waitForOutput(
      /listening on (https:\/\/127\.0\.0\.1:\d+) and (http:\/\/127\.0\.0\.1:\d+)/,
    );
    const secure = (https as string).replace("127.0.0.1", "localhost");
    expect(await post(secure)).toMatchObject({ status: 200 });
    const res = await fetch(`${http}${STANDARD}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: message,
    });
    expect(res.status).toBe(200);
    // One journal: the call over HTTPS and the one over HTTP.
    const calls = (await (await fetch(`${http}/__admin/calls`)).json()) as { total?: number; calls?: unknown[] };
    expect(calls.calls ?? calls).toHaveLength(2);
    // SIGTERM stops both servers, as it stops one.
    child.process.kill("SIGTERM");
    expect(await child.waitForExit()).toEqual({ code: 0, signal: null });
    expect(child.stdout).toMatch(/"event":"stopped"/);
  }, 60_000);

  it("a start with an expired or not-yet-valid certificate, a wrong key, a missing file: exit 2 naming the file", async () => {
    const cases: Array<[string[], RegExp]> = [
      [
        ["--tls-cert", f("expired.crt"), "--tls-key", f("expired.key")],
        new RegExp(
          `--tls-cert "${escapeRegExp(f("expired.crt"))}": the certificate \\(CN=localhost\\) expired on 2021-01-01`,
        ),
      ],
      [
        ["--tls-cert", f("future.crt"), "--tls-key", f("future.key")],
        new RegExp(
          `--tls-cert "${escapeRegExp(f("future.crt"))}": the certificate \\(CN=localhost\\) is not valid yet`,
        ),
      ],
      [
        ["--tls-cert", f("server.crt"), "--tls-key", f("team-a.key")],
        new RegExp(`--tls-key "${escapeRegExp(f("team-a.key"))}" is not the key of the certificate`),
      ],
      [
        ["--tls-cert", f("missing.crt"), "--tls-key", f("server.key")],
        new RegExp(`--tls-cert "${escapeRegExp(f("missing.crt"))}": cannot read it \\(no such file\\)`),
      ],
      [
        [...SERVER(), "--tls-client-ca", f("old-ca.crt")],
        new RegExp(
          `--tls-client-ca "${escapeRegExp(f("old-ca.crt"))}": the certificate \\(CN=Old CA\\) expired on 2021-01-01`,
        ),
      ],
      [
        ["--tls-cert", f("server.key"), "--tls-key", f("server.key")],
        new RegExp(`--tls-cert "${escapeRegExp(f("server.key"))}": a private key, not a certificate`),
      ],
    ];
    for (const [args, said] of cases) {
      const exit = await runToExit(["serve", "--port", "0", "--host", "127.0.0.1", ...args]);
      expect(exit.code, exit.stderr).toBe(2);
      expect(exit.stderr).toMatch(/^uae-fhir-sandbox could not start: /);
      expect(exit.stderr).toMatch(said);
      expect(exit.stdout).not.toMatch(/listening on/);
    }
    const half = await runToExit(["serve", "--port", "0", "--tls-key", f("server.key")]);
    expect(half.code).toBe(2);
    expect(half.stderr).toMatch(/--tls-key needs --tls-cert too/);
  }, 60_000);

  it("a connection that never starts its handshake is closed after --headers-timeout", async () => {
    const { url } = await serveTls([...SERVER(), "--headers-timeout", "1s", "--request-timeout", "2s"]);
    const { port } = new URL(url);
    const socket = connect(Number(port), "127.0.0.1");
    // Closed with a reset or a FIN, depending on the Node version: either ends the wait.
    socket.on("error", () => undefined);
    const started = performance.now();
    await once(socket, "close");
    const waited = performance.now() - started;
    expect(waited).toBeGreaterThanOrEqual(900);
    expect(waited).toBeLessThan(PROCESS_TIMEOUT_MS);
  }, 60_000);

  it("SIGHUP rotates the certificate for new connections; a bad file is a warning and the old one keeps serving", async () => {
    copyFileSync(f("server.crt"), f("rotating.crt"));
    copyFileSync(f("server.key"), f("rotating.key"));
    const { child, url } = await serveTls(["--tls-cert", f("rotating.crt"), "--tls-key", f("rotating.key")]);
    const first = await servedSerial(url);
    expect(first).toBe(new X509Certificate(readFileSync(f("server.crt"))).serialNumber);

    const next = await makeServerCertificate(testCa, ["localhost"]);
    writeFileSync(f("rotating.crt"), next.certPem);
    writeFileSync(f("rotating.key"), next.keyPem);
    child.process.kill("SIGHUP");
    await child.waitForOutput(/"event":"tls-reloaded"/);
    expect(await servedSerial(url)).toBe(new X509Certificate(next.certPem).serialNumber);

    writeFileSync(f("rotating.crt"), "not a certificate");
    child.process.kill("SIGHUP");
    await child.waitForOutput(/"event":"tls-reload-failed"/, PROCESS_TIMEOUT_MS, "stderr");
    expect(child.stderr).toMatch(
      /TLS: not reloaded, the certificate in use keeps serving: --tls-cert .*rotating\.crt.*: no PEM certificate/,
    );
    expect(await servedSerial(url)).toBe(new X509Certificate(next.certPem).serialNumber);
  }, 60_000);

  it("TLS_CERT and TLS_KEY serve HTTPS as the flags do", async () => {
    const envChild = cli(["serve", "--port", "0", "--host", "127.0.0.1"], {
      TLS_CERT: f("server.crt"),
      TLS_KEY: f("server.key"),
    });
    const [, url] = await envChild.waitForOutput(HTTPS_LISTENING);
    expect(await httpsCall(`${(url as string).replace("127.0.0.1", "localhost")}/__admin/health`)).toMatchObject({
      status: 200,
    });
  }, 60_000);
});

describe("mutual TLS", () => {
  it("required: no certificate is a certificate_required alert, a wrong CA or an expired one is closed; each logged", async () => {
    const { child, url } = await serveTls(MUTUAL());
    expect(await post(url, "team-a")).toMatchObject({ status: 200 });
    // The banner says what is on: the server certificate's end (a year from now) and the client-certificate mode.
    const banner = JSON.parse(child.stdout.split("\n")[0] as string) as { tls: Record<string, unknown> };
    expect(banner.tls).toMatchObject({ clientAuth: "required", clientCa: f("ca.crt"), workspaceFromCert: false });
    expect(Date.parse(banner.tls.validTo as string) - Date.now()).toBeGreaterThan(300 * 86_400_000);

    // TLS 1.3 (RFC 8446 §6.2): a server that requires a certificate and gets none sends certificate_required (116).
    expect(await httpsCall(`${url}/__admin/health`)).toEqual({ error: "ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED" });
    await child.waitForOutput(/"event":"tls-refused","reason":"no-certificate"/, PROCESS_TIMEOUT_MS, "stderr");
    const none = await curl(["--cacert", f("ca.crt"), `${url}/__admin/health`]);
    expect(none.code).not.toBe(0);
    expect(none.stderr).toMatch(/alert certificate required/);

    // A certificate of another CA, and an expired one of the right CA: the connection ends before any answer.
    for (const [as, reason] of [
      ["stranger", "unknown-ca"],
      ["old-client", "expired"],
    ] as const) {
      const outcome = await httpsCall(`${url}/__admin/health`, { as });
      expect(outcome, as).toHaveProperty("error");
      await child.waitForOutput(new RegExp(`"event":"tls-refused","reason":"${reason}"`), PROCESS_TIMEOUT_MS, "stderr");
      const byCurl = await curl(["--cacert", f("ca.crt"), "--cert", f(`${as}.crt`), "--key", f(`${as}.key`), url]);
      expect(byCurl.code, as).not.toBe(0);
      expect(byCurl.stdout, as).toBe("000");
    }
    expect(child.stderr).toMatch(/TLS: refused a client certificate not signed by the --tls-client-ca CA/);
    expect(child.stderr).toMatch(/TLS: refused an expired client certificate \(CERT_HAS_EXPIRED\)/);
    expect(child.stderr).toMatch(/TLS: refused a client without a certificate \(--tls-client-auth required\)/);

    const good = await curl([
      "--cacert",
      f("ca.crt"),
      "--cert",
      f("team-a.crt"),
      "--key",
      f("team-a.key"),
      `${url}/uae-fhir/r4/metadata`,
    ]);
    expect(good).toMatchObject({ code: 0, stdout: "200" });
  }, 60_000);

  it("refusals in a row are one line, then a count: a flood cannot push the rest out of the log", async () => {
    const { child, url } = await serveTls(MUTUAL());
    for (let i = 0; i < 5; i++) {
      expect(await httpsCall(`${url}/__admin/health`)).toEqual({ error: "ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED" });
    }
    // Another reason has its own first line at once.
    expect(await httpsCall(`${url}/__admin/health`, { as: "stranger" })).toHaveProperty("error");
    await child.waitForOutput(/"event":"tls-refused","reason":"unknown-ca"/, PROCESS_TIMEOUT_MS, "stderr");
    const refusals = () => child.stderr.split("\n").filter((line) => line.includes('"event":"tls-refused"'));
    expect(refusals().filter((line) => line.includes('"reason":"no-certificate"'))).toHaveLength(1);
    // The count not said yet (its interval is 10 s) is said as the sandbox stops.
    child.process.kill("SIGTERM");
    expect(await child.waitForExit()).toEqual({ code: 0, signal: null });
    const count = refusals()
      .map((line) => JSON.parse(line) as { msg?: string; message?: string; count?: number; reason: string })
      .filter((line) => line.reason === "no-certificate" && line.count !== undefined);
    expect(count).toHaveLength(1);
    expect(count[0]?.count).toBe(4);
    expect(JSON.stringify(count[0])).toMatch(
      /TLS: refused 4 more in the last 10 s: a client without a certificate \(--tls-client-auth required\)/,
    );
  }, 60_000);

  it("optional: no certificate is served, a bad one is refused and logged", async () => {
    const { child, url } = await serveTls(MUTUAL("optional"));
    expect(await post(url)).toMatchObject({ status: 200 });
    expect(await post(url, "team-a")).toMatchObject({ status: 200 });
    expect(await httpsCall(`${url}/__admin/health`, { as: "stranger" })).toHaveProperty("error");
    await child.waitForOutput(/"event":"tls-refused","reason":"unknown-ca"/, PROCESS_TIMEOUT_MS, "stderr");
    expect(child.stderr).not.toMatch(/"reason":"no-certificate"/);
  }, 60_000);

  it("--tls-client-auth without --tls-client-ca, --workspace-from-cert without mutual TLS: usage errors", async () => {
    const noCa = await runToExit(["serve", "--port", "0", ...SERVER(), "--tls-client-auth", "required"]);
    expect(noCa.code).toBe(2);
    expect(noCa.stderr).toMatch(/--tls-client-auth required needs --tls-client-ca/);
    const noMutual = await runToExit(["serve", "--port", "0", ...SERVER(), "--workspace-from-cert"]);
    expect(noMutual.code).toBe(2);
    expect(noMutual.stderr).toMatch(/--workspace-from-cert needs mutual TLS/);
  }, 60_000);
});

describe("a client certificate chooses the workspace (--workspace-from-cert)", () => {
  it("CN=team-a's messages go to workspace team-a; a header naming another is 403; admin calls stay as they were", async () => {
    const { url } = await serveTls([...MUTUAL(), "--workspace-from-cert"]);
    const first = await post(url, "team-a");
    expect(first).toMatchObject({ status: 200 });
    expect(await post(url, "team-b")).toMatchObject({ status: 200 });
    // A REST read (served by the Hono app, not the message fast path) is chosen by the certificate too.
    const bundle = JSON.parse((first as { body: string }).body) as { entry: Array<{ fullUrl?: string }> };
    const readable = bundle.entry.map((e) => e.fullUrl ?? "").find((u) => u.includes("/Patient/")) as string;
    expect(readable).toBeDefined();
    expect(await httpsCall(readable, { as: "team-a" })).toMatchObject({ status: 200 });
    const crossRead = await httpsCall(readable, { as: "team-a", headers: { "X-Sandbox-Workspace": "team-b" } });
    expect(crossRead).toMatchObject({ status: 403 });
    expect(await post(url, "team-a", { "X-Sandbox-Workspace": "team-a" })).toMatchObject({ status: 200 });
    const other = await post(url, "team-a", { "X-Sandbox-Workspace": "team-b" });
    expect(other).toMatchObject({ status: 403 });
    expect((other as { body: string }).body).toMatch(/client certificate CN=team-a acts in workspace team-a/);
    const prefixed = await httpsCall(`${url}/w/team-b${STANDARD}`, {
      as: "team-a",
      method: "POST",
      body: message,
      headers: { "content-type": "application/json" },
    });
    expect(prefixed).toMatchObject({ status: 403 });

    // Each workspace's journal holds its own client's calls; default holds none.
    const count = async (workspace: string) => {
      const reply = await httpsCall(`${url}/w/${workspace}/__admin/calls`, { as: "team-a" });
      const body = JSON.parse((reply as { body: string }).body) as { calls?: unknown[] };
      return (body.calls ?? (body as unknown as unknown[])).length;
    };
    // team-a: its two messages and its read (the refused ones are not its calls).
    expect(await count("team-a")).toBe(3);
    expect(await count("team-b")).toBe(1);
    expect(await count("default")).toBe(0);
  }, 60_000);
});

describe("uae-fhir-sandbox certs", () => {
  it("writes a CA, a server and a client certificate that serve and call mutual TLS; a re-run adds a client", async () => {
    const out = mkdtempSync(join(tmpdir(), "sandbox-certs-"));
    try {
      const made = await runToExit(["certs", "--out", out, "--client", "team-a"]);
      expect(made.code, made.stderr).toBe(0);
      for (const key of ["ca.key", "server.key", "team-a.key"]) {
        expect(statSync(join(out, key)).mode & 0o777, key).toBe(0o600);
      }
      expect(made.stdout).toContain(
        `uae-fhir-sandbox serve --tls-cert ${join(out, "server.crt")} --tls-key ${join(out, "server.key")} --tls-client-ca ${join(out, "ca.crt")}`,
      );
      // Again with the same client: refused, nothing replaced.
      const before = readFileSync(join(out, "team-a.key"), "utf8");
      const again = await runToExit(["certs", "--out", out, "--client", "team-a"]);
      expect(again.code).toBe(1);
      expect(again.stderr).toMatch(/team-a\.crt is there already: give --force/);
      expect(readFileSync(join(out, "team-a.key"), "utf8")).toBe(before);
      // Another client: signed by the same CA, so the server made first takes it.
      const added = await runToExit(["certs", "--out", out, "--client", "team-b"]);
      expect(added.code, added.stderr).toBe(0);
      expect(added.stdout).toMatch(/kept {2}\S+ca\.crt/);

      const child = cli([
        "serve",
        "--port",
        "0",
        "--host",
        "127.0.0.1",
        "--tls-cert",
        join(out, "server.crt"),
        "--tls-key",
        join(out, "server.key"),
        "--tls-client-ca",
        join(out, "ca.crt"),
      ]);
      const [, url] = await child.waitForOutput(HTTPS_LISTENING);
      const at = `${(url as string).replace("127.0.0.1", "localhost")}/uae-fhir/r4/metadata`;
      for (const client of ["team-a", "team-b"]) {
        const reply = await curl([
          "--cacert",
          join(out, "ca.crt"),
          "--cert",
          join(out, `${client}.crt`),
          "--key",
          join(out, `${client}.key`),
          at,
        ]);
        expect(reply, client).toMatchObject({ code: 0, stdout: "200" });
      }
      // 127.0.0.1 is in the server certificate too (a default host), not only localhost.
      const byIp = await curl([
        "--cacert",
        join(out, "ca.crt"),
        "--cert",
        join(out, "team-a.crt"),
        "--key",
        join(out, "team-a.key"),
        (url as string).replace("localhost", "127.0.0.1"),
      ]);
      expect(byIp.code, byIp.stderr).toBe(0);
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  }, 60_000);

  it("has its own --help, is listed in the top-level help, and names a mistyped option", async () => {
    const help = await runToExit(["certs", "--help"]);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/^Usage: uae-fhir-sandbox certs/);
    const top = await runToExit(["--help"]);
    expect(top.stdout).toMatch(/uae-fhir-sandbox certs \[--out DIR\]/);
    const typo = await runToExit(["certs", "--clinet", "x"]);
    expect(typo.code).toBe(2);
    expect(typo.stderr).toMatch(/unknown option --clinet; did you mean --client\?/);
  }, 60_000);
});

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}
