import { pageTest } from "./doc-blocks.js";

// docs/auth.md as written: a sandbox with --auth oauth2 and the example clients file, a token, the rate-limited client.
/** Measured: 6–12 s on a loaded 2-core machine (two sandbox starts); over three times that. */
pageTest("docs/auth.md", 40_000);
