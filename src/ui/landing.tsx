import type { FC } from "hono/jsx";
import { Head } from "./shell.js";

export interface LandingProps {
  /** --base-path, where the message and capability paths start. */
  basePath: string;
  version: string;
  tokenRequired: boolean;
}

/** Relative from the landing page at "/": the links hold under a proxy that mounts the sandbox anywhere. */
const rel = (path: string) => path.replace(/^\//, "");

/** GET /: what the sandbox is, and the way to its dashboard, docs, capability statement and health check. */
export const Landing: FC<LandingProps> = ({ basePath, version, tokenRequired }) => (
  <html lang="en">
    <Head title="uae-fhir-sandbox" css="__admin/ui/assets/dashboard.css" />
    <body>
      <main id="main" class="landing">
        <h1>uae-fhir-sandbox</h1>
        <p>
          A local FHIR R4 messaging sandbox of a UAE health-information exchange, version {version}. Messages go to{" "}
          <code>POST {basePath}/uae-fhir/r4/$process-message</code> (remove-allergy:{" "}
          <code>POST {basePath}/fhir/$process-message</code>).
        </p>
        <ul class="landing-links">
          <li>
            <a href="__admin/ui/">Dashboard</a>: calls as they arrive, orders, pharmacies, patients, scenarios and
            health{tokenRequired ? " (sign in with the admin token)" : ""}.
          </li>
          <li>
            <a href="__admin/ui/docs/">Documentation</a>: the README and the guides shipped with the sandbox.
          </li>
          <li>
            <a href={rel(`${basePath}/uae-fhir/r4/metadata`)}>Capability statement</a> (<code>metadata</code>): the
            messages the sandbox receives and sends, and their MessageDefinitions.
          </li>
          <li>
            <a href="__admin/health">Health check</a> (<code>GET /__admin/health</code>).
          </li>
        </ul>
      </main>
    </body>
  </html>
);
