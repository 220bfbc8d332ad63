import type { Context, Hono } from "hono";
import { z } from "zod";
import { parseJson } from "../envelope/json.js";
import { type Issue, issue } from "../fhir/outcome.js";
import type { EdgeEnv } from "../http/edge-env.js";
import { jsonResponse, outcomeOnly } from "../http/fhir-response.js";
import { incompleteBody, readBody } from "../http/read-body.js";
import type { AllocationPolicy } from "../orders/order-book.js";
import { orderSpecSchema, toOrderSpec } from "../orders/order-spec.js";
import { orderView } from "../orders/order-view.js";

const outcome = (status: number, issues: Issue[]) => outcomeOnly(status, issues);

const describe = (error: z.ZodError) =>
  error.issues.map((i) => issue("invalid", i.path.length ? `${i.path.join(".")}: ${i.message}` : i.message));

const allocateBody = z.object({ licence: z.string().min(1) }).strict();

/** Refusals of the workflow: not-found → 404, state conflicts → 409. */
const refusal = (issues: Issue[]) => outcome(issues.some((i) => i.code === "not-found") ? 404 : 409, issues);

/** The orders of the request's workspace. */
const ordersOf = (c: Context<EdgeEnv>) => c.get("workspace").orders;

/** Orders of the pharmacy push flow (CONTRACT §8–9), of the workspace each request acts in. */
export function mountOrderRoutes(admin: Hono<EdgeEnv>, deps: { maxBody: number; allocation: AllocationPolicy }): void {
  const json = async (request: Request) => {
    const read = await readBody(request, deps.maxBody);
    if (!read.ok)
      return {
        ok: false as const,
        response: read.tooLarge
          ? outcome(413, [issue("too-long", `The body is larger than ${read.limit} bytes.`)])
          : outcome(408, [issue("timeout", incompleteBody(read.error))]),
      };
    const parsed = parseJson(read.text.trim() === "" ? "{}" : read.text);
    if (!parsed.ok)
      return {
        ok: false as const,
        response: outcome(400, [issue("structure", `The body is not valid JSON: ${parsed.reason}.`)]),
      };
    return { ok: true as const, value: parsed.value };
  };

  admin.post("/orders", async (c) => {
    const body = await json(c.req.raw);
    if (!body.ok) return body.response;
    const spec = orderSpecSchema.safeParse(body.value);
    if (!spec.success) return outcome(400, describe(spec.error));
    const created = ordersOf(c).create(toOrderSpec(spec.data));
    if (!created.ok) return outcome(created.issues.some((i) => i.code === "not-found") ? 404 : 409, created.issues);
    return jsonResponse(orderView(created.value), 201);
  });

  // The policy too: under manual allocation, a client (the dashboard) offers to allocate.
  admin.get("/orders", (c) => jsonResponse({ orders: ordersOf(c).list().map(orderView), allocation: deps.allocation }));

  admin.get("/orders/:id", (c) => {
    const order = ordersOf(c).get(c.req.param("id"));
    if (!order)
      return outcome(404, [issue("not-found", `No order ${c.req.param("id")}; list them with GET /__admin/orders.`)]);
    return jsonResponse(orderView(order));
  });

  admin.post("/orders/:id/allocate", async (c) => {
    const body = await json(c.req.raw);
    if (!body.ok) return body.response;
    const parsed = allocateBody.safeParse(body.value);
    if (!parsed.success) return outcome(400, describe(parsed.error));
    const result = ordersOf(c).allocate(c.req.param("id"), parsed.data.licence);
    return result.ok ? jsonResponse(orderView(result.value)) : refusal(result.issues);
  });

  admin.post("/orders/:id/cancel", (c) => {
    const result = ordersOf(c).cancel(c.req.param("id"));
    return result.ok ? jsonResponse(orderView(result.value)) : refusal(result.issues);
  });
}
