import type { Bundle, MessageHeader, Resource } from "fhir/r4.js";
import { createApp, type SandboxApp } from "../app.js";
import { DEFAULT_OPTIONS } from "../config/options.js";
import type { MessageDeps } from "../fhir/response-message.js";
import { buildCatalogue } from "../routing/catalogue.js";
import type { Operation } from "../routing/operation.js";
import { EXAMPLE_ENDPOINT, EXAMPLE_PHARMACY, exampleMessage, type OrderView, orderFacts } from "./example-message.js";

/**
 * docs/operations.md: every operation with an example request — what
 * `uae-fhir-sandbox example` prints — and the answer a sandbox gives it,
 * generated from the code (`npm run docs:operations`) with a fixed seed,
 * clock and ids, so that a test can keep the file equal to it.
 */

const PATIENT = "784-1990-1234567-6";
const AT = new Date("2026-01-15T09:30:00.000Z");
const BASE = "http://localhost:8080";
const PHARMACY_SIDE = new Set(["confirm-drugs-availability", "receive-allocation", "send-dispense-summary"]);
/** The order the pharmacy's answers are about, as POST /__admin/orders takes it. */
const ORDER = { items: [{ medication: { code: "861007" }, quantity: 60 }], pharmacies: [EXAMPLE_PHARMACY.licence] };

/** Recognisable ids from a counter: requests `…4000-8000-…`, the sandbox's own `…4000-9000-…`. */
function counter(prefix: string): () => string {
  let n = 0;
  return () => `00000000-0000-4000-${prefix}-${String(++n).padStart(12, "0")}`;
}

const json = (value: unknown) => `\`\`\`json\n${JSON.stringify(value, null, 2)}\n\`\`\``;

async function post(sandbox: SandboxApp, path: string, bundle: Bundle) {
  const res = await sandbox.app.request(`${BASE}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ content: JSON.stringify(bundle) }),
  });
  return { status: res.status, body: (await res.json()) as Bundle };
}

/** The request and answer for one operation, each from a fresh sandbox: a pharmacy subscribed and an order made first where the operation answers one. */
async function exchange(operation: Operation) {
  const requestDeps: MessageDeps = { newId: counter("8000"), now: () => AT };
  const sandbox = createApp(
    { scenarios: undefined, watch: false, publicUrl: BASE },
    {
      newId: counter("9000"),
      now: () => AT,
      random: () => 0.5,
      // Pushes to the pharmacy are acknowledged at once, without a network.
      fetch: (async () => new Response(null, { status: 200 })) as unknown as typeof fetch,
      logger: { info: () => undefined, error: () => undefined },
    },
  );
  try {
    const build = (id: string, order?: Parameters<typeof exampleMessage>[0]["order"]) =>
      exampleMessage(
        {
          operation: id,
          event: buildCatalogue().byId(id)?.event ?? id,
          seed: DEFAULT_OPTIONS.seed,
          emiratesIdSystem: DEFAULT_OPTIONS.emiratesIdSystem,
          emiratesId: PATIENT,
          fhirBase: `${BASE}/uae-fhir/r4`,
          pharmacy: { ...EXAMPLE_PHARMACY, endpoint: EXAMPLE_ENDPOINT },
          ...(order ? { order } : {}),
        },
        requestDeps,
      ).bundle;
    let order: Parameters<typeof build>[1];
    if (PHARMACY_SIDE.has(operation.id)) {
      await post(sandbox, operation.path, build("subscribe-order-notifications"));
      const created = sandbox.orders.create(ORDER);
      if (!created.ok) throw new Error(`order not created: ${JSON.stringify(created.issues)}`);
      const view = (await (await sandbox.app.request(`/__admin/orders/${created.value.id}`)).json()) as OrderView;
      const facts = orderFacts(view, EXAMPLE_PHARMACY.licence);
      if (!facts.ok) throw new Error(facts.problem);
      order = facts.facts;
      // Receiving the allocation, and dispensing, follow a confirmation (the first full one is allocated).
      if (operation.id !== "confirm-drugs-availability") {
        await post(sandbox, operation.path, build("confirm-drugs-availability", order));
      }
    }
    const request = build(operation.id, order);
    const answer = await post(sandbox, operation.path, request);
    return { request, answer };
  } finally {
    sandbox.close();
  }
}

/** The answer as the doc shows it: the MessageHeader and the focus in full, the other entries by name. */
function answerSection(answer: { status: number; body: Bundle }): string {
  const entries = answer.body.entry ?? [];
  const header = entries[0]?.resource as MessageHeader;
  const focusUrls = new Set((header.focus ?? []).map((f) => f.reference));
  const focus = entries.filter((e) => focusUrls.has(e.fullUrl)).map((e) => e.resource as Resource);
  const others = entries
    .slice(1)
    .filter((e) => !focusUrls.has(e.fullUrl))
    .map((e) => `\`${e.resource?.resourceType}/${e.resource?.id}\``);
  return [
    `Answer: \`${answer.status}\`, a response message (\`response.code\`: \`${header.response?.code}\`) with ${entries.length} entries. Its MessageHeader:`,
    "",
    json(header),
    "",
    `The focus${focus.length > 1 ? ` (${focus.length} resources)` : ""}:`,
    "",
    ...focus.flatMap((r) => [json(r), ""]),
    ...(others.length > 0 ? [`Also in the Bundle, so that every reference resolves: ${others.join(", ")}.`, ""] : []),
  ].join("\n");
}

/** What the example command needs to print this request: the patient, or the order a pharmacy answers. */
function commandOptions(id: string): string {
  if (PHARMACY_SIDE.has(id)) return `--order 1 --url ${BASE} `;
  if (id === "subscribe-order-notifications") return "";
  return `--patient ${PATIENT} `;
}

/**
 * The block that sends the operation's example to a running sandbox and fails unless it answers `ok`. The page's
 * blocks run in page order against one sandbox (a test does so), so each example must leave the sandbox in a
 * state the next one's example is valid in: the confirm block makes the order that the later pharmacy answers
 * name, by the id the sandbox gave it.
 */
function tryIt({ id, path }: Operation): string {
  const order = `--order "$(jq -r .id order.json)" --url ${BASE}`;
  const lines =
    id === "confirm-drugs-availability"
      ? [
          `curl -s ${BASE}/__admin/orders -H 'Content-Type: application/json' \\`,
          `  -d '${JSON.stringify(ORDER)}' > order.json`,
          `npx uae-fhir-sandbox example ${id} ${order} |`,
        ]
      : PHARMACY_SIDE.has(id)
        ? [`npx uae-fhir-sandbox example ${id} ${order} |`]
        : [`npx uae-fhir-sandbox example ${id} ${commandOptions(id)}|`];
  return [
    "```sh",
    ...lines,
    `  curl -s '${BASE}${path}' -H 'Content-Type: application/json' --data-binary @- |`,
    `  jq -e '.entry[0].resource.response.code == "ok"'`,
    "```",
  ].join("\n");
}

/** The whole of docs/operations.md. */
export async function renderOperationsDoc(): Promise<string> {
  const { operations } = buildCatalogue();
  const parts = [
    "# Operations: an example of each",
    "",
    "<!-- Generated by `npm run docs:operations` from src/examples/operations-doc.ts; a test keeps this file equal to it. Do not edit by hand. -->",
    "",
    `Every operation with a request that \`uae-fhir-sandbox example <operation> --bundle\` prints (here for the patient with Emirates ID \`${PATIENT}\`, the default \`--seed\`, a fixed clock and counted ids) and the answer a fresh sandbox gives it. Send a request as \`{"content": "<the Bundle as a JSON string>"}\` — \`example\` prints that envelope unless given \`--bundle\`.`,
    "",
    "Records to update or remove, and tasks to move on, belong to the patient's generated profile, which a sandbox with the same seed holds from the start. The drug-order answers (confirm, receive-allocation, dispense) name the Task and MedicationRequests of an order: here one made for the example pharmacy after it subscribed; on a running sandbox, `example <operation> --order <id> --pharmacy <licence> --url <sandbox>` reads them from `GET /__admin/orders/{id}` ([pharmacy guide](pharmacy-guide.md)).",
    "",
    "Each section ends with the command that sends its example to a sandbox on `http://localhost:8080` (started with the default `--seed`) and prints `true` when the answer is `ok`. Run one after the other, in page order, against one freshly started sandbox, every one is answered `ok`: the confirm command first creates the order that it and the two after it answer, and saves it in `order.json`.",
    "",
    ...operations.map((op) => `- [${op.id}](#${op.id})`),
    "",
  ];
  for (const operation of operations) {
    const { request, answer } = await exchange(operation);
    parts.push(
      `## ${operation.id}`,
      "",
      operation.summary,
      "",
      `\`POST ${operation.path}\`, event code \`${operation.event}\`, focus: ${operation.focus.types.join(" or ")}.`,
      "",
      `Request (\`uae-fhir-sandbox example ${operation.id} ${commandOptions(operation.id)}--bundle\`):`,
      "",
      json(request),
      "",
      answerSection(answer),
      "On a running sandbox:",
      "",
      tryIt(operation),
      "",
    );
  }
  return `${parts.join("\n").trimEnd()}\n`;
}
