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

/**
 * The keys a public API call carries in its headers (CONTRACT 8 and 10): `Authorization: Bearer
 * <key>`, `Authorization: <key>` (one word, no scheme) and `api-key: <key>`. Another scheme
 * (`Basic ...`) carries no API key.
 */
export function headerApiKeys(request: Request): string[] {
  const keys: string[] = [];
  const bearer = bearerToken(request);
  if (bearer !== undefined) keys.push(bearer);
  const authorization = request.headers.get("authorization")?.trim();
  if (bearer === undefined && authorization && !/\s/.test(authorization)) keys.push(authorization);
  const apiKeyHeader = request.headers.get("api-key");
  if (apiKeyHeader !== null) keys.push(apiKeyHeader.trim());
  return keys;
}

/**
 * The one API key of a call that may send it in several places (headers, the `apikey`
 * parameter in the query and in the body: `parameterKeys`, each undefined when absent):
 * undefined when none is sent; 401 when two of them disagree, as the caller cannot be
 * authenticated by either (CONTRACT 10).
 */
export function oneApiKey(request: Request, ...parameterKeys: unknown[]): unknown {
  // Compared as they are read, without a list of all of them: this runs on every call.
  let one: unknown;
  for (const key of parameterKeys) one = agreeing(one, key);
  for (const key of headerApiKeys(request)) one = agreeing(one, key);
  return one;
}

/** The key given so far once `key` (undefined: none) is read too; 401 when it is another. */
function agreeing(given: unknown, key: unknown): unknown {
  if (key === undefined || key === given) return given;
  if (given !== undefined) throw notAuthenticated();
  return key;
}

/** The API key sent with a call outside the envelope: in a header (any form above) or the `apikey` query. */
export function requestApiKey(request: Request): string | undefined {
  return oneApiKey(request, queryApiKey(request.url)) as string | undefined;
}

/** The `apikey` query parameter; a URL without a query (most posts) is not parsed for it. */
function queryApiKey(url: string): string | undefined {
  if (!url.includes("?")) return undefined;
  return new URL(url).searchParams.get("apikey") ?? undefined;
}
