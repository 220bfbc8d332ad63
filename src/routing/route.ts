import type { EntryRef, Message } from "../envelope/message.js";
import { type CompiledPath, compilePath } from "../fhir/fhirpath.js";
import { type Issue, issue } from "../fhir/outcome.js";
import { nearest } from "../text/suggest.js";
import type { Catalogue } from "./catalogue.js";
import type { Operation } from "./operation.js";

export interface Routed {
  operation: Operation | undefined;
  /** The focus resources the handler acts on. */
  focus: EntryRef[];
  issues: Issue[];
  /** Set when the operation exists but belongs on another path: the right path. */
  rightPath?: string;
}

const HEADER = "Bundle.entry[0].resource";

/** ` Did you mean "add-allergy"?` for a misspelt event code: the closest of the operations' own codes, if close. */
function suggestion(event: string, catalogue: Catalogue): string {
  const near = nearest(
    event,
    catalogue.operations.map((op) => op.event),
  );
  return near === undefined ? "" : ` Did you mean "${near}"?`;
}

/** The node that carries the event: eventCoding.code, else eventUri (in FHIRPath, the choice element `event`). */
function eventPath(message: Message): string {
  const coding = message.header.eventCoding as { code?: unknown } | undefined;
  return typeof coding?.code === "string" ? `${HEADER}.event.ofType(Coding).code` : `${HEADER}.event.ofType(uri)`;
}

/**
 * Message → operation, by event code (CONTRACT §3), then the operation's own
 * checks of its focus resources. Every problem found is returned, none thrown.
 */
export function routeMessage(message: Message, catalogue: Catalogue, path: string, basePath: string): Routed {
  const operation = catalogue.byEvent(message.event);
  if (!operation) {
    return {
      operation,
      focus: [],
      issues: [
        issue(
          "not-supported",
          `Unknown event "${message.event}".${suggestion(message.event, catalogue)} Known event codes: ${catalogue.knownEvents.join(", ")}.`,
          eventPath(message),
        ),
      ],
    };
  }
  const { focus, issues } = checkFocus(operation, message);
  if (operation.path !== path) {
    const rightPath = `${basePath}${operation.path}`;
    issues.unshift(
      issue(
        "not-found",
        `${operation.id} is served at POST ${rightPath}, not at ${basePath}${path}. Send the message there.`,
        eventPath(message),
      ),
    );
    return { operation, focus, issues, rightPath };
  }
  return { operation, focus, issues };
}

function checkFocus(operation: Operation, message: Message): { focus: EntryRef[]; issues: Issue[] } {
  const { types, required, compiled } = operation.focus;
  const issues: Issue[] = [];
  // Without MessageHeader.focus, fall back to the Bundle's resources of the expected types.
  const declared = Array.isArray(message.header.focus) && message.header.focus.length > 0;
  let focus = message.focus;
  if (!declared) {
    focus = [];
    for (const e of message.entries) if (e.index > 0 && types.includes(e.resource.resourceType)) focus.push(e);
  }

  let ofTypes = 0;
  for (let i = 0; i < focus.length; i++) {
    const entry = focus[i] as EntryRef;
    if (types.includes(entry.resource.resourceType)) ofTypes++;
    else
      issues.push(
        issue(
          "invalid",
          `${operation.id} expects focus of type ${types.join(" or ")}; MessageHeader.focus[${i}] points at a ${entry.resource.resourceType} (${entry.path}).`,
          `${HEADER}.focus[${i}]`,
        ),
      );
  }
  const missing = required
    ? required.filter((t) => !holdsType(focus, t))
    : types.some((t) => holdsType(focus, t))
      ? []
      : [types.join(" or ")];
  for (const type of missing) {
    // A focus that failed to resolve has already been reported.
    if (declared && focus.length < (message.header.focus?.length ?? 0)) break;
    issues.push(
      issue(
        "required",
        `${operation.id} needs a ${type} as the message focus: add it as an entry and reference its fullUrl from MessageHeader.focus.`,
        declared ? `${HEADER}.focus` : HEADER,
      ),
    );
  }
  for (const entry of focus) {
    for (const check of compiled[entry.resource.resourceType] ?? []) {
      if (!check.holds(entry.resource))
        issues.push(issue(check.code, check.says, nearestPresent(entry, check.element)));
    }
  }
  // A fresh array either way: the handler's focus is its own.
  return {
    focus: ofTypes === focus.length ? focus.slice() : focus.filter((e) => types.includes(e.resource.resourceType)),
    issues,
  };
}

/** Whether a focus entry is a `type` (a message has one or two: a loop, not a Set). */
function holdsType(focus: readonly EntryRef[], type: string): boolean {
  for (const e of focus) if (e.resource.resourceType === type) return true;
  return false;
}

/**
 * The FHIRPath of `element` (dotted, e.g. `channel.endpoint`) under a focus
 * resource when it finds something there, else of its nearest ancestor that
 * does: an issue about a missing element points at its parent. Evaluated
 * with the R4 model, so a choice element is found by its type (`value.ofType(Quantity)` finds valueQuantity).
 */
function nearestPresent(entry: EntryRef, element: string): string {
  const steps = element.split(".");
  for (let depth = steps.length; depth > 0; depth--) {
    const path = steps.slice(0, depth).join(".");
    let compiled = presence.get(path);
    if (!compiled) {
      const result = compilePath(path);
      if (!result.ok) continue;
      compiled = result.evaluate;
      presence.set(path, compiled);
    }
    try {
      if (compiled(entry.resource).length > 0) return `${entry.path}.${path}`;
    } catch {
      // Not navigable on this resource: try the parent.
    }
  }
  return entry.path;
}

/** Compiled element paths of the catalogue's checks (a few dozen). */
const presence = new Map<string, CompiledPath>();
