import type { Context, Hono } from "hono";
import { z } from "zod";
import type { ConformanceSessions, SessionRequest } from "../conformance/sessions-api.js";
import { parseJson } from "../envelope/json.js";
import { type Issue, issue } from "../fhir/outcome.js";
import type { EdgeEnv } from "../http/edge-env.js";
import { jsonResponse, outcomeOnly } from "../http/fhir-response.js";
import { incompleteBody, readBody } from "../http/read-body.js";
import { durationMs, durationSchema } from "../scenarios/duration.js";

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

const notFound = (id: string) =>
  outcome(404, [
    issue(
      "not-found",
      `No conformance session ${id} in this workspace; list them with GET /__admin/conformance/sessions.`,
    ),
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
    if (!found) {
      return outcome(404, [
        issue("not-found", `No conformance plan ${c.req.param("id")}; list them with GET /__admin/conformance/plans.`),
      ]);
    }
    return jsonResponse(found.plan);
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
    if (!session) return notFound(c.req.param("id"));
    const query = waitQuery.safeParse(c.req.query());
    if (!query.success) {
      return outcome(400, [
        issue("invalid", `wait: a duration such as "30s" (at most ${MAX_WAIT_MS / 60_000} minutes)`),
      ]);
    }
    const wait = query.data.wait === undefined ? 0 : Math.min(MAX_WAIT_MS, durationMs(query.data.wait));
    if (wait > 0 && session.report().state === "running") await untilDone(c, session.done, wait);
    return jsonResponse(session.report());
  });

  admin.delete("/conformance/sessions/:id", (c) => {
    const session = sessions.get(c.get("workspace").id, c.req.param("id"));
    if (!session) return notFound(c.req.param("id"));
    session.stop("stopped through the admin API");
    return jsonResponse(session.report());
  });
}

/** Until the session ends, `ms` pass, or the client goes. */
function untilDone(c: Context<EdgeEnv>, done: Promise<unknown>, ms: number): Promise<void> {
  return new Promise((resolve) => {
    const signal = c.req.raw.signal;
    const finish = () => {
      clearTimeout(timer);
      signal.removeEventListener("abort", finish);
      resolve();
    };
    const timer = setTimeout(finish, ms);
    signal.addEventListener("abort", finish, { once: true });
    void done.then(finish);
  });
}
