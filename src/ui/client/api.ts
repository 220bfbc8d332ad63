import { storedToken } from "./session.js";

/** Where the dashboard is served (/__admin/ui/ under any prefix), from the page's relative root. */
export const uiRoot = (): URL => new URL(document.body.dataset.root ?? "./", location.href);

/** A URL of the admin API, relative to where the dashboard is served: `calls?limit=5` → …/__admin/calls?limit=5. */
export const apiUrl = (path: string): URL => new URL(`../${path}`, uiRoot());

/** A dashboard page's URL: `calls/7` → …/__admin/ui/calls/7. */
export const pageUrl = (path: string): string => new URL(path, uiRoot()).pathname;

/** An answer of the admin API that was not a 2xx, with what its OperationOutcome said. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/** Said when the API answers 401: the page asks for the token again. */
export const SIGN_IN_NEEDED = "uae-fhir-sandbox:sign-in";

export function authHeaders(): Record<string, string> {
  const token = storedToken();
  return token ? { authorization: `Bearer ${token}` } : {};
}

async function failure(res: Response): Promise<ApiError> {
  const text = await res.text();
  let message = `${res.status} ${res.statusText}`;
  try {
    const body = JSON.parse(text) as { issue?: Array<{ diagnostics?: string }> };
    const said = body.issue?.map((i) => i.diagnostics).filter(Boolean);
    if (said?.length) message = said.join(" ");
  } catch {
    if (text) message = text;
  }
  if (res.status === 401) window.dispatchEvent(new CustomEvent(SIGN_IN_NEEDED, { detail: message }));
  return new ApiError(res.status, message);
}

/** A request to the admin API with the token; the answer's body as text (YAML exports) or JSON. */
export async function apiFetch(path: string, init: RequestInit = {}): Promise<Response> {
  const res = await fetch(apiUrl(path), {
    ...init,
    headers: { ...authHeaders(), ...(init.body ? { "content-type": "application/json" } : {}), ...init.headers },
  });
  if (!res.ok) throw await failure(res);
  return res;
}

export async function api<T>(path: string, init: RequestInit = {}): Promise<T> {
  return (await (await apiFetch(path, init)).json()) as T;
}

/** POST a JSON body. */
export const post = <T>(path: string, body: unknown = {}): Promise<T> =>
  api<T>(path, { method: "POST", body: JSON.stringify(body) });
