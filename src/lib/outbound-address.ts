/**
 * Which hosts the outbound guard refuses, read from the host as the URL parser leaves it
 * (IPv4 in dotted decimal whatever form it was written in, IPv6 in brackets, compressed, in
 * hex). Only the text is judged: names are resolved later by Cloudflare's resolver, which this
 * code cannot see (docs/api/outbound-fetches.md says what that leaves open).
 */

export type HostVerdict = { ok: true } | { ok: false; reason: string };

const SPECIAL = "must not point at a private, loopback, link-local or other special-use address";

function ipv4Parts(host: string): number[] | null {
  const parts = host.split(".");
  if (parts.length !== 4 || !parts.every((p) => /^\d{1,3}$/.test(p))) return null;
  const numbers = parts.map(Number);
  return numbers.every((n) => n <= 255) ? numbers : null;
}

/** IPv4 ranges that are not the public internet (RFC 6890 and its updates). */
function isSpecialIpv4([a, b, c]: number[]): boolean {
  return (
    a === 0 || // this network
    a === 10 ||
    (a === 100 && b! >= 64 && b! <= 127) || // shared address space (carrier-grade NAT)
    a === 127 ||
    (a === 169 && b === 254) ||
    (a === 172 && b! >= 16 && b! <= 31) ||
    (a === 192 && b === 0 && (c === 0 || c === 2)) || // IETF protocol assignments, TEST-NET-1
    (a === 192 && b === 88 && c === 99) || // 6to4 relay anycast
    (a === 192 && b === 168) ||
    (a === 198 && (b === 18 || b === 19)) || // benchmarking
    (a === 198 && b === 51 && c === 100) || // TEST-NET-2
    (a === 203 && b === 0 && c === 113) || // TEST-NET-3
    a! >= 224 // multicast, reserved, broadcast
  );
}

/** The eight 16-bit groups of a compressed IPv6 address, or null. */
function ipv6Groups(host: string): number[] | null {
  const halves = host.split("::");
  if (halves.length > 2) return null;
  const groupsOf = (part: string) => (part === "" ? [] : part.split(":").map((g) => (/^[0-9a-f]{1,4}$/.test(g) ? parseInt(g, 16) : NaN)));
  const head = groupsOf(halves[0]!);
  const tail = halves.length === 2 ? groupsOf(halves[1]!) : [];
  if (halves.length === 2 && head.length + tail.length > 7) return null;
  const groups = halves.length === 2 ? [...head, ...new Array<number>(8 - head.length - tail.length).fill(0), ...tail] : head;
  return groups.length === 8 && groups.every((g) => !Number.isNaN(g)) ? groups : null;
}

const v4Of = (high: number, low: number) => [high >> 8, high & 255, low >> 8, low & 255];

/**
 * The IPv4 address an IPv6 form carries (mapped, compatible, SIIT, NAT64, 6to4, Teredo), or
 * null. Such a form reaches the IPv4 address, so it is judged as that address would be.
 */
function embeddedIpv4(g: number[]): number[] | null {
  const zeros = (from: number, to: number) => g.slice(from, to).every((x) => x === 0);
  if (zeros(0, 5) && g[5] === 0xffff) return v4Of(g[6]!, g[7]!); // ::ffff:a.b.c.d
  if (zeros(0, 6)) return v4Of(g[6]!, g[7]!); // ::a.b.c.d (deprecated "compatible")
  if (zeros(0, 4) && g[4] === 0xffff && g[5] === 0) return v4Of(g[6]!, g[7]!); // ::ffff:0:a.b.c.d
  if (g[0] === 0x64 && g[1] === 0xff9b && zeros(2, 6)) return v4Of(g[6]!, g[7]!); // 64:ff9b::/96 NAT64
  if (g[0] === 0x2002) return v4Of(g[1]!, g[2]!); // 6to4
  if (g[0] === 0x2001 && g[1] === 0) return v4Of(g[6]! ^ 0xffff, g[7]! ^ 0xffff); // Teredo client
  return null;
}

function isSpecialIpv6(g: number[]): boolean {
  return (
    g.slice(0, 7).every((x) => x === 0) || // :: and ::1
    (g[0] === 0x64 && g[1] === 0xff9b && g[2] === 1) || // 64:ff9b:1::/48 local-use NAT64
    (g[0] === 0x100 && g[1] === 0 && g[2] === 0 && g[3] === 0) || // discard-only
    (g[0] === 0x2001 && g[1]! < 0x200) || // 2001::/23 IETF protocol assignments
    (g[0] === 0x2001 && g[1] === 0xdb8) || // documentation
    (g[0]! & 0xfff0) === 0x3ff0 || // 3fff::/20 documentation
    (g[0]! & 0xfe00) === 0xfc00 || // unique local
    (g[0]! & 0xffc0) === 0xfe80 || // link-local
    (g[0]! & 0xffc0) === 0xfec0 || // site-local (deprecated, still routed inside sites)
    (g[0]! & 0xff00) === 0xff00 // multicast
  );
}

/** Names that only a local resolver answers (RFC 6761, RFC 8375 and common private suffixes). */
const LOCAL_SUFFIXES = ["localhost", "local", "internal", "home.arpa", "localdomain", "home", "lan", "intranet", "corp"];

export function judgeHost(hostname: string): HostVerdict {
  // A trailing dot names the same host ("localhost." is localhost).
  const host = hostname.toLowerCase().replace(/\.+$/, "");
  if (host.startsWith("[")) {
    const groups = ipv6Groups(host.slice(1, -1));
    if (!groups) return { ok: false, reason: "must have a valid host" };
    const v4 = embeddedIpv4(groups);
    if (v4) {
      return isSpecialIpv4(v4)
        ? { ok: false, reason: SPECIAL }
        : { ok: false, reason: "must not be an IPv6 address that embeds an IPv4 one; write the IPv4 address itself" };
    }
    return isSpecialIpv6(groups) ? { ok: false, reason: SPECIAL } : { ok: true };
  }
  const v4 = ipv4Parts(host);
  if (v4) return isSpecialIpv4(v4) ? { ok: false, reason: SPECIAL } : { ok: true };
  if (!host.includes(".")) {
    return { ok: false, reason: `must name the host by its full domain name; a single-label name such as "${host}" is resolved only inside private networks` };
  }
  if (LOCAL_SUFFIXES.some((suffix) => host === suffix || host.endsWith(`.${suffix}`))) return { ok: false, reason: SPECIAL };
  return { ok: true };
}

export type UrlCheck = { ok: true; url: URL } | { ok: false; reason: string };

/** The text of a caller-given URL under the outbound rules (src/lib/outbound.ts); no I/O, so domain/ validates with it. */
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
