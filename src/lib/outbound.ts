/**
 * Outbound fetches to addresses users give us (bulk CSV `path`, `callback`, `source_file`,
 * webhook URLs): http(s) only, no credentials in the URL, and no private, loopback or
 * link-local hosts unless ALLOW_PRIVATE_FETCH is "true" (local development and tests).
 */

export type UrlCheck = { ok: true; url: URL } | { ok: false; reason: string };

function ipv4Parts(host: string): number[] | null {
  const parts = host.split(".");
  if (parts.length !== 4 || !parts.every((p) => /^\d{1,3}$/.test(p))) return null;
  const numbers = parts.map(Number);
  return numbers.every((n) => n <= 255) ? numbers : null;
}

function isPrivateIpv4([a, b]: number[]): boolean {
  return (
    a === 0 ||
    a === 10 ||
    a === 127 ||
    (a === 100 && b! >= 64 && b! <= 127) ||
    (a === 169 && b === 254) ||
    (a === 172 && b! >= 16 && b! <= 31) ||
    (a === 192 && b === 168) ||
    a! >= 224
  );
}

function isPrivateHost(hostname: string): boolean {
  const host = hostname.toLowerCase().replace(/^\[|\]$/g, "");
  if (host === "localhost" || host.endsWith(".localhost") || host.endsWith(".internal") || host.endsWith(".local")) return true;
  const v4 = ipv4Parts(host);
  if (v4) return isPrivateIpv4(v4);
  if (host.includes(":")) {
    if (host === "::" || host === "::1") return true;
    if (/^f[cd]/.test(host) || /^fe[89ab]/.test(host)) return true;
    // IPv4-mapped addresses; the URL parser writes ::ffff:127.0.0.1 as ::ffff:7f00:1.
    const mapped = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(host);
    if (mapped) {
      const high = parseInt(mapped[1]!, 16);
      const low = parseInt(mapped[2]!, 16);
      return isPrivateIpv4([high >> 8, high & 255, low >> 8, low & 255]);
    }
  }
  return false;
}

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
  if (!allowPrivate && isPrivateHost(url.hostname)) return { ok: false, reason: "must not point at a private, loopback or link-local address" };
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
