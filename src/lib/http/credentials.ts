import { ApiError } from "./errors";

/** The one message for every authentication failure; it never says which check failed. */
export const NOT_AUTHENTICATED = "The caller could not be authenticated";

export function notAuthenticated(): ApiError {
  return new ApiError(401, NOT_AUTHENTICATED);
}

/** The token of an `Authorization: Bearer <token>` header ("" when empty); other schemes are ignored. */
export function bearerToken(request: Request): string | undefined {
  const header = request.headers.get("authorization");
  const match = header === null ? null : /^Bearer(?:\s+(.*))?$/i.exec(header.trim());
  return match ? (match[1] ?? "").trim() : undefined;
}

/** The API key sent with a call outside the envelope: the Bearer header, else the `apikey` query. */
export function requestApiKey(request: Request): string | undefined {
  return bearerToken(request) ?? new URL(request.url).searchParams.get("apikey") ?? undefined;
}
