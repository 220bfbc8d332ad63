import type { CapabilityStatement } from "fhir/r4.js";
import { VERSION } from "../version.js";
import { PUBLISHER } from "./canonical.js";
import type { PublishedMessage } from "./message-definitions.js";
import { READABLE_TYPES } from "./resource-lookup.js";

/** The standard definition of the operation every message path serves. */
export const PROCESS_MESSAGE_DEFINITION = "http://hl7.org/fhir/OperationDefinition/MessageHeader-process-message";

/** The one search parameter the conformance resources take: resolving a canonical URL to its resource. */
const BY_URL = {
  name: "url",
  definition: "http://hl7.org/fhir/SearchParameter/conformance-url",
  type: "uri",
  documentation: "The canonical URL, exactly (a `|version` suffix is ignored). Other parameters are ignored.",
} as const;

/** A message path as the request saw it, and the event codes it receives. */
export interface MessageEndpoint {
  /** Absolute URL, e.g. `http://localhost:8080/uae-fhir/r4/$process-message`. */
  address: string;
  events: readonly string[];
}

export interface CapabilityInput {
  /** The FHIR base the statement is served under, as the request saw it (implementation.url). */
  fhirBase: string;
  endpoints: readonly MessageEndpoint[];
  messages: readonly PublishedMessage[];
  /** When this configuration was published: the sandbox's start. */
  date: string;
  /** With --auth oauth2: where access tokens come from; the message paths then need one. */
  tokenEndpoint?: string;
}

/** SMART's (v1) extension naming the OAuth2 endpoints; v2 clients read .well-known/smart-configuration instead. */
const OAUTH_URIS = "http://fhir-registry.smarthealthit.org/StructureDefinition/oauth-uris";

/** rest.security of a sandbox running --auth oauth2: SMART Backend Services style client credentials. */
function security(tokenEndpoint: string): NonNullable<CapabilityStatement["rest"]>[number]["security"] {
  return {
    extension: [{ url: OAUTH_URIS, extension: [{ url: "token", valueUri: tokenEndpoint }] }],
    service: [
      {
        coding: [{ system: "http://terminology.hl7.org/CodeSystem/restful-security-service", code: "SMART-on-FHIR" }],
        text: "OAuth2 client credentials (SMART Backend Services)",
      },
    ],
    description: `The message paths need \`Authorization: Bearer <access token>\`, from \`POST ${tokenEndpoint}\` (client-credentials grant; client_secret_basic, client_secret_post or private_key_jwt). Discovery: \`.well-known/smart-configuration\` under this FHIR base. Reading conformance resources needs no token; reading what a workspace holds (\`GET [base]/{type}/{id}\`) needs one with a scope ending in \`.read\` (patient-profile.read).`,
  };
}

/**
 * The sandbox's CapabilityStatement (CONTRACT §12): an instance statement
 * whose messaging lists every message path and every MessageDefinition it
 * receives or sends, and whose rest part lists the conformance resources it
 * serves and $process-message.
 *
 * @example
 *   capabilityStatement({ fhirBase: "http://localhost:8080/uae-fhir/r4", endpoints, messages, date })
 */
export function capabilityStatement(input: CapabilityInput): CapabilityStatement {
  return {
    resourceType: "CapabilityStatement",
    name: "UaeFhirSandbox",
    title: "uae-fhir-sandbox",
    status: "active",
    date: input.date,
    publisher: PUBLISHER,
    description:
      "A local stand-in for a UAE health-information exchange: FHIR R4 messages POSTed to $process-message in a JSON envelope, answered with response messages, and pushes to subscribed pharmacies.",
    kind: "instance",
    software: { name: "uae-fhir-sandbox", version: VERSION },
    implementation: { description: `uae-fhir-sandbox ${VERSION}`, url: input.fhirBase },
    fhirVersion: "4.0.1",
    format: ["json"],
    rest: [
      {
        mode: "server",
        ...(input.tokenEndpoint ? { security: security(input.tokenEndpoint) } : {}),
        documentation:
          "Conformance resources that describe the messages (read, and search by `url` or with no parameter for all of a type), $process-message on the message paths, and read and vread of what the caller's workspace holds or answered with: every RESTful fullUrl of an answer or push.",
        resource: [
          {
            type: "MessageDefinition",
            interaction: [{ code: "read" }, { code: "search-type" }],
            searchParam: [BY_URL],
            documentation:
              "One per operation the sandbox receives (and per alias of its event code), one per push it sends; generated from the operations catalogue.",
          },
          {
            type: "StructureDefinition",
            interaction: [{ code: "read" }, { code: "search-type" }],
            searchParam: [BY_URL],
            documentation: "The extensions the sandbox defines.",
          },
          ...READABLE_TYPES.map((type) => ({
            type,
            interaction: [{ code: "read" as const }, { code: "vread" as const }],
            versioning: "versioned" as const,
            documentation:
              "Read-only, in the caller's workspace: what it holds now, else what its journal's answers and pushes carried; 410 once entered-in-error.",
          })),
        ],
        operation: [
          {
            name: "process-message",
            definition: PROCESS_MESSAGE_DEFINITION,
            documentation:
              'POST `{"content": "<message Bundle as a JSON string>"}` to a messaging endpoint; see `messaging.documentation` for which operation goes where.',
          },
        ],
      },
    ],
    messaging: [
      {
        endpoint: input.endpoints.map((endpoint) => ({
          protocol: {
            system: "http://terminology.hl7.org/CodeSystem/message-transport",
            code: "http",
            display: "HTTP",
          },
          address: endpoint.address,
        })),
        documentation: input.endpoints
          .map(
            (endpoint) => `\`POST ${endpoint.address}\` receives ${endpoint.events.map((e) => `\`${e}\``).join(", ")}.`,
          )
          .join("\n\n"),
        supportedMessage: input.messages.map(({ mode, definition }) => ({
          mode,
          definition: definition.url as string,
        })),
      },
    ],
  };
}
