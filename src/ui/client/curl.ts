/** A shell word in single quotes: nothing inside is expanded. */
export const shellQuote = (text: string): string => `'${text.replaceAll("'", `'\\''`)}'`;

/** Headers curl sets itself, or that describe one connection. */
const SKIPPED = new Set(["host", "content-length", "connection", "accept-encoding", "user-agent", "accept"]);

/**
 * A recorded request as a curl command against the sandbox the browser is
 * looking at. Redacted headers are left out, and said so: their values were
 * never kept.
 */
export function curlCommand(
  request: { method: string; path: string; headers: Record<string, string> },
  body: string,
  origin: string,
): string {
  const lines = [`curl -X ${request.method} ${shellQuote(`${origin}${request.path}`)}`];
  const left: string[] = [];
  for (const [name, value] of Object.entries(request.headers)) {
    if (SKIPPED.has(name)) continue;
    if (value === "[redacted]") left.push(name);
    else lines.push(`-H ${shellQuote(`${name}: ${value}`)}`);
  }
  if (body !== "") lines.push(`--data-binary ${shellQuote(body)}`);
  const command = lines.join(" \\\n  ");
  return left.length ? `# Redacted in the journal, add your own: ${left.join(", ")}\n${command}` : command;
}
