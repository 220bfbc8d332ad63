import type { Bundle, Resource } from "fhir/r4.js";
import type { Context, Hono } from "hono";
import { capabilityStatement } from "../fhir/capability-statement.js";
import { extensionDefinitions } from "../fhir/extension-definitions.js";
import { publishedMessages } from "../fhir/message-definitions.js";
import { issue } from "../fhir/outcome.js";
import { PUSH_MESSAGES } from "../orders/push-messages.js";
import type { Catalogue } from "../routing/catalogue.js";
import { FHIR_BASES } from "../routing/default-operations.js";
import type { EdgeEnv } from "./edge-env.js";
import { fhirResponse, outcomeResponse } from "./fhir-response.js";

export interface CapabilityRouteOptions {
  basePath: string;
  catalogue: Catalogue;
  /** When the sandbox started: the date of its CapabilityStatement and MessageDefinitions. */
  publishedAt: Date;
  /** With --auth oauth2: the token endpoint URL as a request to `url` should be told it (rest.security). */
  tokenEndpoint?(url: string): string;
}

/**
 * Capability publication: `metadata`, `MessageDefinition` and
 * `StructureDefinition` (read and searchset) under each FHIR base, GET only.
 * The definitions are built once: the catalogue is fixed at start.
 *
 * @example
 *   mountCapabilityRoutes(app, { basePath: "", catalogue, publishedAt: new Date() });
 *   // GET /uae-fhir/r4/metadata, GET /fhir/MessageDefinition/add-allergy, …
 */
export function mountCapabilityRoutes(app: Hono<EdgeEnv>, options: CapabilityRouteOptions): void {
  const { basePath, catalogue } = options;
  const messages = publishedMessages(catalogue.operations, PUSH_MESSAGES, options.publishedAt.toISOString());
  const tables = {
    MessageDefinition: new Map<string, Resource>(
      messages.map(({ definition }) => [definition.id as string, definition]),
    ),
    StructureDefinition: new Map<string, Resource>(extensionDefinitions().map((sd) => [sd.id as string, sd])),
  };
  // Under a /w/{workspace} prefix, the URLs published keep it: they lead back into the workspace.
  const sandboxUrl = (c: Context<EdgeEnv>) => `${new URL(c.req.url).origin}${c.get("workspacePrefix")}${basePath}`;
  const fhirBaseOf = (c: Context<EdgeEnv>, base: string) => `${sandboxUrl(c)}${base}`;

  for (const base of FHIR_BASES) {
    const root = `${basePath}${base}`;
    app.all(`${root}/metadata`, (c) => {
      if (c.req.method !== "GET") return notAllowed(c);
      const statement = capabilityStatement({
        fhirBase: fhirBaseOf(c, base),
        endpoints: catalogue.paths.map((path) => ({
          address: `${sandboxUrl(c)}${path}`,
          events: catalogue.operations.filter((op) => op.path === path).flatMap((op) => [op.event, ...op.aliases]),
        })),
        messages,
        date: options.publishedAt.toISOString(),
        ...(options.tokenEndpoint ? { tokenEndpoint: options.tokenEndpoint(c.req.url) } : {}),
      });
      return fhirResponse(c, 200, statement);
    });
    for (const [type, table] of Object.entries(tables)) {
      app.all(`${root}/${type}`, (c) => {
        if (c.req.method !== "GET") return notAllowed(c);
        // Only `url` is supported; other parameters are ignored, as FHIR search allows, and left out of the self link.
        const url = c.req.query("url");
        const canonical = url?.split("|")[0];
        const matches = [...table.values()].filter((r) => canonical === undefined || urlOf(r) === canonical);
        const self = `${fhirBaseOf(c, base)}/${type}`;
        return fhirResponse(
          c,
          200,
          searchset(self, url === undefined ? "" : `?url=${encodeURIComponent(url)}`, matches),
        );
      });
      app.all(`${root}/${type}/:id`, (c) => {
        if (c.req.method !== "GET") return notAllowed(c);
        const id = c.req.param("id");
        const found = table.get(id);
        if (found) return fhirResponse(c, 200, found);
        return outcomeResponse(c, 404, [
          issue(
            "not-found",
            `There is no ${type} "${id}". Known: ${[...table.keys()].join(", ")}; GET ${root}/${type} lists them all.`,
          ),
        ]);
      });
    }
  }
}

function notAllowed(c: Context<EdgeEnv>): Response {
  return outcomeResponse(
    c,
    405,
    [issue("not-supported", `${c.req.method} is not allowed on ${c.req.path}: it is read-only, use GET.`)],
    { allow: "GET" },
  );
}

const urlOf = (resource: Resource) => (resource as { url?: string }).url;

/** Search results: `typeUrl` is the type's RESTful URL, `query` the parameters applied. */
function searchset(typeUrl: string, query: string, resources: readonly Resource[]): Bundle {
  const bundle: Bundle = {
    resourceType: "Bundle",
    type: "searchset",
    total: resources.length,
    link: [{ relation: "self", url: `${typeUrl}${query}` }],
  };
  // R4 JSON has no empty arrays: no match, no entry element.
  if (resources.length > 0) {
    bundle.entry = resources.map((resource) => ({
      fullUrl: `${typeUrl}/${resource.id}`,
      resource,
      search: { mode: "match" },
    }));
  }
  return bundle;
}
