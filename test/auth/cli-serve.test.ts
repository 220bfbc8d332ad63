import type { Patient } from "fhir/r4.js";
import { afterEach, describe, expect, it } from "vitest";
import { http, killStray, startCli } from "../cli/cli-process.js";
import { envelope, example, messageBundle } from "../support/messages.js";

// --auth oauth2 on the real CLI over a socket, configured by environment variables as the Docker image
// would be: discovery names --public-url, a token by curl-style Basic credentials, then a message.

afterEach(killStray);

describe("uae-fhir-sandbox serve with AUTH=oauth2 CLIENTS=docs/clients.example.yaml", { timeout: 30_000 }, () => {
  it("a token from the listening port, a message with it; the discovery documents name --public-url", async () => {
    const { url } = await startCli(["--public-url", "https://sandbox.example.ae"], {
      AUTH: "oauth2",
      CLIENTS: "docs/clients.example.yaml",
      TOKEN_TTL: "90s",
    });

    const smart = await http(`${url}/uae-fhir/r4/.well-known/smart-configuration`);
    expect(smart.json.token_endpoint).toBe("https://sandbox.example.ae/oauth2/token");

    const token = await http(`${url}/oauth2/token`, {
      method: "POST",
      headers: {
        authorization: `Basic ${Buffer.from("test-suite:test-suite-secret").toString("base64")}`,
        "content-type": "application/x-www-form-urlencoded",
      },
      body: "grant_type=client_credentials&scope=patient-profile.read",
    });
    expect(token.status).toBe(200);
    expect(token.json).toMatchObject({ token_type: "Bearer", expires_in: 90, scope: "patient-profile.read" });

    const message = envelope(messageBundle("view-patient-profile", [example<Patient>("patient-example.json")]));
    const send = (headers: Record<string, string>) =>
      http(`${url}/uae-fhir/r4/$process-message`, {
        method: "POST",
        headers: { "content-type": "application/json", ...headers },
        body: message,
      });
    expect((await send({})).status).toBe(401);
    expect((await send({ authorization: `Bearer ${token.json.access_token}` })).status).toBe(200);
  });
});
