import { pageTest } from "./doc-blocks.js";

// docs/scenarios.md top to bottom against one fresh sandbox serving a copy of the shipped scenarios: the first rule is
// written into that folder and picked up by the watcher (the log line shown), the runtime rules answer as shown.

/** Measured: 25–27 s on a loaded 2-core machine (load 9–14); over three times that. */
pageTest("docs/scenarios.md", 90_000);
