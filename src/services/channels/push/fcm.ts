import { importPKCS8, SignJWT } from "jose";
import type { PushPayload } from "../../../domain/push";
import { callProvider, isRetryableStatus } from "../provider-call";
import type { PushDelivery } from "./delivery";
import { config } from "../../../lib/config";

/**
 * Firebase Cloud Messaging HTTP v1: a message per token, with an OAuth access token that a
 * service-account JWT (RS256, signed with WebCrypto through jose) is exchanged for; the access
 * token is kept per isolate until shortly before it expires. iOS devices are reached through
 * FCM's APNs integration (the `apns` block).
 */

export interface FcmAccount {
  projectId: string;
  clientEmail: string;
  privateKey: string;
}

/** Where FCM and Google's token endpoint are; tests point them at loopback stand-ins. */
export interface FcmUrls {
  api: string;
  token: string;
}

export function fcmUrls(env: Pick<Env, "FCM_API_URL" | "FCM_TOKEN_URL">): FcmUrls {
  const { fcmApiUrl, fcmTokenUrl } = config(env);
  return { api: fcmApiUrl, token: fcmTokenUrl };
}

const SCOPE = "https://www.googleapis.com/auth/firebase.messaging";
/** Google grants an hour; a token is not used in its last minute. */
const ASSERTION_SECONDS = 3600;
const EARLY_MS = 60_000;

const accessTokens = new Map<string, { token: string; expires: number } | Promise<string>>();

/** The account's access token, from the isolate's cache or a new exchange (one at a time per account). */
export async function fcmAccessToken(account: FcmAccount, urls: FcmUrls, now: number): Promise<string> {
  const cacheKey = `${urls.token} ${account.clientEmail}`;
  const cached = accessTokens.get(cacheKey);
  if (cached instanceof Promise) return cached;
  if (cached && cached.expires > now) return cached.token;
  const exchange = (async () => {
    const seconds = Math.floor(now / 1000);
    const assertion = await new SignJWT({ scope: SCOPE })
      .setProtectedHeader({ alg: "RS256", typ: "JWT" })
      .setIssuer(account.clientEmail)
      .setAudience(urls.token)
      .setIssuedAt(seconds)
      .setExpirationTime(seconds + ASSERTION_SECONDS)
      .sign(await importPKCS8(account.privateKey, "RS256"));
    const response = await fetch(urls.token, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ grant_type: "urn:ietf:params:oauth:grant-type:jwt-bearer", assertion }),
      signal: AbortSignal.timeout(15_000),
    });
    const answer = (await response.json().catch(() => ({}))) as { access_token?: unknown; expires_in?: unknown; error_description?: unknown; error?: unknown };
    if (!response.ok || typeof answer.access_token !== "string") {
      throw new FcmAuthError(`Google's token endpoint answered ${response.status}: ${String(answer.error_description ?? answer.error ?? "no access token")}`, isRetryableStatus(response.status));
    }
    const lifetime = typeof answer.expires_in === "number" ? answer.expires_in * 1000 : ASSERTION_SECONDS * 1000;
    accessTokens.set(cacheKey, { token: answer.access_token, expires: now + lifetime - EARLY_MS });
    return answer.access_token;
  })();
  accessTokens.set(cacheKey, exchange);
  exchange.catch(() => accessTokens.delete(cacheKey));
  return exchange;
}

/** Forgets an account's access token (FCM refused it: revoked, or the key was replaced). */
export function dropFcmAccessToken(account: FcmAccount, urls: FcmUrls): void {
  accessTokens.delete(`${urls.token} ${account.clientEmail}`);
}

/** The account could not be authenticated: no message of it can be sent until that changes. */
export class FcmAuthError extends Error {
  constructor(
    message: string,
    readonly retryable: boolean,
  ) {
    super(message);
  }
}

/** FCM's error codes for a token that no longer reaches an app install. */
const GONE_CODES = new Set(["UNREGISTERED"]);

function fcmErrorCode(text: string): { status: string; code: string | null; message: string } {
  try {
    const error = (JSON.parse(text) as { error?: { status?: string; message?: string; details?: Array<{ "@type"?: string; errorCode?: string }> } }).error;
    const code = error?.details?.find((d) => d["@type"]?.endsWith("google.firebase.fcm.v1.FcmError"))?.errorCode ?? null;
    return { status: error?.status ?? "", code, message: error?.message ?? text.slice(0, 300) };
  } catch {
    return { status: "", code: null, message: text.slice(0, 300) };
  }
}

/** Sends one message to one app install. 401 once drops the cached access token and tries again. */
export async function sendFcm(account: FcmAccount, urls: FcmUrls, token: string, payload: PushPayload, now: number): Promise<PushDelivery> {
  const url = `${urls.api}/v1/projects/${encodeURIComponent(account.projectId)}/messages:send`;
  const data: Record<string, string> = { msgid: payload.msgid, report: payload.report, ...(payload.url ? { url: payload.url } : {}) };
  const message = {
    message: {
      token,
      notification: { title: payload.title, body: payload.body },
      data,
      android: { priority: "high" },
      apns: { payload: { aps: { "mutable-content": 1 } } },
    },
  };
  for (let attempt = 1; ; attempt++) {
    let accessToken: string;
    try {
      accessToken = await fcmAccessToken(account, urls, now);
    } catch (error) {
      const retryable = error instanceof FcmAuthError ? error.retryable : true;
      return { ok: false, gone: false, retryable, error: error instanceof Error ? error.message : String(error) };
    }
    const called = await callProvider("FCM", url, { method: "POST", headers: { authorization: `Bearer ${accessToken}`, "content-type": "application/json" }, body: JSON.stringify(message) });
    if (!called.ok) return { ...called, gone: false };
    const { response, text } = called;
    if (response.ok) {
      let name: unknown;
      try {
        name = (JSON.parse(text) as { name?: unknown }).name;
      } catch {
        // FCM took it (2xx); the message name is only a reference.
      }
      return { ok: true, id: typeof name === "string" ? name : token };
    }
    if (response.status === 401 && attempt === 1) {
      dropFcmAccessToken(account, urls);
      continue;
    }
    const error = fcmErrorCode(text);
    const gone = (error.code !== null && GONE_CODES.has(error.code)) || (response.status === 404 && error.status === "NOT_FOUND");
    const invalid = error.code === "INVALID_ARGUMENT" && /token/i.test(error.message);
    return {
      ok: false,
      gone: gone || invalid,
      retryable: !gone && !invalid && isRetryableStatus(response.status),
      error: `FCM answered ${response.status}${error.code ? ` (${error.code})` : ""}: ${error.message}`,
    };
  }
}
