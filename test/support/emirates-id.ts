/**
 * Emirates IDs for tests, computed here (not by the sandbox): `784-YYYY-NNNNNNN-C`
 * where C is the Luhn check digit over the 14 digits 784YYYYNNNNNNN.
 */

export const EMIRATES_ID_SYSTEM = "urn:ae:emirates-id";

/** The Luhn check digit of a string of digits (ISO/IEC 7812-1). */
export function luhnDigit(digits: string): number {
  let sum = 0;
  for (let i = 0; i < digits.length; i++) {
    // Doubling starts at the rightmost digit of the payload (the check digit will follow it).
    const d = Number(digits[digits.length - 1 - i]);
    if (i % 2 === 0) {
      const doubled = d * 2;
      sum += doubled > 9 ? doubled - 9 : doubled;
    } else {
      sum += d;
    }
  }
  return (10 - (sum % 10)) % 10;
}

/** True when the whole number (payload and check digit) passes Luhn. */
export function luhnValid(number: string): boolean {
  return luhnDigit(number.slice(0, -1)) === Number(number.at(-1));
}

/** True when `id` has the form 784-YYYY-NNNNNNN-C and its 15 digits pass Luhn: the tests' own judge of an ID. */
export function isEmiratesId(id: string): boolean {
  return /^784-\d{4}-\d{7}-\d$/.test(id) && luhnValid(id.replaceAll("-", ""));
}

/** A valid Emirates ID for a birth year and a 7-digit serial. */
export function emiratesId(year: number, serial: number): string {
  const yyyy = String(year).padStart(4, "0");
  const nnnnnnn = String(serial).padStart(7, "0");
  return `784-${yyyy}-${nnnnnnn}-${luhnDigit(`784${yyyy}${nnnnnnn}`)}`;
}

/** The same ID with check digit `digit` instead. */
export function withCheckDigit(id: string, digit: number): string {
  return `${id.slice(0, -1)}${digit}`;
}
