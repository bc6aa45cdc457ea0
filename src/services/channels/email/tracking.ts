import { applyTracking, buildMime, trackableLinks, type MimeMessage } from "../../../domain/email-message";
import { base64UrlEncode } from "../../../lib/random";

/**
 * Tracking tokens of email (campaigns and journeys): the open pixel, each rewritten link and
 * the unsubscribe link. A token carries what it is about (and, for a click, the link itself)
 * and an HMAC over that, with a key derived from SECRETS_KEY, so it cannot be forged or
 * pointed elsewhere: a click redirects only to the link that was signed into the email.
 */

export type TrackingKind = "open" | "click" | "unsubscribe";

/** A campaign's message to one contact. */
export interface CampaignMessageRef {
  panelId: string;
  campaignId: string;
  contactId: number;
}

/** A journey's message, by its msgid (`<instance>.<step>`). */
export interface JourneyMessageRef {
  panelId: string;
  msgid: string;
}

export type TrackedMessageRef = CampaignMessageRef | JourneyMessageRef;

export type TrackingClaim<M extends TrackedMessageRef = TrackedMessageRef> = M & {
  kind: TrackingKind;
  /** The link of a click token. */
  url?: string;
};

export function isJourneyClaim(claim: TrackingClaim): claim is TrackingClaim<JourneyMessageRef> {
  return "msgid" in claim;
}

// Payload: lines of `code, panel, campaign, contact[, url]` for campaign mail (the format of
// every token sent before journeys had tracking, so those still verify) and
// `j+code, panel, msgid[, url]` for journey mail. The code is under the MAC, so one kind of
// token cannot be read as another.
const KIND_CODES: Record<TrackingKind, string> = { open: "o", click: "c", unsubscribe: "u" };
const CODE_KINDS: Record<string, TrackingKind> = { o: "open", c: "click", u: "unsubscribe" };
const JOURNEY_PREFIX = "j";
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
    const fields = isJourneyClaim(claim)
      ? [JOURNEY_PREFIX + KIND_CODES[claim.kind], claim.panelId, claim.msgid]
      : [KIND_CODES[claim.kind], claim.panelId, claim.campaignId, String(claim.contactId)];
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
    const [code = "", panelId, ...rest] = decoder.decode(payload).split("\n");
    const journey = code.startsWith(JOURNEY_PREFIX);
    if (CODE_KINDS[journey ? code.slice(JOURNEY_PREFIX.length) : code] !== kind || !panelId) return null;
    let claim: TrackingClaim;
    if (journey) {
      const msgid = rest.shift();
      if (!msgid) return null;
      claim = { kind, panelId, msgid };
    } else {
      const [campaignId, contactText] = rest.splice(0, 2);
      if (!campaignId || !/^\d+$/.test(contactText ?? "")) return null;
      claim = { kind, panelId, campaignId, contactId: Number(contactText) };
    }
    if (kind === "click") {
      const url = rest.join("\n");
      if (!url || !/^https?:\/\//i.test(url)) return null;
      claim.url = url;
    }
    return claim;
  }
}

interface TrackingLinks {
  open: string;
  unsubscribe: string;
  clicks: string[];
}

/** The tracking URLs of one message, under the deployment's public origin. */
async function trackingLinks(
  signer: TrackingSigner,
  baseUrl: string,
  message: TrackedMessageRef,
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

/**
 * The MIME of one tracked message, the same for campaign and journey mail: each trackable link
 * rewritten to its click URL, the open pixel, the unsubscribe link in the body and as the
 * one-click List-Unsubscribe header. `html` is the personalised body.
 */
export async function trackedMime(signer: TrackingSigner, baseUrl: string, tracked: TrackedMessageRef, message: Omit<MimeMessage, "unsubscribeUrl">): Promise<string> {
  const urls = await trackingLinks(signer, baseUrl, tracked, trackableLinks(message.html));
  return buildMime({ ...message, html: applyTracking(message.html, urls), unsubscribeUrl: urls.unsubscribe });
}
