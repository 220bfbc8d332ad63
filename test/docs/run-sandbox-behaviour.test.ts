import { pageTest } from "./doc-blocks.js";

// docs/sandbox-behaviour.md against one fresh sandbox: a generated record updated before its patient was named, the
// Task state machine refusing to cancel a completed task, the store's default limits.
/** Measured: 11–16 s on a loaded 2-core machine (load 9–14); over three times that. */
pageTest("docs/sandbox-behaviour.md", 60_000);
