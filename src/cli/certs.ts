import { X509Certificate } from "node:crypto";
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import {
  type CertificateAuthority,
  loadCertificateAuthority,
  makeCertificateAuthority,
  makeClientCertificate,
  makeServerCertificate,
} from "../tls/make-certificates.js";
import type { CliIo } from "./cli-io.js";
import { CommandLineError, parseCommandLine } from "./parse-command-line.js";

export const CERTS_USAGE = `Usage: uae-fhir-sandbox certs [--out DIR] [--host NAME ...] [--client NAME ...] [--days N] [--force]

Makes local test certificates for HTTPS and mutual TLS, without OpenSSL: a CA, a server certificate for the hosts
you name, and a client certificate per test system. Run again with other --client names to add clients: the CA in
DIR is reused, so certificates made earlier stay valid.

  --out DIR        where the files go (default ./certs, made if missing):
                     ca.crt, ca.key              the CA (its key signs more: keep it private)
                     server.crt, server.key      the server certificate, for --tls-cert and --tls-key
                     <NAME>.crt, <NAME>.key      a client certificate whose subject is CN=<NAME>
  --host NAME      a host name or IP address the server certificate is for; repeat for more
                   (default localhost, 127.0.0.1 and ::1)
  --client NAME    a client certificate for CN=NAME (letters, digits, . _ -; not ca or server); repeat for more.
                   With --workspace-from-cert, NAME is the workspace its calls act in
  --days N         validity of the server and client certificates, in days (default 365; the CA: 10 years)
  --force          replace the server and client files that exist (never the CA: remove ca.crt and ca.key for a
                   new one); without it an existing server certificate is kept and an existing client refused
  -h, --help       this help

Key files are written readable by their owner only (mode 0600).
Exit 0 when written, 1 when nothing could be written (files exist, a folder cannot be written), 2 on a usage error.`;

const CA_NAME = "uae-fhir-sandbox local test CA";
const CA_DAYS = 3650;
const DEFAULT_HOSTS = ["localhost", "127.0.0.1", "::1"];
/** A client name is a file name as well as a CN: plain characters only, no path. */
const CLIENT_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
const RESERVED = new Set(["ca", "server"]);

/** `uae-fhir-sandbox certs`: a local CA, a server certificate and client certificates, as PEM files. */
export async function certsCommand(argv: string[], io: CliIo): Promise<number> {
  let values: { out?: string; host?: string[]; client?: string[]; days?: string; force?: boolean; help?: boolean };
  try {
    ({ values } = parseCommandLine({
      args: argv,
      options: {
        out: { type: "string" },
        host: { type: "string", multiple: true },
        client: { type: "string", multiple: true },
        days: { type: "string" },
        force: { type: "boolean" },
        help: { type: "boolean", short: "h" },
      },
      strict: true,
    }));
  } catch (error) {
    if (!(error instanceof CommandLineError)) throw error;
    io.err(`${error.message}\nRun uae-fhir-sandbox certs --help for the options.`);
    return 2;
  }
  if (values.help) {
    io.out(CERTS_USAGE);
    return 0;
  }
  const usage = (message: string) => {
    io.err(`${message}\nRun uae-fhir-sandbox certs --help for the options.`);
    return 2;
  };
  const days = values.days === undefined ? 365 : Number(values.days);
  if (!/^\d+$/.test(values.days ?? "365") || days < 1 || days > 36_500) {
    return usage(`--days ${JSON.stringify(values.days)}: expected a whole number of days from 1 to 36500`);
  }
  const hosts = values.host ?? DEFAULT_HOSTS;
  const badHost = hosts.find((h) => !/^[A-Za-z0-9*.:-]+$/.test(h));
  if (badHost !== undefined) {
    return usage(`--host ${JSON.stringify(badHost)}: expected a host name (sandbox.example.ae) or an IP address`);
  }
  const clients = [...new Set(values.client ?? [])];
  for (const name of clients) {
    if (!CLIENT_NAME.test(name) || RESERVED.has(name)) {
      return usage(
        `--client ${JSON.stringify(name)}: expected 1 to 64 letters, digits, dots, underscores or hyphens, starting with a letter or digit${RESERVED.has(name) ? ` (${name} is the ${name}'s own file name)` : ""}`,
      );
    }
  }
  const out = values.out ?? "certs";
  const file = (name: string) => join(out, name);
  const force = values.force === true;

  // Everything that would be refused is found before anything is written: a run writes all or nothing.
  const hasCa = [file("ca.crt"), file("ca.key")].map(existsSync);
  if (hasCa[0] !== hasCa[1]) {
    io.err(
      `${hasCa[0] ? file("ca.crt") : file("ca.key")} is there without ${hasCa[0] ? file("ca.key") : file("ca.crt")}: a CA needs both to sign; put the missing one back, or remove both for a new CA (then make every certificate again)`,
    );
    return 1;
  }
  const hasServer = existsSync(file("server.crt")) || existsSync(file("server.key"));
  if (hasServer && values.host !== undefined && !force) {
    io.err(
      `${file("server.crt")} is there already: give --force to replace it with one for ${hosts.join(", ")} (its key is replaced too)`,
    );
    return 1;
  }
  const taken = clients.filter((name) => existsSync(file(`${name}.crt`)) || existsSync(file(`${name}.key`)));
  if (taken.length > 0 && !force) {
    io.err(
      `${taken.map((name) => file(`${name}.crt`)).join(", ")} ${taken.length === 1 ? "is" : "are"} there already: give --force to replace ${taken.length === 1 ? "it" : "them"} (keys included), or another --client name`,
    );
    return 1;
  }

  const wrote: string[] = [];
  try {
    mkdirSync(out, { recursive: true });
    let ca: CertificateAuthority;
    if (hasCa[0]) {
      ca = await loadCertificateAuthority(readFileSync(file("ca.crt"), "utf8"), readFileSync(file("ca.key"), "utf8"));
      wrote.push(`kept  ${file("ca.crt")}, ${file("ca.key")}: the CA made earlier (${ca.cert.subject})`);
    } else {
      ca = await makeCertificateAuthority(CA_NAME, { days: CA_DAYS });
      put(file("ca.crt"), file("ca.key"), ca, force);
      wrote.push(
        `wrote ${file("ca.crt")}, ${file("ca.key")}: a new CA (CN=${CA_NAME}, until ${day(ca.cert.notAfter)})`,
      );
    }
    if (hasServer && !force) {
      wrote.push(`kept  ${file("server.crt")}, ${file("server.key")}: made earlier (--force to replace)`);
    } else {
      const server = await makeServerCertificate(ca, hosts, { days });
      put(file("server.crt"), file("server.key"), server, force);
      wrote.push(
        `wrote ${file("server.crt")}, ${file("server.key")}: the server certificate for ${hosts.join(", ")} (until ${day(validTo(server.certPem))})`,
      );
    }
    for (const name of clients) {
      const client = await makeClientCertificate(ca, name, { days });
      put(file(`${name}.crt`), file(`${name}.key`), client, force);
      wrote.push(
        `wrote ${file(`${name}.crt`)}, ${file(`${name}.key`)}: a client certificate for CN=${name} (until ${day(validTo(client.certPem))})`,
      );
    }
  } catch (error) {
    for (const line of wrote) io.out(line);
    io.err(`certs: ${(error as Error).message}`);
    return 1;
  }
  for (const line of wrote) io.out(line);
  const host = hosts[0] as string;
  const shownHost = host.includes(":") ? `[${host}]` : host;
  const client = clients[0];
  io.out("");
  io.out(client === undefined ? "Serve HTTPS:" : "Serve HTTPS with mutual TLS:");
  io.out(
    `  uae-fhir-sandbox serve --tls-cert ${file("server.crt")} --tls-key ${file("server.key")}${client === undefined ? "" : ` --tls-client-ca ${file("ca.crt")}`}`,
  );
  io.out("Call it:");
  io.out(
    `  curl --cacert ${file("ca.crt")}${client === undefined ? "" : ` --cert ${file(`${client}.crt`)} --key ${file(`${client}.key`)}`} https://${shownHost}:8080/uae-fhir/r4/metadata`,
  );
  io.out(`Clients trust ${file("ca.crt")}; keep ${file("ca.key")} private: it signs more certificates.`);
  return 0;
}

/** A certificate and its key; the key readable by its owner only. Without --force an existing file is never touched. */
function put(certFile: string, keyFile: string, pems: { certPem: string; keyPem: string }, force: boolean): void {
  const flag = force ? "w" : "wx";
  writeFileSync(keyFile, pems.keyPem, { mode: 0o600, flag });
  // A file replaced keeps its old mode: set it again.
  chmodSync(keyFile, 0o600);
  writeFileSync(certFile, pems.certPem, { mode: 0o644, flag });
}

function validTo(certPem: string): Date {
  return new Date(new X509Certificate(certPem).validTo);
}

function day(date: Date): string {
  return date.toISOString().slice(0, 10);
}
