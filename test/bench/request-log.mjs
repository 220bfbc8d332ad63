// What the request log costs per call, in-process: the line of a recorded call built (callEvent), serialized
// (directly, as pino would: jsonLine) and written — as JSON (the default off a terminal: CI, Docker) and pretty — to /dev/null through the same
// synchronous pino destination the CLI uses, in batches as the log drains them; and the time of a whole in-process
// add-allergy call with and without the log observing.
import pino from "pino";
import { createApp } from "../../dist/app.js";
import { SandboxEvents } from "../../dist/events.js";
import { createRequestLog } from "../../dist/log/request-log.js";
import { addAllergyEnvelope, MESSAGE_ID } from "./messages.mjs";

const STANDARD = "/uae-fhir/r4/$process-message";
const quiet = { info: () => undefined, error: () => undefined };
/** Calls per drain: the log writes the lines of one turn of the event loop together. */
const BATCH = 8;

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

function post(app, body, n) {
  return app.request(STANDARD, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: body.replace(MESSAGE_ID, `bench-log-${n}-${Math.random()}`),
  });
}

/** Recorded calls to log: ok answers, a refusal (400, its first issue read) and a 404. */
async function recordedCalls() {
  const sandbox = createApp({}, { logger: quiet });
  const calls = [];
  sandbox.events.on("call:recorded", (call) => calls.push(call));
  const body = addAllergyEnvelope();
  for (let n = 0; n < 14; n++) await (await post(sandbox.app, body, n)).text();
  await (await post(sandbox.app, "not json", 99)).text();
  await (await sandbox.app.request("/nowhere")).text();
  sandbox.close();
  return calls;
}

/** Microseconds per logged call, median of rounds. */
function perCall(calls, settings, sink, n) {
  const log = createRequestLog(settings, { out: sink, err: sink });
  const events = new SandboxEvents();
  log.observe(events);
  const round = () => {
    const start = performance.now();
    for (let i = 0; i < n; i++) {
      events.emit("call:recorded", calls[i % calls.length]);
      if (i % BATCH === BATCH - 1) log.flush();
    }
    log.flush();
    return ((performance.now() - start) * 1000) / n;
  };
  round();
  return median([round(), round(), round(), round(), round()]);
}

/** Microseconds per in-process add-allergy call, with the request log observing (json to /dev/null) or not. */
async function endToEnd(n) {
  const devNull = pino.destination({ dest: "/dev/null", sync: true });
  const body = addAllergyEnvelope();
  const run = async (logged) => {
    const log = logged
      ? createRequestLog({ format: "json", level: "info", colours: false }, { out: devNull, err: devNull })
      : undefined;
    const sandbox = createApp({ journalLimit: 1000 }, { logger: log?.logger ?? quiet });
    log?.observe(sandbox.events);
    for (let i = 0; i < 200; i++) await (await post(sandbox.app, body, i)).text();
    const start = performance.now();
    for (let i = 0; i < n; i++) await (await post(sandbox.app, body, i)).text();
    await new Promise((resolve) => setImmediate(resolve));
    const us = ((performance.now() - start) * 1000) / n;
    sandbox.close();
    return us;
  };
  const without = [];
  const withLog = [];
  for (let r = 0; r < 5; r++) {
    without.push(await run(false));
    withLog.push(await run(true));
  }
  return { without: median(without), withLog: median(withLog) };
}

export const requestLog = {
  id: "request-log",
  title: "Request log",
  async run(settings) {
    const calls = await recordedCalls();
    const n = Math.max(20_000, settings.requests * 5);
    const devNull = pino.destination({ dest: "/dev/null", sync: true });
    const nothing = { write: () => undefined };
    const rows = [
      [
        "json → /dev/null (default off a terminal)",
        perCall(calls, { format: "json", level: "info", colours: false }, devNull, n),
      ],
      ["pretty, coloured → /dev/null", perCall(calls, { format: "pretty", level: "info", colours: true }, devNull, n)],
      [
        "json, nothing written (formatting only)",
        perCall(calls, { format: "json", level: "info", colours: false }, nothing, n),
      ],
      ["level warn (no line per call)", perCall(calls, { format: "json", level: "warn", colours: false }, devNull, n)],
    ];
    const e2e = await endToEnd(Math.max(1000, settings.requests));
    const lines = [
      `The log line of a recorded call (${calls.length} recorded calls replayed: ok add-allergy answers, a 400, a 404), ${n} calls per round, drained ${BATCH} at a time, median of 5 rounds:`,
      "",
      "| output | µs per call |",
      "|---|---|",
      ...rows.map(([what, us]) => `| ${what} | ${us.toFixed(2)} |`),
      "",
      `A whole in-process add-allergy call (app.request, sequential): ${e2e.without.toFixed(0)} µs without the log, ${e2e.withLog.toFixed(0)} µs with it (json to /dev/null), median of 5 alternating runs.`,
    ];
    return {
      markdown: lines.join("\n"),
      summary: [{ what: "request log, json per call", value: `${rows[0][1].toFixed(2)} µs` }],
    };
  },
};
