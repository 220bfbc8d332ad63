import { compilePath } from "../fhir/fhirpath.js";
import { englishFaker } from "../generate/faker.js";
import { nearest } from "../text/suggest.js";

/**
 * Templates in scenario responses: `{{ expression }}` inside any string.
 * Expressions are looked up, never evaluated as code:
 *
 *   request.messageId | request.event | request.operation | request.path |
 *   request.source | request.url | request.headers.<name> | patient.key | rule.name | rule.hit
 *   uuid() | uuid('<name>') | now() | fhirpath('<FHIRPath over the request Bundle>') | faker('<module>.<method>')
 *
 * A string that is exactly one template takes the expression's value as is
 * (a FHIRPath can yield a number or an object); otherwise values are joined
 * into the string.
 */
export interface TemplateContext {
  values: Record<string, unknown>;
  bundle: Record<string, unknown> | undefined;
  newId(): string;
  now(): Date;
  /** The ids `uuid('<name>')` gave in this answer: the same name, the same id (a fullUrl and the id it names). */
  named: Map<string, string>;
}

/**
 * The values a template may name, checked when a rule is loaded so that a
 * misspelt one (`request.messageid`) is an error, not an empty string.
 * `request.headers.<name>` takes any header name.
 */
export const TEMPLATE_VALUES = [
  "request.messageId",
  "request.event",
  "request.operation",
  "request.path",
  "request.source",
  "request.url",
  "patient.key",
  "rule.name",
  "rule.hit",
] as const;
const HEADERS = "request.headers";

type Part = (ctx: TemplateContext) => unknown;
export type Render = (ctx: TemplateContext) => unknown;

const TEMPLATE = /\{\{\s*(.*?)\s*\}\}/g;
const CALL = /^([a-z]+)\(\s*(?:'([^']*)'|"([^"]*)")?\s*\)$/;
const PATH = /^[A-Za-z][\w-]*(\.[A-Za-z][\w-]*)*$/;
const FAKER_MODULES = new Set([
  "person",
  "location",
  "phone",
  "internet",
  "number",
  "string",
  "date",
  "lorem",
  "company",
  "commerce",
]);

const faker = englishFaker();

function compileExpression(source: string): { ok: true; part: Part } | { ok: false; problem: string } {
  const call = CALL.exec(source);
  if (call) {
    const [, name, single, double] = call;
    const arg = single ?? double;
    switch (name) {
      case "uuid":
        if (arg === undefined) return { ok: true, part: (ctx) => ctx.newId() };
        return {
          ok: true,
          part: (ctx) => {
            let id = ctx.named.get(arg);
            if (id === undefined) {
              id = ctx.newId();
              ctx.named.set(arg, id);
            }
            return id;
          },
        };
      case "now":
        return { ok: true, part: (ctx) => ctx.now().toISOString() };
      case "fhirpath": {
        const compiled = arg === undefined ? undefined : compilePath(arg);
        if (!compiled?.ok)
          return { ok: false, problem: `fhirpath('…') needs a valid FHIRPath: ${compiled?.reason ?? "none given"}` };
        return {
          ok: true,
          part: (ctx) => {
            if (!ctx.bundle) return null;
            const result = compiled.evaluate(ctx.bundle);
            return result.length === 0 ? null : result.length === 1 ? result[0] : result;
          },
        };
      }
      case "faker": {
        const [module, method, extra] = (arg ?? "").split(".");
        const fn =
          module && method
            ? (faker as unknown as Record<string, Record<string, unknown>>)[module]?.[method]
            : undefined;
        if (!module || !FAKER_MODULES.has(module) || extra !== undefined || typeof fn !== "function") {
          return {
            ok: false,
            problem: `faker('${arg ?? ""}') is not a faker generator; use module.method with module one of ${[...FAKER_MODULES].join(", ")}, e.g. faker('person.fullName')`,
          };
        }
        return {
          ok: true,
          part: () => (fn as () => unknown).call((faker as unknown as Record<string, unknown>)[module]),
        };
      }
    }
    return {
      ok: false,
      problem: `unknown function ${name}(); known: uuid(), uuid('<name>'), now(), fhirpath('…'), faker('…')`,
    };
  }
  if (PATH.test(source)) {
    const steps = source.split(".");
    const header = steps.length === 3 && `${steps[0]}.${steps[1]}` === HEADERS;
    if (!header && !(TEMPLATE_VALUES as readonly string[]).includes(source)) {
      const known = [...TEMPLATE_VALUES, `${HEADERS}.<name>`];
      const near = nearest(source, known);
      return {
        ok: false,
        problem: `unknown value "${source}"${near ? `; did you mean "${near}"?` : "."} Known values: ${known.join(", ")}.`,
      };
    }
    // Header names are case-insensitive (as in `when.headers`); the request's headers are held lower-cased.
    if (header) steps[2] = (steps[2] as string).toLowerCase();
    return {
      ok: true,
      part: (ctx) => {
        let value: unknown = ctx.values;
        for (const step of steps)
          value = value && typeof value === "object" ? (value as Record<string, unknown>)[step] : undefined;
        return value ?? null;
      },
    };
  }
  return { ok: false, problem: `"${source}" is not a template expression` };
}

function compileString(text: string): { render: Render; problems: string[] } {
  const problems: string[] = [];
  const pieces: Array<string | Part> = [];
  let last = 0;
  for (const match of text.matchAll(TEMPLATE)) {
    pieces.push(text.slice(last, match.index));
    const compiled = compileExpression(match[1] ?? "");
    if (compiled.ok) pieces.push(compiled.part);
    else problems.push(`{{ ${match[1]} }}: ${compiled.problem}`);
    last = (match.index ?? 0) + match[0].length;
  }
  if (pieces.length === 0) return { render: () => text, problems };
  pieces.push(text.slice(last));
  const whole = pieces.length === 3 && pieces[0] === "" && pieces[2] === "" ? (pieces[1] as Part) : undefined;
  if (whole) return { render: whole, problems };
  return {
    render: (ctx) =>
      pieces
        .map((p) => {
          if (typeof p === "string") return p;
          const v = p(ctx);
          return v === null || v === undefined ? "" : typeof v === "object" ? JSON.stringify(v) : String(v);
        })
        .join(""),
    problems,
  };
}

/** A bad template, and where it stands in the compiled value (so a file problem can point at its line). */
export interface TemplateProblem {
  path: Array<string | number>;
  message: string;
}

/** The FHIRPath expressions of a string's `{{ fhirpath('…') }}` templates: what compiling it keeps of FHIRPath. */
export function templateFhirpaths(text: string): string[] {
  if (!text.includes("{{")) return [];
  const found: string[] = [];
  for (const match of text.matchAll(TEMPLATE)) {
    const call = CALL.exec(match[1] ?? "");
    const arg = call?.[2] ?? call?.[3];
    if (call?.[1] === "fhirpath" && arg !== undefined) found.push(arg);
  }
  return found;
}

/** A compiled value: `render` for one holding a template; none for a constant, which is copied as it is. */
interface Compiled {
  render: Render | undefined;
  problems: TemplateProblem[];
}

const NO_PROBLEMS: TemplateProblem[] = [];

/** A fresh copy of a constant: an answer may be changed after rendering, the rule's value never. */
const copy = (value: unknown): unknown =>
  value !== null && typeof value === "object" ? structuredClone(value) : value;

function compileValue(value: unknown): Compiled {
  if (typeof value === "string") {
    if (!value.includes("{{")) return { render: undefined, problems: NO_PROBLEMS };
    const compiled = compileString(value);
    return { render: compiled.render, problems: compiled.problems.map((message) => ({ path: [], message })) };
  }
  if (value === null || typeof value !== "object") return { render: undefined, problems: NO_PROBLEMS };
  const problems: TemplateProblem[] = [];
  const under = (key: string | number, found: TemplateProblem[]) => {
    for (const p of found) problems.push({ path: [key, ...p.path], message: p.message });
  };
  // Only the parts that hold a template keep a closure; the rest stay the rule's plain values. A closure (and its
  // problem list) for every node cost about 70 bytes of heap per byte of a body of many small objects (issue 21).
  if (Array.isArray(value)) {
    const items = value.map((item, index) => {
      const compiled = compileValue(item);
      under(index, compiled.problems);
      return compiled.render;
    });
    if (items.every((render) => render === undefined)) return { render: undefined, problems };
    return { render: (ctx) => items.map((render, i) => (render ? render(ctx) : copy(value[i]))), problems };
  }
  const entries = Object.entries(value).map(([key, item]) => {
    const compiled = compileValue(item);
    under(key, compiled.problems);
    return [key, item, compiled.render] as const;
  });
  if (entries.every(([, , render]) => render === undefined)) return { render: undefined, problems };
  return {
    render: (ctx) => Object.fromEntries(entries.map(([key, item, render]) => [key, render ? render(ctx) : copy(item)])),
    problems,
  };
}

/** Compiles every template in a YAML value once; `render` builds a fresh copy per answer. */
export function compileTemplate(value: unknown): { render: Render; problems: TemplateProblem[] } {
  const compiled = compileValue(value);
  return { render: compiled.render ?? (() => copy(value)), problems: compiled.problems };
}
