import { pageTest } from "./doc-blocks.js";

// docs/sandbox-behaviour.md against one fresh sandbox: a generated record updated before its patient was named, the
// Task state machine refusing to cancel a completed task, the store's default limits.
pageTest("docs/sandbox-behaviour.md", 120_000);
