import { pageTest } from "./doc-blocks.js";

// docs/async-messaging.md against one fresh sandbox: a receiver in the background, a message sent with async=true,
// the answer it got and the journal's two legs, then a rule's scripted delay (2 s) and lost answer.
pageTest("docs/async-messaging.md", 90_000);
