/**
 * The dashboard's pages: where each is served under /__admin/ui/ and its
 * heading. One table for the server (which renders each page's shell) and
 * the navigation.
 */
export interface UiPage {
  /** Which client view the shell mounts. */
  id:
    | "calls"
    | "call"
    | "orders"
    | "order"
    | "pharmacies"
    | "patients"
    | "patient"
    | "scenarios"
    | "conformance"
    | "conformance-session"
    | "health";
  /** Route under /__admin/ui/ (Hono syntax). */
  route: string;
  /** The page's title and h1; `{param}` is the route parameter. */
  title: string;
  /** Shown in the navigation, under this label. */
  nav?: string;
  /** The navigation entry a detail page belongs to. */
  section: UiPage["id"];
}

export const UI_PAGES: readonly UiPage[] = [
  { id: "calls", route: "", title: "Calls", nav: "Calls", section: "calls" },
  { id: "call", route: "calls/:param", title: "Call {param}", section: "calls" },
  { id: "orders", route: "orders", title: "Orders", nav: "Orders", section: "orders" },
  { id: "order", route: "orders/:param", title: "Order {param}", section: "orders" },
  { id: "pharmacies", route: "pharmacies", title: "Pharmacies", nav: "Pharmacies", section: "pharmacies" },
  { id: "patients", route: "patients", title: "Patients", nav: "Patients", section: "patients" },
  { id: "patient", route: "patients/:param", title: "Patient {param}", section: "patients" },
  { id: "scenarios", route: "scenarios", title: "Scenarios", nav: "Scenarios", section: "scenarios" },
  { id: "conformance", route: "conformance", title: "Conformance", nav: "Conformance", section: "conformance" },
  {
    id: "conformance-session",
    route: "conformance/:param",
    title: "Conformance session {param}",
    section: "conformance",
  },
  { id: "health", route: "health", title: "Health", nav: "Health", section: "health" },
];
