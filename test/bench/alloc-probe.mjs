// Preloaded (node --import) into a server under test by the allocation
// benchmark, which starts it with an IPC channel: on { type: "alloc:start" }
// it opens a window, on { type: "alloc:stop" } it answers with the bytes the
// process allocated on the V8 heap in between.
//
// How: V8 reports no running total of allocated bytes to JavaScript, but its
// GCProfiler (node:v8, Node ≥ 18.15) records the used heap right before and
// right after every collection. Between two collections the used heap only
// grows by what is allocated, so the total is the sum of those growths:
//   (before GC 1 − used at start) + (before GC 2 − after GC 1) + … + (used at stop − after the last GC).
// Checked on a toy server (bare-server.mjs with BENCH_EXTRA_ARRAYS=8: per
// request 8 arrays of 1,022 slots and the array holding them, 65,904 bytes =
// 64.4 KiB more than bare node:http): measured 65.3 KiB more on Node 24 and
// 65.2 KiB on Node 20 (3 rounds of 1,500–3,000 requests); in-process, 100,000
// `new Array(1022)` counted 8,279 bytes each for 8,224. The allocation section
// repeats the toy check every run. Objects of tens of KiB each are overstated
// (the new space's page ends they leave unused count as used: a 64 KiB array
// counts as about 85 KiB); a server's many small objects are not.
import { GCProfiler, getHeapStatistics } from "node:v8";

let window;

process.on("message", (message) => {
  if (message?.type === "alloc:start") {
    const profiler = new GCProfiler();
    window = { profiler, used: getHeapStatistics().used_heap_size };
    profiler.start();
    process.send?.({ type: "alloc:started" });
  } else if (message?.type === "alloc:stop" && window) {
    const used = getHeapStatistics().used_heap_size;
    const { statistics } = window.profiler.stop();
    let bytes = 0;
    let last = window.used;
    for (const gc of statistics) {
      bytes += gc.beforeGC.heapStatistics.usedHeapSize - last;
      last = gc.afterGC.heapStatistics.usedHeapSize;
    }
    bytes += used - last;
    const scavenges = statistics.filter((gc) => gc.gcType === "Scavenge").length;
    window = undefined;
    process.send?.({ type: "alloc", bytes, collections: statistics.length, scavenges });
  }
});
