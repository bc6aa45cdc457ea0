import { lookupDns } from "./dns";
import { checkOutboundUrl, judgeHost, type HostVerdict } from "./outbound-address";
import { TtlCache } from "./ttl-cache";
import { withTraceHeaders } from "./observability/trace";
import { config, type ConfigSource } from "./config";

/**
 * Outbound fetches to addresses users give us (bulk CSV `path`, `callback`, `source_file`,
 * webhook URLs): http(s) only, no credentials in the URL, and no private, loopback,
 * link-local or other special-use hosts, nor single-label names, unless ALLOW_PRIVATE_FETCH is
 * "true" (local development and tests). Every redirect hop is checked again, and a host given
 * by name is resolved first (DNS over HTTPS at DOH_URL): a name whose addresses include a
 * private or special-use one is refused before any connection (docs/api/outbound-fetches.md).
 */

export function allowsPrivateFetch(env: ConfigSource): boolean {
  return config(env).allowPrivateFetch;
}

export class OutboundError extends Error {
  constructor(
    message: string,
    /** A short machine-readable cause: timeout, connect, blocked; while reading a body (lib/transfer-limits) slow, broken. */
    readonly code: string,
  ) {
    super(message);
  }
}

export interface OutboundOptions {
  /** Total time allowed, in ms: the signal stays on the body, so it bounds reading it too. */
  timeoutMs: number;
  /** Time allowed for the response headers, in ms, when shorter than timeoutMs. */
  headersTimeoutMs?: number;
  /** Redirects to follow (each hop re-checked); 0 answers a 3xx as it is. */
  maxRedirects?: number;
}

export type OutboundEnv = Pick<Env, "ALLOW_PRIVATE_FETCH" | "DOH_URL">;

// Verdicts on names, kept for their records' TTL within these bounds.
const MIN_TTL_MS = 30_000;
const MAX_TTL_MS = 5 * 60_000;
const nameVerdicts = new TtlCache<HostVerdict>(MAX_TTL_MS, 2_000);

/** Whether every address a host name resolves to is public; an address literal was judged as text. */
export async function judgeResolvedHost(dohUrl: string, hostname: string, now = Date.now()): Promise<HostVerdict> {
  const host = hostname.toLowerCase().replace(/\.+$/, "");
  if (host.startsWith("[") || /^[\d.]+$/.test(host)) return { ok: true };
  const cached = nameVerdicts.get(host, now);
  if (cached) return cached;
  const lookups = await Promise.all([lookupDns(dohUrl, host, "A"), lookupDns(dohUrl, host, "AAAA")]);
  const failed = lookups.find((lookup) => !lookup.ok);
  // Not kept: a resolver's failure may be brief. Either family failing refuses, since the one
  // not seen could hold the private address.
  if (failed && !failed.ok) return { ok: false, reason: `could not be resolved (${failed.error})` };
  const addresses = lookups.flatMap((lookup) => (lookup.ok ? lookup.records : []));
  const verdict: HostVerdict = !addresses.length
    ? { ok: false, reason: "does not resolve to any address" }
    : addresses.every((address) => judgeHost(address.includes(":") ? `[${address}]` : address).ok)
      ? { ok: true }
      : { ok: false, reason: "resolves to a private, loopback or special-use address" };
  const ttls = lookups.flatMap((lookup) => (lookup.ok && lookup.ttlSeconds !== undefined ? [lookup.ttlSeconds * 1000] : []));
  const ttlMs = Math.min(MAX_TTL_MS, Math.max(MIN_TTL_MS, ttls.length ? Math.min(...ttls) : MIN_TTL_MS));
  nameVerdicts.set(host, verdict, now, ttlMs);
  return verdict;
}

/** fetch() under the outbound rules; network failures become OutboundError with a code. */
export async function fetchOutbound(env: OutboundEnv, raw: string, init: RequestInit, options: OutboundOptions): Promise<Response> {
  let target = raw;
  for (let hop = 0; ; hop++) {
    const check = checkOutboundUrl(target, allowsPrivateFetch(env));
    if (!check.ok) throw new OutboundError(`${target} ${check.reason}`, "blocked");
    if (!allowsPrivateFetch(env)) {
      const resolved = await judgeResolvedHost(config(env).dohUrl, check.url.hostname);
      if (!resolved.ok) throw new OutboundError(`${check.url.origin}: the host ${resolved.reason}`, "blocked");
    }
    let response: Response;
    const headersMs = Math.min(options.headersTimeoutMs ?? options.timeoutMs, options.timeoutMs);
    const headers = new AbortController();
    const timer = setTimeout(() => headers.abort(new DOMException("no headers in time", "TimeoutError")), headersMs);
    try {
      const signal = AbortSignal.any([AbortSignal.timeout(options.timeoutMs), headers.signal]);
      response = await fetch(check.url, { ...init, headers: withTraceHeaders(init.headers), redirect: "manual", signal });
    } catch (error) {
      const name = error instanceof Error ? error.name : "";
      if (name === "TimeoutError" || name === "AbortError") throw new OutboundError(`no answer from ${check.url.host} within ${headersMs} ms`, "timeout");
      throw new OutboundError(`could not connect to ${check.url.host}: ${error instanceof Error ? error.message : String(error)}`, "connect");
    } finally {
      clearTimeout(timer);
    }
    const location = response.headers.get("location");
    if (response.status < 300 || response.status >= 400 || !location || hop >= (options.maxRedirects ?? 0)) return response;
    await response.body?.cancel();
    target = new URL(location, check.url).toString();
  }
}
