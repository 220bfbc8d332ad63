import { pageTest } from "./doc-blocks.js";

// docs/state-file.md as written: a sandbox on a state file (by flag, then by variable), and both backups while it
// serves. The HTTP backup takes the sandbox-wide admin token: the page's sandbox and its commands get ADMIN_TOKEN, as
// a reader who sets it for both would.
/** Measured: 15 s on a loaded 2-core machine (three sandbox starts, a CLI backup); four times that. */
pageTest("docs/state-file.md", 60_000, { env: { ADMIN_TOKEN: "state-file-page-token" } });
