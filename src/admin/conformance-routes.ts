import type { Context, Hono } from "hono";
import { z } from "zod";
import { conformanceJunit } from "../conformance/report/junit.js";
import { testReport } from "../conformance/report/testreport.js";
import { testScript } from "../conformance/report/testscript.js";
import type { ConformanceSession, ConformanceSessions, SessionRequest } from "../conformance/sessions-api.js";
import { parseJson } from "../envelope/json.js";
import { type Issue, issue } from "../fhir/outcome.js";
import type { EdgeEnv } from "../http/edge-env.js";
import { FHIR_JSON, jsonResponse, outcomeOnly } from "../http/fhir-response.js";
import { incompleteBody, readBody } from "../http/read-body.js";
import { durationMs, durationSchema } from "../scenarios/duration.js";
import { jsonText } from "../text/json-text.js";

/** The longest `?wait=` a GET of a session holds its answer for. */
const MAX_WAIT_MS = 600_000;

/** What POST /__admin/conformance/sessions takes: the shape here, the values (a known plan, a URL allowed) in start(). */
const requestSchema = z
  .object({
    role: z.string(),
    plan: z.string().min(1).optional(),
    operations: z.array(z.string().min(1)).optional(),
    pharmacyUrl: z.string().min(1).optional(),
    pharmacyLicence: z.string().min(1).optional(),
    timeScale: z.number().optional(),
  })
  .strict();

const outcome = (status: number, issues: Issue[]) => outcomeOnly(status, issues);

const notFound = (prefix: string, id: string) =>
  outcome(404, [
    issue(
      "not-found",
      `No conformance session ${id} in this workspace; list them with GET ${prefix}/__admin/conformance/sessions.`,
    ),
  ]);

/** A FHIR resource as the answer (a TestReport, a TestScript). */
const fhirResource = (resource: unknown) =>
  new Response(jsonText(resource), { status: 200, headers: { "content-type": FHIR_JSON } });

const noPlan = (prefix: string, id: string) =>
  outcome(404, [
    issue("not-found", `No conformance plan ${id}; list them with GET ${prefix}/__admin/conformance/plans.`),
  ]);

const waitQuery = z.object({ wait: durationSchema.optional() }).strict();

/**
 * The conformance sessions of the request's workspace (docs/conformance.md): the plans, a session started, read as
 * it goes (or long-polled until it ends), and stopped. Mounted under /__admin: the workspace prefix and the admin
 * tokens apply as to every admin route.
 */
export function mountConformanceRoutes(
  admin: Hono<EdgeEnv>,
  deps: { sessions: ConformanceSessions; maxBody: number },
): void {
  const { sessions } = deps;

  admin.get("/conformance/plans", () =>
    jsonResponse({
      plans: sessions.plans().map(({ plan, source }) => ({
        id: plan.id,
        title: plan.title,
        version: plan.version,
        role: plan.role,
        source,
        tests: plan.tests.map((t) => ({ id: t.id, title: t.title, rule: t.rule })),
      })),
    }),
  );

  admin.get("/conformance/plans/:id", (c) => {
    const found = sessions.plans().find((p) => p.plan.id === c.req.param("id"));
    return found ? jsonResponse(found.plan) : noPlan(c.get("workspace").prefix, c.req.param("id"));
  });

  // The plan as an R4 TestScript: its tests, the sandbox's actions as operations, the expectations as asserts.
  admin.get("/conformance/plans/:id/testscript", (c) => {
    const found = sessions.plans().find((p) => p.plan.id === c.req.param("id"));
    return found ? fhirResource(testScript(found.plan)) : noPlan(c.get("workspace").prefix, c.req.param("id"));
  });

  admin.post("/conformance/sessions", async (c) => {
    const read = await readBody(c.req.raw, deps.maxBody);
    if (!read.ok) {
      return read.tooLarge
        ? outcome(413, [issue("too-long", `The body is larger than ${read.limit} bytes (--max-body).`)])
        : outcome(408, [issue("timeout", incompleteBody(read.error))]);
    }
    const parsed = parseJson(read.text.trim() === "" ? "{}" : read.text);
    if (!parsed.ok) return outcome(400, [issue("structure", `The body is not valid JSON: ${parsed.reason}.`)]);
    const shape = requestSchema.safeParse(parsed.value);
    if (!shape.success) {
      return outcome(
        400,
        shape.error.issues.map((i) =>
          issue("invalid", i.path.length ? `${i.path.join(".")}: ${i.message}` : i.message),
        ),
      );
    }
    const started = sessions.start(c.get("workspace"), shape.data as SessionRequest);
    if (!started.ok) return outcome(started.status, started.issues);
    const { prefix } = c.get("workspace");
    return jsonResponse(started.session.report(), 201, {
      location: `${prefix}/__admin/conformance/sessions/${started.session.id}`,
    });
  });

  admin.get("/conformance/sessions", (c) =>
    jsonResponse({
      sessions: sessions.list(c.get("workspace").id).map((s) => {
        const r = s.report();
        return {
          id: r.id,
          role: r.role,
          plan: r.plan.id,
          state: r.state,
          startedAt: r.startedAt,
          endedAt: r.endedAt,
          summary: r.summary,
        };
      }),
    }),
  );

  admin.get("/conformance/sessions/:id", async (c) => {
    const session = sessions.get(c.get("workspace").id, c.req.param("id"));
    if (!session) return notFound(c.get("workspace").prefix, c.req.param("id"));
    const query = waitQuery.safeParse(c.req.query());
    if (!query.success) {
      return outcome(400, [
        issue("invalid", `wait: a duration such as "30s" (at most ${MAX_WAIT_MS / 60_000} minutes)`),
      ]);
    }
    const wait = query.data.wait === undefined ? 0 : Math.min(MAX_WAIT_MS, durationMs(query.data.wait));
    if (wait > 0 && session.report().state === "running") await untilDone(c, session, wait);
    return jsonResponse(session.report());
  });

  // The session's report as an R4 TestReport and as JUnit XML: what `conformance run --out` writes, live while it runs.
  admin.get("/conformance/sessions/:id/testreport", (c) => {
    const session = sessions.get(c.get("workspace").id, c.req.param("id"));
    return session
      ? fhirResource(testReport(session.report()))
      : notFound(c.get("workspace").prefix, c.req.param("id"));
  });

  admin.get("/conformance/sessions/:id/junit", (c) => {
    const session = sessions.get(c.get("workspace").id, c.req.param("id"));
    if (!session) return notFound(c.get("workspace").prefix, c.req.param("id"));
    return new Response(conformanceJunit(session.report()), {
      status: 200,
      headers: { "content-type": "application/xml; charset=utf-8" },
    });
  });

  admin.delete("/conformance/sessions/:id", (c) => {
    const session = sessions.get(c.get("workspace").id, c.req.param("id"));
    if (!session) return notFound(c.get("workspace").prefix, c.req.param("id"));
    session.stop("stopped through the admin API");
    return jsonResponse(session.report());
  });
}

/**
 * Until the session ends, `ms` pass, or the client goes. Through onUpdate, which is let go of at the end: a client
 * polling in a loop leaves nothing behind per poll (a callback on `done` would stay until the session ended).
 */
function untilDone(c: Context<EdgeEnv>, session: ConformanceSession, ms: number): Promise<void> {
  return new Promise((resolve) => {
    const signal = c.req.raw.signal;
    const finish = () => {
      clearTimeout(timer);
      signal.removeEventListener("abort", finish);
      off();
      resolve();
    };
    const timer = setTimeout(finish, ms);
    signal.addEventListener("abort", finish, { once: true });
    const off = session.onUpdate((report) => {
      if (report.state !== "running") finish();
    });
  });
}
