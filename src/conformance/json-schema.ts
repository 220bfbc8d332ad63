import { z } from "zod";
import { planSchema } from "./plan-schema.js";

/**
 * The JSON Schema (draft 2020-12) of conformance plans, from the one zod schema the loader reads them with: committed
 * as conformance/conformance.schema.json for editors (yaml-language-server) and printed by `schema conformance`.
 */
export function planJsonSchema(): Record<string, unknown> {
  return {
    ...z.toJSONSchema(planSchema, { target: "draft-2020-12", unrepresentable: "any", io: "input" }),
    title: "uae-fhir-sandbox conformance plan",
  };
}
