/** DNS over HTTPS: lookups through the DNS JSON API at DOH_URL (sender domains, tracking domains, outbound fetches). */

/** What one DNS-over-HTTPS lookup found: the records' data (TXT strings joined), or why there is no answer. */
export type DnsLookup = { ok: true; records: string[]; ttlSeconds?: number } | { ok: false; error: string };

/** The record types looked up, with their DNS type codes. */
const RR_TYPES = { A: 1, CNAME: 5, TXT: 16, AAAA: 28 } as const;

/** One TXT answer's data: its quoted strings joined (a long record is split into 255-byte strings). */
function txtData(data: string): string {
  if (!data.startsWith('"')) return data;
  return [...data.matchAll(/"((?:[^"\\]|\\.)*)"/g)].map((m) => m[1]!.replace(/\\(.)/g, "$1")).join("");
}

/**
 * TXT records through the DNS JSON API (`application/dns-json`, as Cloudflare's and Google's
 * resolvers answer it) at DOH_URL. A name that does not exist has no records; a resolver that
 * fails says so.
 */
export async function lookupTxt(dohUrl: string, name: string): Promise<DnsLookup> {
  return lookupDns(dohUrl, name, "TXT");
}

/** Records of one type through the DNS JSON API; a CNAME's target without its trailing dot, lower-cased. */
export async function lookupDns(dohUrl: string, name: string, type: keyof typeof RR_TYPES): Promise<DnsLookup> {
  const url = new URL(dohUrl);
  url.searchParams.set("name", name);
  url.searchParams.set("type", type);
  let response: Response;
  try {
    response = await fetch(url, { headers: { accept: "application/dns-json" }, signal: AbortSignal.timeout(5_000) });
  } catch (error) {
    return { ok: false, error: `the DNS resolver could not be reached: ${error instanceof Error ? error.message : String(error)}` };
  }
  if (!response.ok) {
    await response.body?.cancel();
    return { ok: false, error: `the DNS resolver answered HTTP ${response.status}` };
  }
  let answer: { Status?: unknown; Answer?: unknown };
  try {
    answer = await response.json();
  } catch {
    return { ok: false, error: "the DNS resolver's answer is not JSON" };
  }
  // 0: NOERROR, 3: NXDOMAIN (the name does not exist: no records); anything else is a failure.
  if (answer.Status === 3) return { ok: true, records: [] };
  if (answer.Status !== 0) return { ok: false, error: `the DNS lookup of ${name} failed (status ${String(answer.Status)})` };
  const answers = (Array.isArray(answer.Answer) ? answer.Answer : []).filter(
    (a): a is { type: number; data: string; TTL?: unknown } => typeof a === "object" && a !== null && a.type === RR_TYPES[type] && typeof a.data === "string",
  );
  const records = answers.map((a) => (type === "TXT" ? txtData(a.data) : a.data.replace(/\.$/, "").toLowerCase()));
  const ttls = answers.map((a) => a.TTL).filter((ttl): ttl is number => typeof ttl === "number" && ttl >= 0);
  return ttls.length ? { ok: true, records, ttlSeconds: Math.min(...ttls) } : { ok: true, records };
}
