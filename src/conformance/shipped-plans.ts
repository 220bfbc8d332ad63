import { existsSync, readdirSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { parse } from "yaml";
import { planSchema } from "./plan-schema.js";
import type { LoadedPlan } from "./sessions-api.js";

/**
 * The plans the package ships (conformance/*.yaml), found beside the code that runs as the shipped scenarios are:
 * ../../conformance from dist/conformance/, ../conformance from bundle/server.cjs. A plan that does not parse is
 * an error of the package: thrown.
 */
export function shippedPlans(): LoadedPlan[] {
  for (const relative of ["../../conformance/", "../conformance/"]) {
    const folder = new URL(relative, import.meta.url);
    if (!existsSync(new URL("sender.yaml", folder))) continue;
    const dir = fileURLToPath(folder);
    return readdirSync(dir)
      .filter((name) => name.endsWith(".yaml"))
      .sort()
      .map((name) => {
        const parsed = planSchema.safeParse(parse(readFileSync(`${dir}${name}`, "utf8")));
        if (!parsed.success) throw new Error(`conformance/${name} is not a valid plan: ${parsed.error.message}`);
        return { plan: parsed.data, source: `conformance/${name}` };
      });
  }
  return [];
}
