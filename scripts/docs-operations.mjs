// Writes docs/operations.md from the code (npm run docs:operations; run after npm run build).
import { writeFileSync } from "node:fs";
import { renderOperationsDoc } from "../dist/examples/operations-doc.js";

writeFileSync(new URL("../docs/operations.md", import.meta.url), await renderOperationsDoc());
console.log("docs/operations.md written");
