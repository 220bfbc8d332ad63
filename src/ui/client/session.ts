/**
 * The admin token, when the sandbox has one: asked for once, kept for this
 * browser tab's session only (sessionStorage, gone when the tab closes), and
 * sent as the bearer token with every request for data.
 */
const KEY = "uae-fhir-sandbox.admin-token";

export const tokenRequired = (): boolean => document.body.dataset.token === "required";

export function storedToken(): string | null {
  try {
    return sessionStorage.getItem(KEY);
  } catch {
    return null;
  }
}

export function storeToken(token: string | null): void {
  if (token === null) sessionStorage.removeItem(KEY);
  else sessionStorage.setItem(KEY, token);
}
