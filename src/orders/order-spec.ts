import { z } from "zod";
import { durationMs, durationSchema } from "../scenarios/duration.js";

const coded = z
  .object({ system: z.string().min(1).optional(), code: z.string().min(1), display: z.string().optional() })
  .strict();

/** An order as asked for by POST /__admin/orders or a scenario `push`; all of it optional (generated). */
export const orderSpecSchema = z
  .object({
    items: z
      .array(
        z
          .object({
            medication: coded.optional().describe("RxNorm by default: {code, display}"),
            device: coded.optional().describe("SNOMED CT by default: {code, display}"),
            quantity: z.number().positive().optional(),
            unit: z.string().min(1).optional(),
            dosage: z.string().min(1).optional(),
          })
          .strict()
          .refine(
            (i) => (i.medication === undefined) !== (i.device === undefined),
            "an item is a medication or a device",
          ),
      )
      .min(1)
      // Checked here too (the workflow refuses it as well) so a bad body is a 400 and a bad scenario file fails to load.
      .refine(
        (items) => items.length === 1 || items.every((i) => i.medication),
        "a device order holds exactly one device; order medications separately",
      )
      .optional()
      .describe("what is ordered; default a generated order"),
    pharmacies: z
      .array(z.string().min(1))
      .min(1)
      .optional()
      .describe("licences to send it to; default every subscribed pharmacy"),
    deadline: durationSchema.optional().describe("time to confirm; default --confirm-deadline"),
    patient: z.string().min(1).optional().describe("patient key (system|value or id); default a generated patient"),
  })
  .strict();

/** An order as asked for by the admin API or a scenario push; everything left out is generated. */
export interface OrderSpec {
  items?: Array<{
    medication?: { system?: string; code: string; display?: string };
    device?: { system?: string; code: string; display?: string };
    quantity?: number;
    unit?: string;
    dosage?: string;
  }>;
  /** Licences of the target pharmacies; default every pharmacy with an active subscription. */
  pharmacies?: string[];
  deadlineMs?: number;
  /** Patient key (system|value or id); default a generated patient. */
  patient?: string;
}

export type OrderSpecInput = z.infer<typeof orderSpecSchema>;

/** The admin/scenario form of an order → what the workflow takes. */
export function toOrderSpec(input: OrderSpecInput): OrderSpec {
  return {
    ...(input.items ? { items: input.items } : {}),
    ...(input.pharmacies ? { pharmacies: [...input.pharmacies] } : {}),
    ...(input.deadline !== undefined ? { deadlineMs: durationMs(input.deadline) } : {}),
    ...(input.patient ? { patient: input.patient } : {}),
  };
}
