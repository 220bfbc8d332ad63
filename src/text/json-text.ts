/**
 * JSON text as the sandbox writes it (CONTRACT §15): `<`, `>` and `&` as `\u003c`, `\u003e`, `\u0026`. The value
 * is the same for every JSON parser (in JSON text those characters only occur inside strings, where the escape
 * means the same character), but no answer, push or journal line then holds markup a browser could run if it ever
 * took the text for HTML (`</script><script>…`, `<!--`). One regular expression over the finished text: about a
 * microsecond for a typical answer (measured: docs/security.md), and the text is returned as is when none occurs.
 */
const MARKUP = /[<>&]/g;

const ESCAPES: Record<string, string> = { "<": "\\u003c", ">": "\\u003e", "&": "\\u0026" };

/**
 * JSON text with `<`, `>` and `&` escaped. Only for text that is JSON: in a JSON string the escape stands for the
 * character; anywhere else it would change the text.
 *
 * @example
 *   escapeJsonText('{"div":"<p>a & b</p>"}') === '{"div":"\\u003cp\\u003ea \\u0026 b\\u003c/p\\u003e"}'
 */
export function escapeJsonText(json: string): string {
  return json.replace(MARKUP, (c) => ESCAPES[c] as string);
}

/**
 * `JSON.stringify(value)` as the sandbox writes it: the one serializer of what leaves the process as JSON.
 *
 * @example
 *   JSON.parse(jsonText({ div: "<b>" })).div === "<b>"
 */
export function jsonText(value: unknown): string {
  return escapeJsonText(JSON.stringify(value));
}
