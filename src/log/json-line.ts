/**
 * A log event as one JSON line, as pino writes it: `{"level":…,"time":…` and then the fields in their order
 * (undefined ones left out, numbers that are not finite as null), then `"msg"`. For the request log's line per
 * call, which is written directly: pino's generic path (its serializers, hooks, per-string scan) costs more than
 * the line. The request log makes the line one line (oneLineJson) as it does pino's.
 *
 * @example
 *   jsonLine("info", ',"time":"2026-01-15T09:30:00.000Z"', { event: "call", status: 200 }, "IN …")
 *   // '{"level":"info","time":"2026-01-15T09:30:00.000Z","event":"call","status":200,"msg":"IN …"}'
 */
export function jsonLine(level: string, time: string, fields: object, msg: string): string {
  let line = `{"level":"${level}"${time}`;
  for (const key in fields) {
    const value = jsonValue((fields as Record<string, unknown>)[key]);
    // Keys are the log's own names: plain identifiers, nothing to escape.
    if (value !== undefined) line += `,"${key}":${value}`;
  }
  return `${line},"msg":${JSON.stringify(msg)}}`;
}

/** A value as pino writes it, or undefined for one it leaves out. */
function jsonValue(value: unknown): string | undefined {
  switch (typeof value) {
    case "string":
      return JSON.stringify(value);
    case "number":
      return Number.isFinite(value) ? String(value) : "null";
    case "boolean":
      return value ? "true" : "false";
    case "undefined":
    case "function":
      return undefined;
    default:
      return JSON.stringify(value);
  }
}
