import { randomUUID } from "node:crypto";
import { DEFAULT_OPTIONS } from "../config/options.js";
import { isValidEmiratesId } from "../domain/emirates-id.js";
import {
  EXAMPLE_ENDPOINT,
  EXAMPLE_PHARMACY,
  type ExampleInput,
  exampleEmiratesId,
  exampleMessage,
  type OrderFacts,
  type OrderView,
  orderFacts,
} from "../examples/example-message.js";
import { buildCatalogue, type Catalogue, loadOperationsFile } from "../routing/catalogue.js";
import { operationNames } from "../routing/operation-names.js";
import { parseCommandLine } from "./parse-command-line.js";

export const EXAMPLE_USAGE = `Usage: uae-fhir-sandbox example <operation> [options]

Prints a valid request message for an operation — any of the 18, or an event code or
alias of an operations file — enveloped as {"content": "<Bundle JSON>"}, ready to POST
(stderr says where). Records to update or remove, and tasks to change, are those of the
patient's generated profile, which a sandbox with the same --seed holds for that patient.

Options:
  --bundle                   print the message Bundle alone, not the envelope
  --patient <emirates-id>    the patient, 784-YYYY-NNNNNNN-C (default: one generated from --seed)
  --seed <text>              the sandbox's seed (default ${DEFAULT_OPTIONS.seed}). Env: SEED
  --emirates-id-system <uri> the sandbox's Emirates ID system (default ${DEFAULT_OPTIONS.emiratesIdSystem}).
                             Env: EMIRATES_ID_SYSTEM
  --operations <file>        the sandbox's operations file: its event codes. Env: OPERATIONS
  --pharmacy <licence>       drug orders: the pharmacy (default ${EXAMPLE_PHARMACY.licence}, or the order's only one)
  --endpoint <url>           subscribe-order-notifications: the pharmacy's rest-hook endpoint
                             (default ${EXAMPLE_ENDPOINT})
  --order <id>               confirm-drugs-availability, receive-allocation, send-dispense-summary:
                             the ids of this order's Task and requests, read from a running sandbox
                             (GET /__admin/orders/{id})
  --url <url>                that sandbox (default http://localhost:8080). Env: SANDBOX_URL
  --token <token>            its admin token. Env: ADMIN_TOKEN
  -h, --help                 this help

Example:
  uae-fhir-sandbox example add-allergy --patient 784-1990-1234567-6 |
    curl -s 'http://localhost:8080/uae-fhir/r4/$process-message' -H 'Content-Type: application/json' --data-binary @-

Exit codes: 0 printed, 1 the order could not be read from the sandbox, 2 bad usage.`;

const REQUEST_TIMEOUT_MS = 15_000;

export interface ExampleIo {
  out(line: string): void;
  err(line: string): void;
  env: NodeJS.ProcessEnv;
}

class Usage extends Error {}
class Unreachable extends Error {}

function parse(argv: string[], env: NodeJS.ProcessEnv) {
  const { values, positionals } = parseCommandLine({
    args: argv,
    options: {
      bundle: { type: "boolean" },
      patient: { type: "string" },
      seed: { type: "string" },
      "emirates-id-system": { type: "string" },
      operations: { type: "string" },
      pharmacy: { type: "string" },
      endpoint: { type: "string" },
      order: { type: "string" },
      url: { type: "string" },
      token: { type: "string" },
      help: { type: "boolean", short: "h" },
    },
    allowPositionals: true,
    strict: true,
  });
  if (values.help) return { help: true as const };
  if (positionals.length !== 1) {
    throw new Usage(
      positionals.length === 0
        ? "example needs an operation, e.g. uae-fhir-sandbox example add-allergy"
        : `example takes one operation, found: ${positionals.join(" ")}`,
    );
  }
  const operationsFile = values.operations ?? (env.OPERATIONS || undefined);
  let catalogue: Catalogue;
  try {
    catalogue = buildCatalogue(operationsFile ? loadOperationsFile(operationsFile) : undefined);
  } catch (error) {
    throw new Usage((error as Error).message);
  }
  const name = positionals[0] as string;
  const resolved = operationNames(catalogue).resolve(name);
  if (!resolved.ok) throw new Usage(resolved.problem);
  const operation = catalogue.byId(resolved.id);
  if (!operation) throw new Usage(`unknown operation ${name}`);
  const seed = values.seed ?? env.SEED ?? DEFAULT_OPTIONS.seed;
  const patient = values.patient ?? exampleEmiratesId(seed);
  if (!isValidEmiratesId(patient)) {
    throw new Usage(
      `--patient ${JSON.stringify(patient)}: expected an Emirates ID, 784-YYYY-NNNNNNN-C with a valid check digit`,
    );
  }
  const url = (values.url ?? env.SANDBOX_URL ?? "http://localhost:8080").replace(/\/+$/, "");
  if (!URL.canParse(url) || !/^https?:$/.test(new URL(url).protocol)) {
    throw new Usage(`--url ${JSON.stringify(url)}: expected an http:// or https:// URL such as http://localhost:8080`);
  }
  const endpoint = values.endpoint ?? EXAMPLE_ENDPOINT;
  if (!URL.canParse(endpoint)) throw new Usage(`--endpoint ${JSON.stringify(endpoint)}: expected a URL`);
  return {
    help: false as const,
    operation,
    // Asked for by an event code or alias: that is the code the message carries (as the catalogue spells it).
    event:
      [operation.event, ...operation.aliases].find((c) => c.toLowerCase() === name.toLowerCase()) ?? operation.event,
    seed,
    emiratesIdSystem: values["emirates-id-system"] ?? env.EMIRATES_ID_SYSTEM ?? DEFAULT_OPTIONS.emiratesIdSystem,
    patient,
    pharmacy: values.pharmacy,
    endpoint,
    order: values.order,
    url,
    token: values.token ?? (env.ADMIN_TOKEN || undefined),
    bundle: values.bundle === true,
  };
}

/** What an answer says, on one line: an OperationOutcome's diagnostics, else the start of its text. */
function saying(text: string): string {
  try {
    const body = JSON.parse(text) as { resourceType?: unknown; issue?: Array<{ diagnostics?: unknown }> };
    const said = body.resourceType === "OperationOutcome" ? body.issue?.map((i) => i.diagnostics) : undefined;
    if (said?.every((d) => typeof d === "string") && said.length > 0) return said.join(" ");
  } catch {
    // Not JSON: said as it is.
  }
  return text.replace(/\s+/g, " ").trim().slice(0, 300);
}

async function readOrder(url: string, id: string, token: string | undefined, licence: string | undefined) {
  const endpoint = `${url}/__admin/orders/${encodeURIComponent(id)}`;
  let res: Response;
  try {
    res = await fetch(endpoint, {
      headers: token ? { authorization: `Bearer ${token}` } : {},
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    });
  } catch (error) {
    const cause = (error as { cause?: { message?: string } }).cause?.message ?? (error as Error).message;
    throw new Unreachable(
      `Could not reach the sandbox at ${endpoint}: ${cause}. Is it running? Give its address with --url.`,
    );
  }
  const text = await res.text();
  if (res.status === 404) {
    throw new Unreachable(
      `Order ${JSON.stringify(id)}: the sandbox at ${url} has no such order (${saying(text)}). --order takes the id of one of its orders (uae-fhir-sandbox trigger order creates one).`,
    );
  }
  if (res.status !== 200) {
    const hint = res.status === 401 ? " Give its admin token with --token or ADMIN_TOKEN." : "";
    throw new Unreachable(
      `Order ${JSON.stringify(id)}: GET ${endpoint} answered ${res.status}: ${saying(text)}${hint}`,
    );
  }
  const facts = orderFacts(JSON.parse(text) as OrderView, licence);
  if (!facts.ok) throw new Usage(facts.problem);
  return facts;
}

/**
 * `uae-fhir-sandbox example <operation>`: prints a valid request message
 * (see exampleMessage). Exit 0 printed, 1 the order could not be read, 2 bad usage.
 *
 * @example
 *   uae-fhir-sandbox example confirm-drugs-availability --order 3 --pharmacy PH-DXB-0001 --url http://localhost:8080
 */
export async function exampleCommand(argv: string[], io: ExampleIo): Promise<number> {
  try {
    const options = parse(argv, io.env);
    if (options.help) {
      io.out(EXAMPLE_USAGE);
      return 0;
    }
    const pharmacyOps = ["confirm-drugs-availability", "receive-allocation", "send-dispense-summary"];
    let order: OrderFacts | undefined;
    let licence = options.pharmacy;
    if (options.order !== undefined) {
      if (!pharmacyOps.includes(options.operation.id)) {
        throw new Usage(`--order is for ${pharmacyOps.join(", ")}, not ${options.operation.id}`);
      }
      const read = await readOrder(options.url, options.order, options.token, options.pharmacy);
      order = read.facts;
      licence = read.licence;
    }
    const input: ExampleInput = {
      operation: options.operation.id,
      event: options.event,
      seed: options.seed,
      emiratesIdSystem: options.emiratesIdSystem,
      emiratesId: options.patient,
      fhirBase: `${options.url}/uae-fhir/r4`,
      pharmacy: licence
        ? {
            licence,
            ...(licence === EXAMPLE_PHARMACY.licence ? { name: EXAMPLE_PHARMACY.name } : {}),
            endpoint: options.endpoint,
          }
        : { ...EXAMPLE_PHARMACY, endpoint: options.endpoint },
      ...(order ? { order } : {}),
    };
    const { bundle, notes } = exampleMessage(input, { newId: randomUUID, now: () => new Date() });
    io.out(JSON.stringify(options.bundle ? bundle : { content: JSON.stringify(bundle) }, null, 2));
    for (const note of notes) io.err(`note: ${note}`);
    const send = options.bundle ? 'wrap it as {"content": "<Bundle JSON>"} and POST it' : "POST it";
    io.err(`${send} to ${options.url}${options.operation.path} (Content-Type: application/json)`);
    return 0;
  } catch (error) {
    if (error instanceof Unreachable) {
      io.err(error.message);
      return 1;
    }
    io.err(`${(error as Error).message}\nRun uae-fhir-sandbox example --help for the options.`);
    return 2;
  }
}
