import { type Issue, issue } from "../fhir/outcome.js";
import { nearest } from "../text/suggest.js";
import { describeJsonType, isObject, parseJson } from "./json.js";

/** How the message reached us: the documented envelope, or a lenient form. */
export type EnvelopeForm = "envelope" | "bundle" | "parameters";

export type DecodedEnvelope =
  | {
      ok: true;
      form: EnvelopeForm;
      bundle: Record<string, unknown>;
      /** The Bundle's JSON text as received, when it came as text (not as a Parameters resource). */
      text?: string;
    }
  | { ok: false; issues: Issue[] };

const ENVELOPE_SHAPE = 'the body must be {"content": "<the message Bundle serialized as a JSON string>"}';

/**
 * Body text → the message Bundle inside it. Accepts exactly the envelope of
 * CONTRACT §2; with `lenient`, also a bare Bundle or a Parameters resource
 * with a `content` parameter (valueString or resource).
 */
export function decodeEnvelope(text: string, lenient: boolean): DecodedEnvelope {
  const body = parseJson(text);
  if (!body.ok) {
    return fail("structure", `The request body is not valid JSON (${body.reason}); ${ENVELOPE_SHAPE}.`);
  }
  const value = body.value;
  if (!isObject(value)) {
    return fail("structure", `The request body is ${describeJsonType(value)}, not a JSON object; ${ENVELOPE_SHAPE}.`);
  }
  if (value.resourceType === "Bundle") {
    if (lenient) return { ok: true, form: "bundle", bundle: value, text };
    return fail(
      "structure",
      `The body is a bare Bundle; ${ENVELOPE_SHAPE} (JSON.stringify the Bundle into "content"), or start the sandbox with --lenient-envelope.`,
    );
  }
  if (value.resourceType === "Parameters") {
    if (lenient) return fromParameters(value);
    return fail(
      "structure",
      `The body is a Parameters resource; ${ENVELOPE_SHAPE}, or start the sandbox with --lenient-envelope.`,
    );
  }
  if (value.content === undefined) {
    // {"Content": …} or {"contents": …}: the key is what is wrong, so say so rather than "missing".
    const misspelt = Object.keys(value).find((key) => nearest(key, ["content"]) !== undefined);
    if (misspelt !== undefined) {
      const fix =
        misspelt.toLowerCase() === "content"
          ? 'JSON keys are case-sensitive: write it in lower case, "content"'
          : 'did you mean "content"?';
      return fail("required", `"content" is missing, but the body has "${misspelt}": ${fix}; ${ENVELOPE_SHAPE}.`);
    }
  }
  return fromContent(value.content, "content");
}

function fromContent(content: unknown, name: string): DecodedEnvelope {
  if (content === undefined) {
    return fail("required", `"${name}" is missing; ${ENVELOPE_SHAPE}.`);
  }
  if (typeof content !== "string") {
    const fix =
      isObject(content) || Array.isArray(content)
        ? ` Serialize the Bundle into a string (JSON.stringify(bundle)) instead of embedding it as ${describeJsonType(content)}.`
        : "";
    return fail("structure", `"${name}" must be a string, found ${describeJsonType(content)}.${fix}`);
  }
  if (content.trim() === "") {
    return fail("required", `"${name}" is empty; it must hold the message Bundle serialized as JSON.`);
  }
  const parsed = parseJson(content);
  if (!parsed.ok) {
    return fail("structure", `"${name}" is not valid JSON (${parsed.reason}); it must hold a serialized FHIR Bundle.`);
  }
  if (!isObject(parsed.value)) {
    return fail(
      "structure",
      `"${name}" holds ${describeJsonType(parsed.value)}, not a FHIR resource; it must hold a serialized Bundle of type "message".`,
    );
  }
  return { ok: true, form: "envelope", bundle: parsed.value, text: content };
}

function fromParameters(parameters: Record<string, unknown>): DecodedEnvelope {
  const list = Array.isArray(parameters.parameter) ? parameters.parameter : [];
  const content = list.find((p): p is Record<string, unknown> => isObject(p) && p.name === "content");
  if (!content) {
    return fail("required", 'The Parameters resource has no parameter named "content" holding the message Bundle.');
  }
  if (isObject(content.resource)) return { ok: true, form: "parameters", bundle: content.resource };
  const decoded = fromContent(content.valueString, "Parameters.parameter[content].valueString");
  return decoded.ok ? { ...decoded, form: "parameters" } : decoded;
}

function fail(code: "structure" | "required", diagnostics: string): DecodedEnvelope {
  return { ok: false, issues: [issue(code, diagnostics)] };
}
