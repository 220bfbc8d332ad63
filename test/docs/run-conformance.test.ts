import { pageTest } from "./doc-blocks.js";

// docs/conformance.md, followed top to bottom: the reference systems copied out of the package, a sender session
// through the admin API with the reference sender in the background, a pharmacy session with `conformance run`
// against the reference pharmacy, the files it wrote read with jq, a plan of the reader's own validated, and the
// CI form of a sender's run. Every session runs with a small time scale.
/** Measured: 28 s on the 2-core machine shared with three other engineers' builds and tests; about three times that. */
pageTest("docs/conformance.md", 90_000);
