import { pageTest } from "./doc-blocks.js";

// docs/validation.md against one fresh sandbox: a message with a choice element of the wrong JSON type, answered with
// an issue whose expression is FHIRPath with ofType().
/** Measured: about 5 s on a loaded 2-core machine; several times that. */
pageTest("docs/validation.md", 60_000);
