import { readFileSync } from "node:fs";
import fhirpath from "fhirpath";

/** The small FHIRPath syntax tree the compiler works on. */
export type Expr =
  | { k: "member"; name: string; target: Expr | undefined; atRoot: boolean }
  | { k: "call"; name: string; target: Expr | undefined; args: Expr[] }
  | { k: "this" }
  | { k: "string"; value: string }
  | { k: "number"; value: number; integer: boolean }
  | { k: "boolean"; value: boolean }
  | { k: "const"; name: string }
  | { k: "binary"; op: string; left: Expr; right: Expr }
  | { k: "type"; op: "is" | "as"; target: Expr; type: string };

/** Thrown when an expression uses syntax the compiler does not handle. */
export class Unsupported extends Error {}

interface ParseNode {
  type: string;
  text?: string;
  atRoot?: number;
  children?: ParseNode[];
}

const BINARY = new Set([
  "OrExpression",
  "AndExpression",
  "EqualityExpression",
  "InequalityExpression",
  "MembershipExpression",
  "ImpliesExpression",
  "UnionExpression",
  "AdditiveExpression",
]);

function child(n: ParseNode, i: number): ParseNode {
  const c = n.children?.[i];
  if (!c) throw new Unsupported(`malformed ${n.type}`);
  return c;
}

function identifier(text: string | undefined): string {
  if (text === undefined) throw new Unsupported("identifier without text");
  return text.startsWith("`") ? text.slice(1, -1) : text;
}

/** FHIRPath string literal escapes. */
function unescapeString(raw: string): string {
  return raw.slice(1, -1).replace(/\\(u[0-9a-fA-F]{4}|.)/g, (_, e: string) => {
    if (e.startsWith("u") && e.length === 5) return String.fromCharCode(Number.parseInt(e.slice(1), 16));
    const map: Record<string, string> = { t: "\t", n: "\n", r: "\r", f: "\f" };
    return map[e] ?? e;
  });
}

function convert(n: ParseNode, target: Expr | undefined): Expr {
  switch (n.type) {
    case "EntireExpression":
    case "TermExpression":
    case "InvocationTerm":
    case "ParenthesizedTerm":
    case "LiteralTerm":
      return convert(child(n, 0), target);
    case "InvocationExpression":
      return convert(child(n, 1), convert(child(n, 0), target));
    case "MemberInvocation":
      return { k: "member", name: identifier(child(n, 0).text), target, atRoot: target === undefined };
    case "FunctionInvocation": {
      const fn = child(n, 0);
      const name = identifier(child(fn, 0).text);
      const params = fn.children?.[1];
      const args = params ? (params.children ?? []).map((p) => convert(p, undefined)) : [];
      return { k: "call", name, target, args };
    }
    case "ThisInvocation":
      return { k: "this" };
    case "StringLiteral":
      return { k: "string", value: unescapeString(n.text ?? "''") };
    case "NumberLiteral": {
      const text = n.text ?? "";
      return { k: "number", value: Number(text), integer: !text.includes(".") };
    }
    case "BooleanLiteral":
      return { k: "boolean", value: n.text === "true" };
    case "ExternalConstantTerm": {
      const c = child(child(n, 0), 0);
      const raw = c.text ?? "";
      return { k: "const", name: c.type === "StringLiteral" ? unescapeString(raw) : identifier(raw) };
    }
    case "TypeExpression": {
      const op = n.text === "as" ? "as" : "is";
      return { k: "type", op, target: convert(child(n, 0), undefined), type: typeName(child(n, 1)) };
    }
    default:
      if (BINARY.has(n.type) && n.text !== undefined) {
        return {
          k: "binary",
          op: n.text,
          left: convert(child(n, 0), undefined),
          right: convert(child(n, 1), undefined),
        };
      }
      throw new Unsupported(`syntax ${n.type}`);
  }
}

function typeName(spec: ParseNode): string {
  const q = child(spec, 0);
  const parts = (q.children ?? []).map((i) => identifier(i.text));
  if (parts.length === 2 && parts[0] === "FHIR") return parts[1] as string;
  if (parts.length !== 1) throw new Unsupported(`type ${parts.join(".")}`);
  return parts[0] as string;
}

/**
 * Parses with the fhirpath library's own parser and converts the tree.
 * @example parseExpression("a.exists()") // { k: "call", name: "exists", target: { k: "member", name: "a", … }, args: [] }
 */
export function parseExpression(expression: string): Expr {
  const known = PARSED.get(expression);
  if (known === undefined) return parseFresh(expression);
  if ("unsupported" in known) throw new Unsupported(known.unsupported);
  return known;
}

/** parseExpression without the trees parsed at build time. */
export function parseFresh(expression: string): Expr {
  return convert(fhirpath.parse(expression) as ParseNode, undefined);
}

/** A tree parsed at build time, or why the compiler cannot take the expression. */
export type ParsedTree = Expr | { unsupported: string };

/**
 * The trees of the R4 invariants and the catalogue's checks, parsed when the
 * sandbox was built (`npm run build` writes fhirpath-trees.json beside this
 * module): the library's parser takes about a third of start-up. Without the
 * file (running from source), expressions are parsed as they come.
 */
const PARSED: ReadonlyMap<string, ParsedTree> = (() => {
  try {
    const text = readFileSync(new URL("./fhirpath-trees.json", import.meta.url), "utf8");
    return new Map(Object.entries(JSON.parse(text) as Record<string, ParsedTree>));
  } catch {
    return new Map();
  }
})();
