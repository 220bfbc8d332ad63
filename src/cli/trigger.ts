import { parseCommandLine } from "./parse-command-line.js";

export const TRIGGER_USAGE = `Usage: uae-fhir-sandbox trigger order [options]

Creates an order on a running sandbox (POST /__admin/orders): the sandbox pushes an
order-fulfillment-request to each target pharmacy. Without options: a generated order
to every subscribed pharmacy.

Options:
  --url <url>              the sandbox (default http://localhost:8080). Env: SANDBOX_URL
  --token <token>          the sandbox's --admin-token. Env: ADMIN_TOKEN
  --pharmacy <licence>     a target pharmacy; repeat (or comma-separate) for several
                           (default: every pharmacy with an active subscription)
  --item <rxnorm[:qty]>    a medication by RxNorm code, with a quantity; repeat for several
                           (default: generated items), e.g. --item 861007:60
  --deadline <duration>    time to confirm: 30s, 2m, 500ms or milliseconds
                           (default: the sandbox's --confirm-deadline)
  --patient <key>          the patient: system|value of an identifier, or an id
                           (default: a generated patient)
  --json                   print the created order as JSON instead of a summary
  -h, --help               this help

Exit codes: 0 created, 1 refused or the sandbox unreachable, 2 bad usage.`;

/** How long to wait for the sandbox to answer: creating an order does not wait for the pushes. */
const REQUEST_TIMEOUT_MS = 15_000;

const DURATION = /^(\d+)(ms|s|m)?$|^(\d+\.\d+)(ms|s|m)$/;

export interface TriggerIo {
  out(line: string): void;
  err(line: string): void;
  env: NodeJS.ProcessEnv;
}

class Usage extends Error {}

interface OrderBody {
  items?: Array<{ medication: { code: string }; quantity?: number }>;
  pharmacies?: string[];
  deadline?: number | string;
  patient?: string;
}

/** The subset of the admin order view (src/orders/order-view.ts) the summary prints. */
interface OrderView {
  id: string;
  state: string;
  kind?: string;
  deadline?: string;
  items?: Array<{
    resourceType?: string;
    code?: string | null;
    display?: string | null;
    quantity?: { value?: number; unit?: string } | null;
  }>;
  pharmacies?: Array<{ licence: string; state: string }>;
}

function parse(argv: string[], env: NodeJS.ProcessEnv) {
  const { values, positionals } = parseCommandLine({
    args: argv,
    options: {
      url: { type: "string" },
      token: { type: "string" },
      pharmacy: { type: "string", multiple: true },
      item: { type: "string", multiple: true },
      deadline: { type: "string" },
      patient: { type: "string" },
      json: { type: "boolean" },
      help: { type: "boolean", short: "h" },
    },
    allowPositionals: true,
    strict: true,
  });
  if (values.help) return { help: true as const };
  if (positionals.length !== 1 || positionals[0] !== "order") {
    throw new Usage(
      positionals.length === 0
        ? "trigger needs what to trigger: uae-fhir-sandbox trigger order"
        : `Unknown trigger: ${positionals.join(" ")} (only "order" can be triggered)`,
    );
  }
  const base = (values.url ?? env.SANDBOX_URL ?? "http://localhost:8080").replace(/\/+$/, "");
  let url: URL | undefined;
  try {
    url = new URL(base);
  } catch {}
  if (!url || (url.protocol !== "http:" && url.protocol !== "https:")) {
    const from =
      values.url === undefined ? `SANDBOX_URL ${JSON.stringify(base)} (--url)` : `--url ${JSON.stringify(base)}`;
    throw new Usage(`${from}: expected an http:// or https:// URL such as http://localhost:8080`);
  }
  const body: OrderBody = {};
  const pharmacies = (values.pharmacy ?? []).flatMap((p) => p.split(",")).map((p) => p.trim());
  if (pharmacies.some((p) => p === ""))
    throw new Usage("--pharmacy: expected a pharmacy licence, e.g. --pharmacy PH-DXB-0001");
  if (pharmacies.length > 0) body.pharmacies = pharmacies;
  if (values.item) {
    body.items = values.item.map((text) => {
      const m = /^(\d+)(?::(\d+(?:\.\d+)?))?$/.exec(text.trim());
      const quantity = m?.[2] === undefined ? undefined : Number(m[2]);
      if (!m || quantity === 0) {
        throw new Usage(
          `--item ${JSON.stringify(text)}: expected an RxNorm code and a positive quantity, e.g. 861007:60`,
        );
      }
      return { medication: { code: m[1] as string }, ...(quantity === undefined ? {} : { quantity }) };
    });
  }
  if (values.deadline !== undefined) {
    const d = values.deadline.trim();
    const m = DURATION.exec(d);
    if (!m)
      throw new Usage(
        `--deadline ${JSON.stringify(values.deadline)}: expected a duration such as 30s, 2m, 500ms or 30000`,
      );
    // The admin API takes whole milliseconds as a number, or a string with its unit.
    body.deadline = m[1] !== undefined && m[2] === undefined ? Number(m[1]) : d;
  }
  if (values.patient !== undefined) {
    if (values.patient.trim() === "")
      throw new Usage("--patient: expected a patient key, e.g. urn:ae:emirates-id|784-1990-1234567-6");
    body.patient = values.patient;
  }
  return {
    help: false as const,
    endpoint: `${base}/__admin/orders`,
    token: values.token ?? (env.ADMIN_TOKEN || undefined),
    json: values.json === true,
    body,
  };
}

/** The diagnostics of an OperationOutcome, one line per issue; undefined when `body` is none. */
function diagnostics(body: unknown): string[] | undefined {
  const outcome = body as {
    resourceType?: string;
    issue?: Array<{ code?: string; diagnostics?: string; expression?: string[] }>;
  };
  if (outcome?.resourceType !== "OperationOutcome" || !Array.isArray(outcome.issue)) return undefined;
  return outcome.issue.map(
    (i) =>
      `  ${i.code ?? "error"}: ${i.diagnostics ?? "(no diagnostics)"}${i.expression?.length ? ` (at ${i.expression.join(", ")})` : ""}`,
  );
}

function summary(order: OrderView, endpoint: string): string[] {
  const lines = [`Order ${order.id}${order.kind ? ` (${order.kind})` : ""} created: ${order.state}`];
  if (order.deadline) lines.push(`  confirm before: ${order.deadline}`);
  lines.push("  items:");
  for (const item of order.items ?? []) {
    const quantity =
      item.quantity?.value !== undefined
        ? ` × ${item.quantity.value}${item.quantity.unit ? ` ${item.quantity.unit}` : ""}`
        : "";
    lines.push(`    - ${[item.code ?? "?", item.display].filter(Boolean).join(" ")}${quantity}`);
  }
  lines.push("  sent to:");
  for (const p of order.pharmacies ?? []) lines.push(`    - ${p.licence} (${p.state})`);
  lines.push(`  follow it: GET ${endpoint}/${encodeURIComponent(order.id)}`);
  return lines;
}

function networkError(error: unknown): string {
  const e = error as Error & { cause?: { code?: string; message?: string } };
  if (e.name === "TimeoutError") return `no answer within ${REQUEST_TIMEOUT_MS / 1000} s`;
  // fetch says only "fetch failed"; the cause says why (ECONNREFUSED, ENOTFOUND, "bad port", ...).
  if (e.cause?.message) return e.cause.message;
  return e.cause?.code ?? e.message;
}

/**
 * `uae-fhir-sandbox trigger order`: creates an order on a running sandbox
 * through its admin API and prints what was created. Exit 0 created, 1
 * refused or unreachable, 2 bad usage.
 *
 * @example
 *   uae-fhir-sandbox trigger order --url http://localhost:8080 --pharmacy PH-DXB-0001 --item 861007:60 --deadline 30s
 */
export async function trigger(argv: string[], io: TriggerIo): Promise<number> {
  let options: ReturnType<typeof parse>;
  try {
    options = parse(argv, io.env);
  } catch (error) {
    io.err(`${(error as Error).message}\nRun uae-fhir-sandbox trigger order --help for the options.`);
    return 2;
  }
  if (options.help) {
    io.out(TRIGGER_USAGE);
    return 0;
  }
  const { endpoint, token, json, body } = options;
  let res: Response;
  let text: string;
  try {
    res = await fetch(endpoint, {
      method: "POST",
      headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}) },
      body: JSON.stringify(body),
      redirect: "manual",
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    });
    text = await res.text();
  } catch (error) {
    io.err(`Could not reach the sandbox at ${endpoint}: ${networkError(error)}.`);
    io.err("Is it running? Start it with uae-fhir-sandbox serve, or give its address with --url or SANDBOX_URL.");
    return 1;
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  if (res.status === 201 && (parsed as OrderView | undefined)?.id !== undefined) {
    if (json) io.out(JSON.stringify(parsed, null, 2));
    else for (const line of summary(parsed as OrderView, endpoint)) io.out(line);
    return 0;
  }
  const issues = diagnostics(parsed);
  if (json && parsed !== undefined) io.out(JSON.stringify(parsed, null, 2));
  io.err(`The sandbox refused the order (HTTP ${res.status}):`);
  if (issues) for (const line of issues) io.err(line);
  else io.err(`  ${text.slice(0, 500) || "(empty body)"}`);
  if (res.status === 401) io.err("Give the sandbox's admin token with --token or ADMIN_TOKEN.");
  return 1;
}
