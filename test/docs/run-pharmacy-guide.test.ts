import { pageTest } from "./doc-blocks.js";

// docs/pharmacy-guide.md, followed top to bottom against one fresh sandbox: every step takes the ids it needs (the
// order, its Task, its requests) from the answer of a step before it, so confirm, receive-allocation, the partial
// confirmation, allocate and dispense each name what the sandbox really made, and answer as the page shows.
/** Measured: 15–19 s on a loaded 2-core machine (load 9–14); about five times that. */
pageTest("docs/pharmacy-guide.md", 90_000);
