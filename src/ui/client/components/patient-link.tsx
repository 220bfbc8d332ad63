import { useEffect, useState } from "hono/jsx/dom";
import { ApiError, api, pageUrl } from "../api.js";
import { patientPath } from "../format.js";
import { type NamedPatient, patientTitle } from "../patient-name.js";

/** What the sandbox holds of a patient now: their name, not held (404), or not known yet (checking, or it failed). */
export type Held = { name: string } | "not-held" | "unknown";

/** Asks the sandbox for a patient by key (again whenever `check` changes). */
export function useHeld(patientKey: string, check = 0): Held {
  const [held, setHeld] = useState<Held>("unknown");
  useEffect(() => {
    let stale = false;
    api<{ patient: NamedPatient }>(`patients/${encodeURIComponent(patientKey)}`).then(
      (state) => {
        if (!stale) setHeld({ name: patientTitle(state.patient) });
      },
      (e: unknown) => {
        if (!stale) setHeld(e instanceof ApiError && e.status === 404 ? "not-held" : "unknown");
      },
    );
    return () => {
      stale = true;
    };
  }, [patientKey, check]);
  return held;
}

/**
 * A patient by key: their name linked to their profile when the sandbox holds them, else the key as text (a
 * page never links to a profile that is not there).
 */
export function PatientLink({ patientKey, held }: { patientKey: string; held: Held }) {
  if (typeof held !== "object") return <code>{patientKey}</code>;
  return (
    <>
      <a href={pageUrl(patientPath(patientKey))}>{held.name}</a> (<code>{patientKey}</code>)
    </>
  );
}
