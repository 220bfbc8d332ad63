import { pageTest } from "./doc-blocks.js";

// The README, top to bottom, against a freshly started sandbox: the quick start's answers, its log line and the
// journal's verify are compared with what the page shows.
/** Measured: 11–32 s on a loaded 2-core machine (four sandbox starts, CLI runs); over three times that. */
pageTest("README.md", 120_000);
