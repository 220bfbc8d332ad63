/** The default identifier system of Emirates IDs (CONTRACT §3; configurable). */
export const EMIRATES_ID_SYSTEM = "urn:ae:emirates-id";

const FORMAT = /^784-(\d{4})-(\d{7})-(\d)$/;

/** Luhn check digit of a digit string. */
function luhn(digits: string): number {
  let sum = 0;
  for (let i = 0; i < digits.length; i++) {
    let d = Number(digits[digits.length - 1 - i]);
    if (i % 2 === 0) {
      d *= 2;
      if (d > 9) d -= 9;
    }
    sum += d;
  }
  return (10 - (sum % 10)) % 10;
}

/**
 * An Emirates ID in the real format 784-YYYY-NNNNNNN-C: 784 (UAE), birth
 * year, a serial, and a Luhn check digit over the 14 digits before it.
 *
 * @example emiratesId(1987, 1234567) // "784-1987-1234567-?" with its check digit
 */
export function emiratesId(birthYear: number, serial: number): string {
  const year = String(birthYear).padStart(4, "0");
  const number = String(serial).padStart(7, "0");
  return `784-${year}-${number}-${luhn(`784${year}${number}`)}`;
}

export function isValidEmiratesId(value: string): boolean {
  const m = FORMAT.exec(value);
  return m !== null && luhn(`784${m[1]}${m[2]}`) === Number(m[3]);
}

/** The birth year an Emirates ID carries, if it is well-formed. */
export function birthYearOf(value: string): number | undefined {
  const m = FORMAT.exec(value);
  return m ? Number(m[1]) : undefined;
}
