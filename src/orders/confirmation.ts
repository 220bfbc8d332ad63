import type { Extension, Task } from "fhir/r4.js";
import { ETA_EXTENSION, PRICE_EXTENSION } from "../fhir/extension-definitions.js";
import type { Availability, Confirmation, DeliveryOption } from "./order.js";
import { DELIVERY_METHOD_SYSTEM } from "./order-resources.js";

const AVAILABILITY: readonly Availability[] = ["available", "partial", "unavailable"];
const METHODS = ["home-delivery", "pickup"] as const;

function extensionValue(extensions: Extension[] | undefined, url: string) {
  return extensions?.find((e) => e.url === url);
}

/**
 * Reads a pharmacy's confirmation Task (docs/pharmacy-guide.md): availability
 * in businessStatus; delivery options as `output` of type delivery-option
 * (valueCodeableConcept home-delivery | pickup, ETA and price as extensions);
 * for a partial confirmation, the available requests as `output` of type
 * available-item (valueReference). Lenient about what it does not need.
 */
export function readConfirmation(task: Task, requestIds: readonly string[], at: Date): Confirmation {
  const availability =
    (task.businessStatus?.coding
      ?.map((c) => c.code)
      .find((c) => AVAILABILITY.includes(c as Availability)) as Availability) ?? "unavailable";
  const outputs = task.output ?? [];
  const typed = (code: string) => outputs.filter((o) => o.type?.coding?.some((c) => c.code === code));
  const options: DeliveryOption[] = typed("delivery-option").flatMap((o) => {
    const method = o.valueCodeableConcept?.coding?.find((c) => !c.system || c.system === DELIVERY_METHOD_SYSTEM)?.code;
    if (!METHODS.includes(method as (typeof METHODS)[number])) return [];
    const eta = extensionValue(o.extension, ETA_EXTENSION)?.valueDuration;
    const minutes = eta?.value === undefined ? undefined : eta.code === "h" ? eta.value * 60 : eta.value;
    return [
      {
        method: method as DeliveryOption["method"],
        etaMinutes: minutes,
        price: extensionValue(o.extension, PRICE_EXTENSION)?.valueMoney?.value,
      },
    ];
  });
  const listed = typed("available-item").flatMap((o) => {
    const ref = o.valueReference?.reference ?? "";
    const id = ref.split("/").pop() ?? "";
    return requestIds.includes(id) ? [id] : [];
  });
  const availableItems = availability === "available" ? [...requestIds] : availability === "unavailable" ? [] : listed;
  return { availability, availableItems, options, at };
}

/** The fastest option, then the cheapest: what best-at-deadline compares and what the allocation carries. */
export function bestOption(options: readonly DeliveryOption[]): DeliveryOption | undefined {
  return [...options].sort(
    (a, b) =>
      (a.etaMinutes ?? Number.POSITIVE_INFINITY) - (b.etaMinutes ?? Number.POSITIVE_INFINITY) ||
      (a.price ?? 0) - (b.price ?? 0),
  )[0];
}
