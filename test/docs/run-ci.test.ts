import { pageTest } from "./doc-blocks.js";

// docs/ci.md as written, where it runs outside a CI job: reading the journal from a running sandbox, and jq over it.
/** Measured: 4.5 s on a loaded 2-core machine (one sandbox start); over six times that (a start can take 10 s under load). */
pageTest("docs/ci.md", 30_000);
