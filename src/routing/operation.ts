import type { IssueCode } from "../fhir/outcome.js";

export type Area = "patient-profile" | "drug-orders" | "health-programs";

/** MessageDefinition.category of an operation: `consequence` changes the sandbox's state, `currency` only reads it. */
export type OperationCategory = "consequence" | "currency";

/** One check of a focus resource: a FHIRPath that must hold, the element it is about, and the fix. */
export interface Requirement {
  fhirpath: string;
  element: string;
  says: string;
  /** Issue code when the check fails: `required` for a missing element, `value` for a wrong one. */
  code: IssueCode;
}

/** A row of the operation catalogue, as written in data. */
export interface OperationSpec {
  id: string;
  area: Area;
  /**
   * The OAuth2 scope a caller's access token must hold to send this operation (with --auth oauth2):
   * `patient-profile.read`, `patient-profile.write`, `drug-orders` or `health-programs` by default.
   */
  scope: string;
  /** Message-processing path, without the configurable base path. */
  path: string;
  /** The default event code (MessageHeader.eventCoding.code). */
  event: string;
  /** Further event codes that route to this operation. */
  aliases: string[];
  category: OperationCategory;
  /** What the operation does and answers with, in a sentence or two (its MessageDefinition's description). */
  summary: string;
  focus: {
    /** Resource types the MessageHeader.focus may point at. */
    types: string[];
    /** Types that must be among the focus; when absent, any one of `types` will do. */
    required?: string[];
    /** Types of which the handler reads only one; the others may repeat (MessageDefinition.focus.max). */
    single?: string[];
    /** Per-type checks a focus resource must pass. */
    checks: Record<string, Requirement[]>;
  };
}

/** A catalogue row ready for routing: checks compiled once. */
export interface Operation extends Omit<OperationSpec, "focus"> {
  focus: OperationSpec["focus"] & {
    compiled: Record<string, Array<Requirement & { holds(resource: unknown): boolean }>>;
  };
}
