import type { FC } from "hono/jsx";
import { createPortal, render, useEffect, useState } from "hono/jsx/dom";
import { SIGN_IN_NEEDED } from "./api.js";
import { SignIn } from "./components/sign-in.js";
import { useLiveStatus } from "./live.js";
import type { PageProps } from "./page-props.js";
import { CallPage } from "./pages/call.js";
import { CallsPage } from "./pages/calls.js";
import { ConformancePage, ConformanceSessionPage } from "./pages/conformance.js";
import { HealthPage } from "./pages/health.js";
import { OrderPage } from "./pages/order.js";
import { OrdersPage } from "./pages/orders.js";
import { PatientPage } from "./pages/patient.js";
import { PatientsPage } from "./pages/patients.js";
import { PharmaciesPage } from "./pages/pharmacies.js";
import { ScenariosPage } from "./pages/scenarios.js";
import { storedToken, storeToken, tokenRequired } from "./session.js";

/** The client view of each page the server renders a shell for (src/ui/pages.ts). */
const PAGES: Record<string, FC<PageProps>> = {
  calls: CallsPage,
  call: CallPage,
  orders: OrdersPage,
  order: OrderPage,
  pharmacies: PharmaciesPage,
  patients: PatientsPage,
  patient: PatientPage,
  scenarios: ScenariosPage,
  conformance: ConformancePage,
  "conformance-session": ConformanceSessionPage,
  health: HealthPage,
};

const LIVE_WORDS = {
  connecting: "Live updates: connecting…",
  live: "Live updates: on",
  reconnecting: "Live updates: reconnecting…",
  stopped: "Live updates: off",
} as const;

function LiveIndicator() {
  const status = useLiveStatus();
  return (
    <p role="status" class={`live-status ${status}`}>
      {LIVE_WORDS[status]}
    </p>
  );
}

function App({ page, param }: { page: string; param: string }) {
  const [signedIn, setSignedIn] = useState(!tokenRequired() || storedToken() !== null);
  const [reason, setReason] = useState("");
  useEffect(() => {
    const onSignIn = (event: Event) => {
      storeToken(null);
      setReason(String((event as CustomEvent).detail ?? ""));
      setSignedIn(false);
    };
    window.addEventListener(SIGN_IN_NEEDED, onSignIn);
    return () => window.removeEventListener(SIGN_IN_NEEDED, onSignIn);
  }, []);
  const session = document.getElementById("session");
  const Page = PAGES[page];
  const signOut = () => {
    storeToken(null);
    setReason("Signed out.");
    setSignedIn(false);
  };
  return (
    <>
      {signedIn ? (
        Page ? (
          <Page param={param} />
        ) : (
          <p role="alert">Unknown page {page}.</p>
        )
      ) : (
        <SignIn reason={reason} onSignedIn={() => setSignedIn(true)} />
      )}
      {session
        ? createPortal(
            <>
              {signedIn ? <LiveIndicator /> : null}
              {signedIn && tokenRequired() ? (
                <button type="button" onClick={signOut}>
                  Sign out
                </button>
              ) : null}
            </>,
            session,
          )
        : null}
    </>
  );
}

const root = document.getElementById("page");
if (root) {
  root.textContent = "";
  render(<App page={document.body.dataset.page ?? ""} param={document.body.dataset.param ?? ""} />, root);
}
