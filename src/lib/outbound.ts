import { judgeHost } from "./outbound-address";

/**
 * Outbound fetches to addresses users give us (bulk CSV `path`, `callback`, `source_file`,
 * webhook URLs): http(s) only, no credentials in the URL, and no private, loopback,
 * link-local or other special-use hosts, nor single-label names, unless ALLOW_PRIVATE_FETCH is
 * "true" (local development and tests). Every redirect hop is checked again.
 */

export type UrlCheck = { ok: true; url: URL } | { ok: false; reason: string };

export function allowsPrivateFetch(env: Pick<Env, "ALLOW_PRIVATE_FETCH">): boolean {
  return env.ALLOW_PRIVATE_FETCH === "true";
}

export function checkOutboundUrl(raw: string, allowPrivate: boolean): UrlCheck {
  let url: URL;
  try {
    url = new URL(raw.trim());
  } catch {
    return { ok: false, reason: "must be an absolute http(s) URL" };
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") return { ok: false, reason: `must use http or https, not ${url.protocol.replace(":", "")}` };
  if (url.username || url.password) return { ok: false, reason: "must not carry credentials; configure them separately" };
  if (!allowPrivate) {
    const verdict = judgeHost(url.hostname);
    if (!verdict.ok) return verdict;
  }
  return { ok: true, url };
}

export class OutboundError extends Error {
  constructor(
    message: string,
    /** A short machine-readable cause: timeout, refused, redirect, blocked. */
    readonly code: string,
  ) {
    super(message);
  }
}

export interface OutboundOptions {
  /** Total time allowed for the response headers, in ms. */
  timeoutMs: number;
  /** Redirects to follow (each hop re-checked); 0 answers a 3xx as it is. */
  maxRedirects?: number;
}

/** fetch() under the outbound rules; network failures become OutboundError with a code. */
export async function fetchOutbound(env: Pick<Env, "ALLOW_PRIVATE_FETCH">, raw: string, init: RequestInit, options: OutboundOptions): Promise<Response> {
  let target = raw;
  for (let hop = 0; ; hop++) {
    const check = checkOutboundUrl(target, allowsPrivateFetch(env));
    if (!check.ok) throw new OutboundError(`${target} ${check.reason}`, "blocked");
    let response: Response;
    try {
      response = await fetch(check.url, { ...init, redirect: "manual", signal: AbortSignal.timeout(options.timeoutMs) });
    } catch (error) {
      const name = error instanceof Error ? error.name : "";
      if (name === "TimeoutError" || name === "AbortError") throw new OutboundError(`no answer from ${check.url.host} within ${options.timeoutMs} ms`, "timeout");
      throw new OutboundError(`could not connect to ${check.url.host}: ${error instanceof Error ? error.message : String(error)}`, "connect");
    }
    const location = response.headers.get("location");
    if (response.status < 300 || response.status >= 400 || !location || hop >= (options.maxRedirects ?? 0)) return response;
    await response.body?.cancel();
    target = new URL(location, check.url).toString();
  }
}
