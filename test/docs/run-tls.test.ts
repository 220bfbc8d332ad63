import { pageTest } from "./doc-blocks.js";

// docs/tls.md as written: certs, then three sandboxes (mutual TLS, a certificate choosing the workspace, HTTP and
// HTTPS on two ports), called with curl and client certificates.
/** Measured: about 10 s on a loaded 2-core machine (three sandbox starts); over three times that. */
pageTest("docs/tls.md", 40_000);
