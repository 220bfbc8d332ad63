import type { Workspace } from "../../workspace/workspace.js";
import type { StepContext } from "../step-context.js";

/** The licence a session registers the pharmacy under when the request names none. */
export const DEFAULT_PHARMACY_LICENCE = "PH-CONFORMANCE-0001";

/** An order the session pushed (or made up, for pushUnknownOrder), as the later steps look for messages about it. */
export interface SessionOrder {
  id: string;
  taskId: string;
  /** Its MedicationRequests' / DeviceRequest's ids: a dispense summary names them. */
  requestIds: string[];
  deadline: Date;
  /** The journal position before it was pushed: messages about it are looked for from here on. */
  from: number;
}

/** A push the session made (or had the order flow make): what expectAck, expectRefused and pushAgain look at. */
export interface SessionPush {
  event: string;
  orderId: string;
  taskId: string;
  /** Its MessageHeader id, once its first attempt was seen (or when the session built it). */
  messageId: string | null;
  /** The journal position its first attempt is looked for from. */
  from: number;
  /** A delivery again of an earlier push (pushAgain). */
  again: boolean;
}

/** The receiver kinds' keys in the session memory: each kind reads and writes them through these. */
interface ReceiverMemory {
  licence?: string;
  order?: SessionOrder;
  unknownOrder?: SessionOrder;
  push?: SessionPush;
  /**
   * The id of the current order when allocate found nothing to allocate (not confirmed in time): the steps after the
   * allocation skip on it, whichever of allocate's wait and the order's deadline timer ended first.
   */
  unallocated?: string;
}

const KEY = "receiver";

export function receiverMemory(ctx: Pick<StepContext, "memory">): ReceiverMemory {
  const held = ctx.memory[KEY] as ReceiverMemory | undefined;
  if (held) return held;
  const made: ReceiverMemory = {};
  ctx.memory[KEY] = made;
  return made;
}

/** The pharmacy's licence: the one it subscribed with (expectSubscription), else the one the session names. */
export function licenceOf(ctx: Pick<StepContext, "memory" | "session">): string | null {
  return receiverMemory(ctx).licence ?? ctx.session.pharmacyLicence;
}

/**
 * The pharmacy a session found subscribed (a session without a pharmacyUrl learns it from the subscription), as the
 * report's participants name it; null while none was found.
 */
export function subscribedPharmacy(
  memory: Record<string, unknown>,
  workspace: Workspace,
): { pharmacyUrl: string | null; pharmacyLicence: string } | null {
  const licence = receiverMemory({ memory }).licence;
  if (licence === undefined) return null;
  return { pharmacyLicence: licence, pharmacyUrl: workspace.pharmacies.get(licence)?.endpoint ?? null };
}
