/** A name a header carries as it is: visible ASCII, spaces only between characters. */
const PLAIN = /^[!-~](?:[ !-~]*[!-~])?$/;

/** RFC 8187's ext-value with its charset and no language: what marks a value as encoded. */
const ENCODED_MARK = "UTF-8''";

/** The mark as an RFC 8187 reader sees it: a charset's name is case-insensitive. */
const MARKED = /^utf-8''/i;

/** Characters encodeURIComponent leaves as they are but RFC 8187's attr-char does not allow. */
const NOT_ATTR_CHAR = /[*'()]/g;

/**
 * X-Sandbox-Rule's value for the name of the rule that answered: the name itself when a header can carry it as it
 * is, else an RFC 8187 ext-value, `UTF-8''` and the name's UTF-8 percent-encoded. Fetch's `Headers` and Node refuse
 * a value with characters beyond Latin-1 or a line break, and a Latin-1 byte or a space at an end does not arrive as
 * it was sent; a rule named in Arabic would otherwise make every one of its answers fail. A name that itself starts
 * with the mark is encoded too, so that the mark always means an encoded name.
 *
 * @example
 *   ruleHeaderValue("allergy refused") === "allergy refused"
 *   ruleHeaderValue("حساسية") === "UTF-8''%D8%AD%D8%B3%D8%A7%D8%B3%D9%8A%D8%A9"
 */
export function ruleHeaderValue(name: string): string {
  if (PLAIN.test(name) && !MARKED.test(name)) return name;
  // A lone surrogate has no UTF-8: it is sent as U+FFFD (encodeURIComponent would throw).
  const encoded = encodeURIComponent(name.toWellFormed()).replace(
    NOT_ATTR_CHAR,
    (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
  );
  return `${ENCODED_MARK}${encoded}`;
}
