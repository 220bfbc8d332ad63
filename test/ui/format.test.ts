import { describe, expect, it } from "vitest";
import { ago, instant } from "../../src/ui/client/format.js";
import { patientTitle } from "../../src/ui/client/patient-name.js";

// The dashboard's one way of writing a moment, and of naming a patient (pure helpers of its client code).

describe("instant: ISO 8601 in UTC with milliseconds", () => {
  it.each([
    ["2026-11-27T09:23:50.123Z", "2026-11-27T09:23:50.123Z"],
    ["2026-11-27T13:23:50+04:00", "2026-11-27T09:23:50.000Z"],
    ["2025-11-02T09:00:00+04:00", "2025-11-02T05:00:00.000Z"],
    ["2026-01-01T00:30-01:00", "2026-01-01T01:30:00.000Z"],
  ])("%s → %s", (given, shown) => expect(instant(given)).toBe(shown));

  it.each(["1985-04-12", "2024-03", "2024", "2026-11-27T09:23:50", "yesterday", ""])(
    "%j is no moment with a zone: shown as written",
    (given) => expect(instant(given)).toBe(null),
  );
});

describe("ago: how long ago, in the largest whole unit", () => {
  const now = new Date("2026-11-27T12:00:00.000Z");
  it.each([
    ["2026-11-27T12:00:00.000Z", "just now"],
    ["2026-11-27T11:59:59.500Z", "just now"],
    ["2026-11-27T11:59:15.000Z", "45 s ago"],
    ["2026-11-27T11:57:00.000Z", "3 min ago"],
    ["2026-11-27T09:10:00.000Z", "2 h ago"],
    ["2026-11-24T12:00:00.000Z", "3 d ago"],
    ["2026-11-27T12:05:00.000Z", "in 5 min"],
  ])("%s → %s", (at, said) => expect(ago(at, now)).toBe(said));
});

describe("patientTitle: name, else Emirates ID, else id", () => {
  const emiratesId = { system: "urn:ae:emirates-id", value: "784-1990-1234567-6" };
  it.each([
    [{ id: "p", name: [{ given: ["Reem"], family: "Al Dhaheri" }] }, "Reem Al Dhaheri"],
    [
      { id: "p", name: [{ given: ["Mariam", "Salem"], family: "Al Mansoori", text: "M. Al Mansoori" }] },
      "Mariam Salem Al Mansoori",
    ],
    [
      {
        id: "p",
        name: [
          { use: "nickname", given: ["Rimo"] },
          { use: "official", given: ["Reem"], family: "Al Dhaheri" },
        ],
      },
      "Reem Al Dhaheri",
    ],
    [{ id: "p", name: [{ text: "Reem Al Dhaheri" }] }, "Reem Al Dhaheri"],
    [{ id: "p", name: [{}], identifier: [{ system: "urn:other", value: "x" }, emiratesId] }, "784-1990-1234567-6"],
    [
      { id: "0b6c1e9e-1d2f-4c1a-9d4e-3f3c2b1a0f9e", identifier: [{ system: "urn:other", value: "x" }] },
      "0b6c1e9e-1d2f-4c1a-9d4e-3f3c2b1a0f9e",
    ],
  ])("%j → %s", (patient, title) => expect(patientTitle(patient)).toBe(title));
});
