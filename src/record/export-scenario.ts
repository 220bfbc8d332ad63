import { stringify } from "yaml";
import { decodeEnvelope } from "../envelope/envelope.js";
import { isObject, parseJson } from "../envelope/json.js";
import { type Message, readMessage } from "../envelope/message.js";
import { FHIR_ID } from "../fhir/ids.js";
import { patientKeysOf } from "../matching/patient-keys.js";
import { faults, type ResponseSpec, type RuleSpec, type ScenarioFile } from "../scenarios/schema.js";
import { VERSION } from "../version.js";
import type { RecordedCall } from "./read-journal.js";

/** A recorded call the export left out, and why. */
export interface ExportSkip {
  id: string;
  reason: string;
}

/** Where the calls came from, for the comment at the top of the file. */
export interface ExportSource {
  /** e.g. the journal file's path, or "the in-memory journal of http://…". */
  from: string;
  at: Date;
}

interface Group {
  when: NonNullable<RuleSpec["when"]> & { operation: string };
  /** How many conditions besides the operation: more specific rules go first. */
  conditions: number;
  first: number;
  responses: ResponseSpec[];
  calls: string[];
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const RESOURCE_TYPE = /^[A-Z][A-Za-z]+$/;
/** Response headers that describe the transport or that the sandbox sets itself: not replayed. */
const TRANSPORT_HEADERS = new Set([
  "content-length",
  "content-encoding",
  "transfer-encoding",
  "connection",
  "keep-alive",
  "date",
  "server",
  "vary",
  // The sandbox's own stamps: a served rule gets its own call id and rule name, and a resend its duplicate mark.
  "x-sandbox-call-id",
  "x-sandbox-rule",
  "x-sandbox-duplicate",
]);
const FHIR_JSON_TYPE = "application/fhir+json";

const bodyText = (body: unknown): string =>
  typeof body === "string" ? body : body === null || body === undefined ? "" : JSON.stringify(body);

/** Whether any string in a JSON value holds "{{", which scenario templates would read as a template. */
function holdsBraces(value: unknown): boolean {
  if (typeof value === "string") return value.includes("{{");
  if (Array.isArray(value)) return value.some(holdsBraces);
  if (isObject(value)) return Object.values(value).some(holdsBraces);
  return false;
}

/** The resource ids a body carries (its own, and its Bundle entries'), inside a response envelope too. */
function resourceIds(body: unknown, into: Set<string>): void {
  let value = body;
  if (isObject(value) && typeof value.content === "string") {
    const inner = parseJson(value.content);
    if (inner.ok) value = inner.value;
  }
  if (!isObject(value)) return;
  if (typeof value.id === "string") into.add(value.id);
  if (!Array.isArray(value.entry)) return;
  for (const entry of value.entry) {
    if (isObject(entry) && isObject(entry.resource) && typeof entry.resource.id === "string") {
      into.add(entry.resource.id);
    }
  }
}

const quoted = (text: string) => `'${text.replaceAll("\\", "\\\\").replaceAll("'", "\\'")}'`;

/**
 * A recorded answer as a scenario body: what changes from one answer to the
 * next becomes a template, so the replayed answer is correct for the new
 * request — Bundle.id → {{ uuid() }}, MessageHeader.id and the header's
 * urn:uuid fullUrl → {{ uuid('message-header') }} (one id, so they still
 * agree), Bundle.timestamp and meta.lastUpdated → {{ now() }},
 * MessageHeader.response.identifier → {{ request.messageId }},
 * source.endpoint → {{ request.url }} (the recording's upstream becomes
 * whichever sandbox answers), destination endpoints → {{ request.source }}.
 * Everything else (stored records' ids, references, codes) is kept as
 * recorded.
 */
function templatedBody(body: unknown, request: { messageId: string | null; source: string | undefined }): unknown {
  if (isObject(body) && typeof body.content === "string" && Object.keys(body).length === 1) {
    // --response-envelope: the templates go inside the Bundle string; rendering fills them in place.
    const inner = parseJson(body.content);
    return inner.ok && isObject(inner.value) ? { content: JSON.stringify(templatedBody(inner.value, request)) } : body;
  }
  if (!isObject(body)) return body;
  const copy = structuredClone(body);
  const stampMeta = (resource: Record<string, unknown>) => {
    if (isObject(resource.meta) && typeof resource.meta.lastUpdated === "string") {
      resource.meta.lastUpdated = "{{ now() }}";
    }
  };
  stampMeta(copy);
  if (copy.resourceType !== "Bundle") return copy;
  if (typeof copy.id === "string") copy.id = "{{ uuid() }}";
  if (typeof copy.timestamp === "string") copy.timestamp = "{{ now() }}";
  const entries = Array.isArray(copy.entry) ? copy.entry : [];
  for (const entry of entries) if (isObject(entry) && isObject(entry.resource)) stampMeta(entry.resource);
  const first = entries[0];
  const header = isObject(first) && isObject(first.resource) ? first.resource : undefined;
  if (!isObject(first) || header?.resourceType !== "MessageHeader") return copy;
  if (typeof header.id === "string") {
    if (first.fullUrl === `urn:uuid:${header.id}`) first.fullUrl = "urn:uuid:{{ uuid('message-header') }}";
    header.id = "{{ uuid('message-header') }}";
  }
  if (isObject(header.source) && typeof header.source.endpoint === "string")
    header.source.endpoint = "{{ request.url }}";
  if (isObject(header.response) && request.messageId !== null && header.response.identifier === request.messageId) {
    header.response.identifier = "{{ request.messageId }}";
  }
  if (Array.isArray(header.destination) && request.source !== undefined) {
    for (const destination of header.destination) {
      if (isObject(destination) && destination.endpoint === request.source)
        destination.endpoint = "{{ request.source }}";
    }
  }
  return copy;
}

/**
 * Turns recorded calls into scenario rules (`uae-fhir-sandbox export`,
 * `GET /__admin/calls/export?format=scenario`). Each inbound call that
 * carried a readable message becomes a response of the rule matching:
 *
 * - its operation;
 * - its patient (`when.patient`: the first identifier key, else a patient id
 *   the client chose);
 * - the ids of its focus resources, and the sender Organization's identifier,
 *   as FHIRPath conditions — but only ids the client chose: an id shaped as
 *   a UUID that no earlier answer or push carried is taken as generated fresh
 *   per message (as MessageHeader.id and fullUrls are) and not matched.
 *
 * Calls with the same conditions become one rule whose `sequence` answers in
 * recorded order (and repeats its last answer); more specific rules come
 * first. Answers are the recorded status and body, their volatile parts
 * templated (see templatedBody). Feed calls in recorded order.
 *
 * @example
 *   const exporter = new ScenarioExporter();
 *   for await (const call of readJournal(path, stats)) exporter.add(call);
 *   writeFileSync(out, exporter.toYaml({ from: path, at: new Date() }));
 */
export class ScenarioExporter {
  readonly #groups = new Map<string, Group>();
  /** Ids the server handed out so far (answers, pushes): the client refers back to them. */
  readonly #served = new Set<string>();
  readonly skipped: ExportSkip[] = [];
  inbound = 0;
  exported = 0;

  add(call: RecordedCall): void {
    if (call.direction !== "inbound") {
      // A push carries the ids (fulfillment Task, …) that the pharmacy's later messages name.
      const pushed = decodeEnvelope(bodyText(call.request.body), true);
      if (pushed.ok) resourceIds(pushed.bundle, this.#served);
      return;
    }
    this.inbound++;
    const reason = this.#addInbound(call);
    if (reason !== undefined) this.skipped.push({ id: call.id, reason });
    // Ids the server handed out in this answer: a later message naming one names content, not a fresh id.
    if (call.response) resourceIds(call.response.body, this.#served);
  }

  /** Adds an inbound call to the rule of its key content; returns why it cannot be exported otherwise. */
  #addInbound(call: RecordedCall): string | undefined {
    if (call.operation === null) return "no operation: the message could not be read or routed";
    const decoded = decodeEnvelope(bodyText(call.request.body), true);
    const message = decoded.ok ? readMessage(decoded.bundle).message : undefined;
    if (!message) return "the request carried no readable message Bundle";
    const response = this.#response(call, message);
    if (typeof response === "string") return response;
    const { when, conditions } = this.#when(call.operation, message);
    const key = JSON.stringify(when);
    let group = this.#groups.get(key);
    if (!group) {
      group = { when, conditions, first: this.#groups.size, responses: [], calls: [] };
      this.#groups.set(key, group);
    }
    group.responses.push(response);
    group.calls.push(call.id);
    this.exported++;
    return undefined;
  }

  /** Whether an id was chosen by the client (kept for matching) rather than generated fresh per message. */
  #chosen(id: string): boolean {
    return FHIR_ID.test(id) && (!UUID.test(id) || this.#served.has(id));
  }

  #when(operation: string, message: Message): { when: Group["when"]; conditions: number } {
    const keys = patientKeysOf(message);
    const patient = keys.find((k) => k.includes("|")) ?? keys.find((k) => this.#chosen(k));
    const fhirpath: string[] = [];
    for (const focus of message.focus) {
      const { resourceType, id } = focus.resource;
      if (resourceType === "Patient" || !RESOURCE_TYPE.test(resourceType)) continue;
      if (typeof id === "string" && this.#chosen(id)) {
        fhirpath.push(`Bundle.entry.resource.ofType(${resourceType}).where(id = ${quoted(id)}).exists()`);
      }
    }
    const sender = message.header.sender?.reference;
    const organization = sender ? message.resolve(sender)?.resource : undefined;
    if (organization?.resourceType === "Organization") {
      const licence = (organization.identifier as Array<{ value?: unknown }> | undefined)?.find(
        (i) => typeof i?.value === "string",
      )?.value as string | undefined;
      if (licence !== undefined) {
        fhirpath.push(
          `Bundle.entry.resource.ofType(Organization).where(identifier.value = ${quoted(licence)}).exists()`,
        );
      }
    }
    const when: Group["when"] = { operation };
    if (patient !== undefined) when.patient = patient;
    if (fhirpath.length > 0) when.fhirpath = fhirpath.length === 1 ? (fhirpath[0] as string) : fhirpath;
    return { when, conditions: (patient === undefined ? 0 : 1) + fhirpath.length };
  }

  #response(call: RecordedCall, message: Message): ResponseSpec | string {
    const description = `recorded call ${call.id} at ${call.at}`;
    if (call.fault !== undefined) {
      const fault = faults.find((f) => f === call.fault);
      if (!fault) return `the fault ${call.fault} cannot be scripted`;
      return { description, ...(call.response ? { status: call.response.status } : {}), fault };
    }
    if (!call.response) return "no response was recorded";
    const { status, body } = call.response;
    if (status < 200 || status > 599) return `status ${status} cannot be scripted`;
    // An empty answer is what the empty-body fault sends: the status, and nothing.
    if (body === null || body === "") return { description, status, fault: "empty-body" };
    if (typeof body === "string") return "the response body is not JSON";
    if (holdsBraces(body)) return 'the response holds "{{", which a scenario would read as a template';
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(call.response.headers)) {
      const lower = name.toLowerCase();
      if (TRANSPORT_HEADERS.has(lower) || value === "[redacted]") continue;
      if (lower === "content-type" && value.split(";")[0]?.trim().toLowerCase() === FHIR_JSON_TYPE) continue;
      headers[lower] = value;
    }
    return {
      description,
      status,
      ...(Object.keys(headers).length > 0 ? { headers } : {}),
      body: templatedBody(body, {
        messageId: typeof message.header.id === "string" ? message.header.id : null,
        source: message.header.source?.endpoint,
      }),
    };
  }

  /** The rules, most specific first, then in the order their first call was recorded. */
  rules(): RuleSpec[] {
    const groups = [...this.#groups.values()].sort((a, b) => b.conditions - a.conditions || a.first - b.first);
    const perOperation = new Map<string, number>();
    return groups.map((group) => {
      const n = (perOperation.get(group.when.operation) ?? 0) + 1;
      perOperation.set(group.when.operation, n);
      const name = `recorded ${group.when.operation} ${n}`;
      const description = `recorded call${group.calls.length > 1 ? "s" : ""} ${group.calls.join(", ")}`;
      const comparable = group.responses.map(({ description: _d, ...rest }) => JSON.stringify(rest));
      const allSame = comparable.every((r) => r === comparable[0]);
      if (group.responses.length === 1 || allSame) {
        return { name, description, when: group.when, respond: group.responses[0] as ResponseSpec };
      }
      return { name, description, when: group.when, sequence: group.responses, afterSequence: "repeat-last" };
    });
  }

  /** The scenario file, with a comment saying where and when it was exported and what was left out. */
  toYaml(source: ExportSource): string {
    const oneLine = (text: string) => text.replace(/[\r\n]+/g, " ");
    const rules = this.rules();
    const lines = [
      `# Exported by uae-fhir-sandbox ${VERSION} on ${source.at.toISOString()}`,
      `# from ${oneLine(source.from)}`,
      `# ${rules.length} rules from ${this.exported} of ${this.inbound} recorded inbound calls.`,
      "# Each rule matches a recorded message's operation, patient and the focus ids the client chose,",
      "# and answers with the recorded status and body; ids, timestamps and correlation are templates.",
    ];
    if (this.skipped.length > 0) {
      lines.push(`# Not exported (${this.skipped.length}):`);
      for (const s of this.skipped.slice(0, 50)) lines.push(`#   call ${oneLine(s.id)}: ${oneLine(s.reason)}`);
      if (this.skipped.length > 50) lines.push(`#   … and ${this.skipped.length - 50} more`);
    }
    const scenario: ScenarioFile = {
      name: "recorded",
      description: `Recorded calls from ${oneLine(source.from)}`,
      rules,
    };
    return `${lines.join("\n")}\n${stringify(scenario, { lineWidth: 0, aliasDuplicateObjects: false })}`;
  }
}
