/**
 * The R4 narrative rules (narrative.html) that invariants txt-1 and txt-2
 * express as `htmlChecks()`, a FHIRPath function the FHIRPath engine does not
 * implement: the div is XHTML in the XHTML namespace, holds some text or an
 * image, and uses no scripts, forms, frames, objects, document-level elements
 * or event attributes.
 */
// Every expression here runs in linear time on hostile input: no quantified part can re-scan another's text.
const OPENING = /^\s*<div\b([^<>]*)>/;
const XMLNS = /\bxmlns\s*=\s*["']http:\/\/www\.w3\.org\/1999\/xhtml["']/;
const FORBIDDEN_ELEMENT =
  /<\s*(script|style|head|body|html|form|input|button|select|textarea|iframe|frame|frameset|object|embed|applet|base|link|meta|title)\b/i;
const EVENT_ATTRIBUTE = /<[^<>]*\son[a-z]+\s*=/i;
const TAG = /<[^<>]*>/g;
const SPACE_ENTITY = /&nbsp;|&#160;/g;
const IMAGE = /<img\b/i;

export interface XhtmlProblem {
  key: "txt-1" | "txt-2";
  says: string;
}

/** Problems of a Narrative.div value, each under the invariant it breaks. */
export function xhtmlProblems(div: string): XhtmlProblem[] {
  const problems: XhtmlProblem[] = [];
  const opening = OPENING.exec(div);
  if (!opening || !XMLNS.test(opening[1] ?? "") || !div.trimEnd().endsWith("</div>")) {
    problems.push({
      key: "txt-1",
      says: 'txt-1: The narrative must be a <div xmlns="http://www.w3.org/1999/xhtml"> element holding XHTML.',
    });
  }
  const element = FORBIDDEN_ELEMENT.exec(div);
  if (element) {
    problems.push({
      key: "txt-1",
      says: `txt-1: The narrative SHALL contain only the basic html formatting elements; <${element[1]?.toLowerCase()}> is not allowed.`,
    });
  }
  if (EVENT_ATTRIBUTE.test(div)) {
    problems.push({ key: "txt-1", says: "txt-1: The narrative SHALL NOT use event attributes such as onclick." });
  }
  const text = div.replace(TAG, "").replace(SPACE_ENTITY, " ");
  if (text.trim() === "" && !IMAGE.test(div)) {
    problems.push({ key: "txt-2", says: "txt-2: The narrative SHALL have some non-whitespace content." });
  }
  return problems;
}
