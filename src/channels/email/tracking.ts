import { base64UrlEncode } from "../../lib/random";

/**
 * Tracking tokens of campaign email: the open pixel, each rewritten link and the unsubscribe
 * link. A token carries what it is about (and, for a click, the link itself) and an HMAC over
 * that, with a key derived from SECRETS_KEY, so it cannot be forged or pointed elsewhere: a
 * click redirects only to the link that was signed into the email.
 */

export type TrackingKind = "open" | "click" | "unsubscribe";

export interface TrackingClaim {
  kind: TrackingKind;
  panelId: string;
  campaignId: string;
  contactId: number;
  /** The link of a click token. */
  url?: string;
}

const KIND_CODES: Record<TrackingKind, string> = { open: "o", click: "c", unsubscribe: "u" };
const CODE_KINDS: Record<string, TrackingKind> = { o: "open", c: "click", u: "unsubscribe" };
const MAC_BYTES = 16;
const encoder = new TextEncoder();
const decoder = new TextDecoder();

let cached: { secret: string; key: Promise<CryptoKey> } | undefined;

/** The HMAC key, derived with HKDF so the tracking key is never the encryption key itself. */
function trackingKey(secret: string): Promise<CryptoKey> {
  if (cached?.secret !== secret) {
    const key = (async () => {
      const raw = Uint8Array.from(atob(secret), (c) => c.charCodeAt(0));
      const base = await crypto.subtle.importKey("raw", raw, "HKDF", false, ["deriveKey"]);
      return crypto.subtle.deriveKey(
        { name: "HKDF", hash: "SHA-256", salt: new Uint8Array(), info: encoder.encode("apiv2 email tracking v1") },
        base,
        { name: "HMAC", hash: "SHA-256", length: 256 },
        false,
        ["sign", "verify"],
      );
    })();
    cached = { secret, key };
  }
  return cached.key;
}

function base64UrlDecode(text: string): Uint8Array | null {
  if (!/^[A-Za-z0-9_-]*$/.test(text)) return null;
  try {
    const binary = atob(text.replace(/-/g, "+").replace(/_/g, "/").padEnd(Math.ceil(text.length / 4) * 4, "="));
    return Uint8Array.from(binary, (c) => c.charCodeAt(0));
  } catch {
    return null;
  }
}

export class TrackingSigner {
  private readonly key: Promise<CryptoKey>;

  constructor(secretsKey: string) {
    this.key = trackingKey(secretsKey);
  }

  async sign(claim: TrackingClaim): Promise<string> {
    const fields = [KIND_CODES[claim.kind], claim.panelId, claim.campaignId, String(claim.contactId)];
    if (claim.kind === "click") fields.push(claim.url ?? "");
    const payload = encoder.encode(fields.join("\n"));
    const mac = new Uint8Array(await crypto.subtle.sign("HMAC", await this.key, payload)).subarray(0, MAC_BYTES);
    return `${base64UrlEncode(payload)}.${base64UrlEncode(mac)}`;
  }

  /** The claim of a genuine token of the expected kind; null for anything else. */
  async verify(token: string, kind: TrackingKind): Promise<TrackingClaim | null> {
    const [payloadText, macText, extra] = token.split(".");
    if (payloadText === undefined || macText === undefined || extra !== undefined) return null;
    const payload = base64UrlDecode(payloadText);
    const mac = base64UrlDecode(macText);
    if (!payload || !mac || mac.byteLength !== MAC_BYTES) return null;
    const expected = new Uint8Array(await crypto.subtle.sign("HMAC", await this.key, payload)).subarray(0, MAC_BYTES);
    if (!crypto.subtle.timingSafeEqual(expected, mac)) return null;
    const [code, panelId, campaignId, contactText, url] = decoder.decode(payload).split("\n");
    if (code === undefined || CODE_KINDS[code] !== kind || !panelId || !campaignId || !/^\d+$/.test(contactText ?? "")) return null;
    const claim: TrackingClaim = { kind, panelId, campaignId, contactId: Number(contactText) };
    if (kind === "click") {
      if (!url || !/^https?:\/\//i.test(url)) return null;
      claim.url = url;
    }
    return claim;
  }
}

export interface TrackingLinks {
  open: string;
  unsubscribe: string;
  clicks: string[];
}

/** The tracking URLs of one message, under the deployment's public origin. */
export async function trackingLinks(
  signer: TrackingSigner,
  baseUrl: string,
  message: { panelId: string; campaignId: string; contactId: number },
  links: readonly string[],
): Promise<TrackingLinks> {
  const base = baseUrl.replace(/\/+$/, "");
  const [open, unsubscribe, ...clicks] = await Promise.all([
    signer.sign({ kind: "open", ...message }),
    signer.sign({ kind: "unsubscribe", ...message }),
    ...links.map((url) => signer.sign({ kind: "click", ...message, url })),
  ]);
  return {
    open: `${base}/t/o/${open}`,
    unsubscribe: `${base}/t/u/${unsubscribe}`,
    clicks: clicks.map((token) => `${base}/t/c/${token}`),
  };
}
