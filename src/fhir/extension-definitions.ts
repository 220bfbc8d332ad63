import type { ElementDefinition, StructureDefinition } from "fhir/r4.js";
import { VERSION } from "../version.js";
import { canonicalUrl, PUBLISHER } from "./canonical.js";

/** One extension the sandbox defines: where it may appear and the type of its value. */
export interface SandboxExtension {
  /** StructureDefinition id, also the tail of its canonical URL. */
  id: string;
  /** Computer-friendly name (`[A-Z]([A-Za-z0-9_]){0,254}`). */
  name: string;
  title: string;
  description: string;
  /** FHIRPaths of the elements that may carry it (context of type `element`). */
  context: readonly string[];
  /** The one type of `value[x]`. */
  valueType: "Duration" | "Money" | "string";
}

/** Where the sandbox puts its extensions: on delivery options, in confirmations (output) and allocations (input). */
const DELIVERY_OPTION = ["Task.input", "Task.output"] as const;

/** The extensions the sandbox defines, as data; their URLs, StructureDefinitions and docs come from here. */
export const SANDBOX_EXTENSIONS = [
  {
    id: "estimated-time",
    name: "EstimatedTime",
    title: "Estimated delivery time",
    description:
      "How long the pharmacy expects a delivery option to take, from allocation to the medication reaching the patient (home delivery) or being ready for pickup. A UCUM duration in minutes (`min`) or hours (`h`).",
    context: DELIVERY_OPTION,
    valueType: "Duration",
  },
  {
    id: "price",
    name: "Price",
    title: "Delivery option price",
    description: "What the patient pays for a delivery option (not for the medication), in UAE dirhams (`AED`).",
    context: DELIVERY_OPTION,
    valueType: "Money",
  },
  {
    id: "push-client-certificate",
    name: "PushClientCertificate",
    title: "Client certificate of pushes",
    description:
      "On a rest-hook Subscription's channel: the name of the client certificate the sandbox presents when it pushes to the endpoint over HTTPS, one of the certificates the sandbox was given (--push-client-certs). What an exchange's onboarding agrees with a pharmacy whose receiver asks for mutual TLS.",
    context: ["Subscription.channel"],
    valueType: "string",
  },
] as const satisfies readonly SandboxExtension[];

/** The canonical URL of the estimated-time extension (on delivery options). */
export const ETA_EXTENSION = canonicalUrl("StructureDefinition", "estimated-time");
/** The canonical URL of the price extension (on delivery options). */
export const PRICE_EXTENSION = canonicalUrl("StructureDefinition", "price");

/** The canonical URL of the push-client-certificate extension (on Subscription.channel). */
export const PUSH_CERTIFICATE_EXTENSION = canonicalUrl("StructureDefinition", "push-client-certificate");

/** When the extension definitions last changed (StructureDefinition.date): they are fixed, not generated. */
export const EXTENSIONS_DATE = "2026-11-27";

/**
 * The R4 StructureDefinition of a sandbox extension: a constraint on
 * Extension whose differential fixes `url` and the `value[x]` type.
 *
 * @example
 *   extensionDefinition(SANDBOX_EXTENSIONS[0]).url
 *   // "https://uae-fhir-sandbox.example/fhir/StructureDefinition/estimated-time"
 */
export function extensionDefinition(extension: SandboxExtension): StructureDefinition {
  const url = canonicalUrl("StructureDefinition", extension.id);
  const element: ElementDefinition[] = [
    {
      id: "Extension",
      path: "Extension",
      short: extension.title,
      definition: extension.description,
      min: 0,
      max: "1",
    },
    { id: "Extension.extension", path: "Extension.extension", max: "0" },
    { id: "Extension.url", path: "Extension.url", fixedUri: url },
    { id: "Extension.value[x]", path: "Extension.value[x]", min: 1, type: [{ code: extension.valueType }] },
  ];
  return {
    resourceType: "StructureDefinition",
    id: extension.id,
    url,
    version: VERSION,
    name: extension.name,
    title: extension.title,
    status: "active",
    date: EXTENSIONS_DATE,
    publisher: PUBLISHER,
    description: extension.description,
    fhirVersion: "4.0.1",
    kind: "complex-type",
    abstract: false,
    context: extension.context.map((expression) => ({ type: "element", expression })),
    type: "Extension",
    baseDefinition: "http://hl7.org/fhir/StructureDefinition/Extension",
    derivation: "constraint",
    differential: { element },
  };
}

/**
 * Every extension StructureDefinition, in table order.
 *
 * @example
 *   extensionDefinitions().map((sd) => sd.id) // ["estimated-time", "price", "push-client-certificate"]
 */
export function extensionDefinitions(): StructureDefinition[] {
  return SANDBOX_EXTENSIONS.map(extensionDefinition);
}
