// The panel's one way to the Worker: JSON over fetch with the session cookie, the CSRF token on
// every write, and the admin API's {error, errors} failures turned into ApiFailure.
import type { SessionView } from "../../src/domain/operators";

export type { SessionView };

export interface FieldError {
  field: string;
  message: string;
}

export class ApiFailure extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly errors: FieldError[] = [],
  ) {
    super(message);
  }
}

let csrfToken = "";
let onSignedOut: () => void = () => undefined;

export function useSessionToken(token: string, signedOut: () => void): void {
  csrfToken = token;
  onSignedOut = signedOut;
}

/** A JSON call; a File or Blob body is sent as it is (a CSV upload), anything else as JSON. */
export async function request<T>(method: string, path: string, body?: unknown): Promise<T> {
  const headers: Record<string, string> = { accept: "application/json" };
  const raw = body instanceof Blob;
  if (body !== undefined) headers["content-type"] = raw ? body.type || "text/csv" : "application/json";
  if (method !== "GET") headers["x-csrf-token"] = csrfToken;
  const response = await fetch(path, {
    method,
    headers,
    credentials: "same-origin",
    body: body === undefined ? undefined : raw ? body : JSON.stringify(body),
  });
  const text = await response.text();
  const parsed = text ? (JSON.parse(text) as unknown) : null;
  if (!response.ok) {
    const failure = (parsed ?? {}) as { error?: string; message?: string; errors?: FieldError[] };
    if (response.status === 401 && !path.startsWith("/auth/")) onSignedOut();
    throw new ApiFailure(response.status, failure.error ?? failure.message ?? `HTTP ${response.status}`, failure.errors ?? []);
  }
  return parsed as T;
}

/** An admin API call for the panel: `admin("GET", panelId, "/contacts")`. */
export function admin<T>(method: string, panelId: string, path: string, body?: unknown): Promise<T> {
  return request<T>(method, `/admin/v1/panels/${encodeURIComponent(panelId)}${path}`, body);
}
