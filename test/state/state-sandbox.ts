import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Bundle } from "fhir/r4.js";
import { afterAll, expect } from "vitest";
import { DEFAULT_OPTIONS } from "../../src/config/options.js";
import { EXAMPLE_ENDPOINT, exampleMessage, type OrderFacts } from "../../src/examples/example-message.js";
import { type Child, cli, type HttpReply, http, serve } from "../cli/cli-process.js";
import { CONTRACT_OPERATIONS } from "../support/contract-operations.js";
import { envelope, STANDARD } from "../support/messages.js";

/** The sandbox-wide admin token every sandbox of these tests runs with. */
export const ADMIN_TOKEN = "state-test-admin";

const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** A fresh temporary folder (removed after the file's tests): the state file and the clients file go there. */
export function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "uae-state-"));
  dirs.push(dir);
  return dir;
}

/** Writes `text` as `name` in `dir`; returns its path. */
export function writeIn(dir: string, name: string, text: string): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

/** The path each operation is served at (the contract's table, not the catalogue under test). */
const PATH_OF = new Map(CONTRACT_OPERATIONS);

/** An OAuth2 client of the clients file: its id and secret (client_secret_basic). */
export interface Client {
  id: string;
  secret: string;
}

/**
 * A sandbox run as its users run it: `node dist/cli/main.js serve --port 0 ... --state-file FILE`, with the
 * sandbox-wide admin token. Stopped by a signal and started again on the same arguments, it is the same sandbox
 * as far as its state goes: that is what these tests check.
 */
export class StateSandbox {
  readonly #tokens = new Map<string, string>();

  private constructor(
    readonly child: Child,
    readonly url: string,
    readonly args: readonly string[],
  ) {}

  /** Starts `serve --port PORT --host 127.0.0.1 --admin-token … ...args` (port 0: any free one); resolves once it listens. */
  static async start(args: readonly string[], port = 0): Promise<StateSandbox> {
    const child = cli([
      "serve",
      "--port",
      String(port),
      "--host",
      "127.0.0.1",
      "--admin-token",
      ADMIN_TOKEN,
      "--quiet",
      "--no-watch",
      ...args,
    ]);
    const { url } = await serve(child);
    return new StateSandbox(child, url, args);
  }

  /**
   * The same sandbox (same arguments, same state file) started again on the same port, as a deploy restarts it:
   * answers name resources by URLs on the address a request came to, which then stays the same.
   */
  restart(): Promise<StateSandbox> {
    return StateSandbox.start(this.args, Number(new URL(this.url).port));
  }

  /** Stops it with `signal`: SIGTERM ends it cleanly (exit 0), SIGKILL ends it at once, as a crash would. */
  async stop(signal: "SIGTERM" | "SIGKILL"): Promise<void> {
    this.child.process.kill(signal);
    const exit = await this.child.waitForExit();
    if (signal === "SIGTERM") expect(exit, this.child.describe()).toEqual({ code: 0, signal: null });
    else expect(exit.signal).toBe("SIGKILL");
  }

  /** An admin API request with the sandbox-wide token, in `workspace` (its /w/{id} prefix; default none). */
  admin(
    path: string,
    options: { method?: string; body?: unknown; workspace?: string; token?: string } = {},
  ): Promise<HttpReply> {
    const prefix = options.workspace === undefined || options.workspace === "default" ? "" : `/w/${options.workspace}`;
    const body = options.body === undefined ? undefined : JSON.stringify(options.body);
    return http(`${this.url}${prefix}/__admin${path}`, {
      method: options.method ?? "GET",
      headers: {
        authorization: `Bearer ${options.token ?? ADMIN_TOKEN}`,
        ...(body === undefined ? {} : { "content-type": "application/json" }),
      },
      ...(body === undefined ? {} : { body }),
    });
  }

  /** POST /__admin/scenarios: a scenario document (YAML) added at run time, in `workspace`. */
  addScenario(yaml: string, workspace?: string): Promise<HttpReply> {
    const prefix = workspace === undefined ? "" : `/w/${workspace}`;
    return http(`${this.url}${prefix}/__admin/scenarios`, {
      method: "POST",
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/yaml" },
      body: yaml,
    });
  }

  /** An access token of `client` (client-credentials grant, all its scopes), fetched once per process. */
  async token(client: Client): Promise<string> {
    const known = this.#tokens.get(client.id);
    if (known) return known;
    const reply = await http(`${this.url}/oauth2/token`, {
      method: "POST",
      headers: {
        authorization: `Basic ${Buffer.from(`${client.id}:${client.secret}`).toString("base64")}`,
        "content-type": "application/x-www-form-urlencoded",
      },
      body: "grant_type=client_credentials",
    });
    expect(reply.status, reply.text).toBe(200);
    this.#tokens.set(client.id, reply.json.access_token);
    return reply.json.access_token;
  }

  /**
   * POSTs a message (a Bundle is put in the envelope; a string goes as it is) at its operation's path, with the
   * client's access token when one is given, in `workspace` by its /w/{id} prefix when one is given.
   */
  async send(
    message: Bundle | string,
    options: { client?: Client; operation?: string; headers?: Record<string, string>; workspace?: string } = {},
  ): Promise<HttpReply> {
    const path = PATH_OF.get(options.operation ?? "") ?? STANDARD;
    const prefix = options.workspace === undefined ? "" : `/w/${options.workspace}`;
    return http(`${this.url}${prefix}${path}`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        ...(options.client ? { authorization: `Bearer ${await this.token(options.client)}` } : {}),
        ...options.headers,
      },
      body: typeof message === "string" ? message : envelope(message),
    });
  }

  /** GET /__admin/orders/{id} until `done` holds for it (deliveries end after the admin call answered). */
  async orderWhen(
    id: string,
    done: (order: OrderView) => boolean,
    workspace?: string,
    timeoutMs = 10_000,
  ): Promise<OrderView> {
    const until = Date.now() + timeoutMs;
    for (;;) {
      const reply = await this.admin(`/orders/${id}`, workspace === undefined ? {} : { workspace });
      expect(reply.status).toBe(200);
      if (done(reply.json)) return reply.json;
      if (Date.now() > until) throw new Error(`order ${id} not as expected in ${timeoutMs} ms: ${reply.text}`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }
}

/** GET /__admin/orders/{id}, the parts these tests read. */
export interface OrderView {
  id: string;
  state: string;
  kind: "medication" | "device";
  deadline: string;
  items: OrderFacts["items"];
  pharmacies: Array<{
    licence: string;
    state: string;
    taskId: string;
    delivery: { status: number | null; deliveredAt: string | null };
  }>;
  history: Array<{ at: string; event: string }>;
}

/** The facts of one pharmacy's part of an order, as the `example` command reads them (`--order`). */
export function factsOf(order: OrderView, licence: string): OrderFacts {
  const mine = order.pharmacies.find((p) => p.licence === licence);
  if (!mine) throw new Error(`order ${order.id} did not go to ${licence}`);
  return { id: order.id, kind: order.kind, taskId: mine.taskId, items: order.items };
}

/** A pharmacy as its messages name it: licence, name, its push receiver. */
export interface PharmacyPlan {
  licence: string;
  name: string;
  endpoint: string;
}

/**
 * A valid request message for `operation`, as `uae-fhir-sandbox example` builds it: about `patient` (an Emirates
 * ID), the records of its generated profile (the sandbox's seed), from `pharmacy` for drug orders.
 */
export function exampleOf(
  operation: string,
  input: { url: string; patient: string; pharmacy?: PharmacyPlan; order?: OrderFacts },
): Bundle {
  return exampleMessage(
    {
      operation,
      event: operation,
      seed: DEFAULT_OPTIONS.seed,
      emiratesIdSystem: DEFAULT_OPTIONS.emiratesIdSystem,
      emiratesId: input.patient,
      fhirBase: `${input.url}/uae-fhir/r4`,
      pharmacy: input.pharmacy ?? { licence: "PH-EXAMPLE-0001", name: "Example Pharmacy", endpoint: EXAMPLE_ENDPOINT },
      ...(input.order ? { order: input.order } : {}),
    },
    { newId: randomUUID, now: () => new Date() },
  ).bundle;
}
