import { useState } from "hono/jsx/dom";
import { ApiError, api } from "../api.js";
import { storeToken } from "../session.js";
import { Problem } from "./common.js";

/**
 * Asks for the admin token (--admin-token): checked against the admin API,
 * then kept for this tab's session only. Nothing of the sandbox's state is
 * fetched before.
 */
export function SignIn({ reason, onSignedIn }: { reason: string; onSignedIn: () => void }) {
  const [token, setToken] = useState("");
  const [problem, setProblem] = useState("");
  const [busy, setBusy] = useState(false);
  const submit = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    storeToken(token.trim());
    try {
      await api("operations");
      onSignedIn();
    } catch (error) {
      storeToken(null);
      setProblem(
        error instanceof ApiError && error.status === 401
          ? "That token was not accepted: use the value the sandbox was started with (--admin-token or ADMIN_TOKEN)."
          : (error as Error).message,
      );
    } finally {
      setBusy(false);
    }
  };
  return (
    <section class="sign-in" aria-labelledby="sign-in-title">
      <h2 id="sign-in-title">Sign in</h2>
      <p>
        This sandbox's admin API needs its admin token. It is kept for this browser tab only and sent with each request.
      </p>
      {reason ? <p class="muted">{reason}</p> : null}
      <form onSubmit={submit}>
        <label for="admin-token">Admin token</label>
        <input
          id="admin-token"
          name="token"
          type="password"
          autocomplete="current-password"
          required
          value={token}
          onInput={(e: Event) => setToken((e.target as HTMLInputElement).value)}
        />
        <button type="submit" disabled={busy}>
          Sign in
        </button>
      </form>
      <Problem message={problem} />
    </section>
  );
}
