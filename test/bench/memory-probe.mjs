// Preloaded into the sandbox CLI (node --expose-gc --import) by the memory
// benchmark, which forks it with an IPC channel: on { type: "measure" } it
// runs full garbage collections and answers with process.memoryUsage().
process.on("message", (message) => {
  if (message?.type !== "measure") return;
  const gc = globalThis.gc;
  if (typeof gc === "function") for (let i = 0; i < 3; i++) gc();
  process.send?.({ type: "memory", gc: typeof gc === "function", ...process.memoryUsage() });
});
