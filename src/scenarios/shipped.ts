import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";

/**
 * The scenarios folder the package ships (magic patients, the fixture pharmacy), found beside the code that runs:
 * ../../scenarios from dist/scenarios/ (a clone, or the package installed under node_modules), ../scenarios from
 * bundle/server.cjs (the container image, which copies scenarios/ to /app). It holds scenario.schema.json, which
 * dist/scenarios/ (this module's own compiled folder) does not. Undefined when neither is there.
 */
export function shippedScenarios(): string | undefined {
  for (const relative of ["../../scenarios/", "../scenarios/"]) {
    const folder = new URL(relative, import.meta.url);
    if (existsSync(new URL("scenario.schema.json", folder))) return fileURLToPath(folder).replace(/[\\/]$/, "");
  }
  return undefined;
}
