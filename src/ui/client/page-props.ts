/** What every page of the dashboard is given by the router (main.tsx). */
export interface PageProps {
  /** The route parameter: a call id, an order id, a patient key. */
  param: string;
}
