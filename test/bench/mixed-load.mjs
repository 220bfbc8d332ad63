// Benchmark section: a sustained mixed load. 30 s at 50 connections against
// the CLI as shipped (pinned), three valid add-allergy messages over many
// patients to every invalid one (a wrong Emirates ID check digit, an unknown
// element, a body that is not JSON): no 5xx, no socket error, and RSS within
// the memory target.
import { STANDARD_PATH } from "../../dist/routing/default-operations.js";
import { fmt, int } from "./load.mjs";
import { TARGETS } from "./memory.mjs";
import { addAllergyEnvelope, benchEmiratesId, invalidEnvelopes } from "./messages.mjs";
import { load, pinning, rssOf, startPinned } from "./pinned.mjs";

const SECONDS = 30;
const CONNECTIONS = 50;
const MB = 1024 * 1024;

export const mixedLoad = {
  id: "mixed-load",
  title: "Mixed load: 30 s at 50 connections, valid and invalid messages",
  async run() {
    const server = await startPinned({ kind: "sandbox", args: ["--no-watch"] });
    try {
      const invalid = invalidEnvelopes();
      // Three valid (patients 1 … 300) to each invalid one, interleaved.
      const templates = [];
      for (let i = 0; i < 300; i++) {
        templates.push(addAllergyEnvelope(benchEmiratesId(i + 1)));
        if (i % 3 === 2) templates.push(invalid[((i / 3) % invalid.length) | 0]);
      }
      const result = await load(
        {
          url: `${server.url}${STANDARD_PATH}`,
          templates,
          prefix: "mixed",
          connections: CONNECTIONS,
          duration: SECONDS,
        },
        (SECONDS + 60) * 1000,
      );
      const { rss, peak } = rssOf(server.pid);
      const statuses = Object.entries(result.statuses).sort();
      const fiveXx = statuses.filter(([code]) => code.startsWith("5")).reduce((n, [, count]) => n + count, 0);
      const socketErrors = result.errors + result.timeouts;
      const ok = fiveXx === 0 && socketErrors === 0 && peak <= TARGETS.rssMB * 1e6;
      const markdown = [
        `The CLI as shipped (\`serve --no-watch\`, default settings, the shipped scenarios), ${pinning()}; ` +
          `${SECONDS} s of load through ${CONNECTIONS} keep-alive connections, each request with a fresh MessageHeader id: ` +
          "add-allergy over 300 patients, and after every third one an invalid message (in turn: a wrong Emirates ID " +
          "check digit, an unknown element, a body that is not JSON).",
        "",
        "| what | value |",
        "|---|---|",
        `| requests answered | ${int(result.requests)} (${int(result.rps)}/s) |`,
        `| answers by status | ${statuses.map(([code, n]) => `${code}: ${int(n)}`).join(", ")} |`,
        `| 5xx answers | ${int(fiveXx)} |`,
        `| socket errors and timeouts | ${int(result.errors)}, ${int(result.timeouts)} |`,
        `| latency p50 / p99 / max | ${fmt(result.p50)} / ${fmt(result.p99)} / ${fmt(result.max)} ms |`,
        `| RSS at the end / peak (VmHWM) | ${fmt(rss / MB, 0)} / ${fmt(peak / MB, 0)} MiB |`,
      ].join("\n");
      return {
        markdown,
        summary: [
          {
            what: `${SECONDS} s at ${CONNECTIONS} connections, valid and invalid messages`,
            value: `${int(result.requests)} answers, ${int(fiveXx)} 5xx, ${int(socketErrors)} socket errors, peak RSS ${fmt(peak / MB, 0)} MiB`,
            target: `no 5xx, no socket error, RSS ≤ ${TARGETS.rssMB} MB`,
            met: ok,
          },
        ],
      };
    } finally {
      await server.stop();
    }
  },
};
