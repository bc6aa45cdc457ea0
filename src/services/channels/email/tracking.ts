import { applyTextUnsubscribe, applyTracking, buildMime, trackableLinks, type MimeMessage, type SenderFacts } from "../../../domain/email-message";
import { base64UrlDecode, base64UrlEncode } from "../../../lib/random";

/**
 * Tracking tokens of email (campaigns and journeys): the open pixel, each rewritten link and
 * the unsubscribe link. A token carries what it is about (and, for a click, the link itself),
 * encrypted so that the token tells a reader nothing (not the panel, the campaign or the
 * contact), and authenticated, so it cannot be forged or pointed elsewhere: a click redirects
 * only to the link that was sealed into the email. Keys are derived from SECRETS_KEY.
 *
 * Sealing is deterministic (SIV: the IV is the HMAC of the payload, then AES-CTR under that
 * IV), so the same message always carries the same links and a resent message is the same
 * message. Tokens of the first release (readable payload `.` MAC) still verify.
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

// Payload: lines of `code, panel, campaign, contact[, url]` for campaign mail and
// `j+code, panel, msgid[, url]` for journey mail. The code is under the MAC, so one kind of
// token cannot be read as another.
const KIND_CODES: Record<TrackingKind, string> = { open: "o", click: "c", unsubscribe: "u" };
const CODE_KINDS: Record<string, TrackingKind> = { o: "open", c: "click", u: "unsubscribe" };
const JOURNEY_PREFIX = "j";
const encoder = new TextEncoder();
const decoder = new TextDecoder();

const SIV_BYTES = 16;

interface TokenKeys {
  /** HMAC of tokens of the first release (readable payload). */
  legacyMac: CryptoKey;
  mac: CryptoKey;
  cipher: CryptoKey;
}

let cached: { secret: string; keys: Promise<TokenKeys> } | undefined;

/** The keys, derived with HKDF so that none of them is the encryption key of secrets at rest. */
function trackingKeys(secret: string): Promise<TokenKeys> {
  if (cached?.secret !== secret) {
    const keys = (async () => {
      const raw = Uint8Array.from(atob(secret), (c) => c.charCodeAt(0));
      const base = await crypto.subtle.importKey("raw", raw, "HKDF", false, ["deriveKey"]);
      const derive = (info: string, algorithm: Parameters<SubtleCrypto["deriveKey"]>[2], usages: string[]) =>
        crypto.subtle.deriveKey({ name: "HKDF", hash: "SHA-256", salt: new Uint8Array(), info: encoder.encode(info) }, base, algorithm, false, usages);
      const [legacyMac, mac, cipher] = await Promise.all([
        derive("apiv2 email tracking v1", { name: "HMAC", hash: "SHA-256", length: 256 }, ["sign", "verify"]),
        derive("apiv2 email tracking v2 siv", { name: "HMAC", hash: "SHA-256", length: 256 }, ["sign", "verify"]),
        derive("apiv2 email tracking v2 ctr", { name: "AES-CTR", length: 256 }, ["encrypt", "decrypt"]),
      ]);
      return { legacyMac, mac, cipher };
    })();
    cached = { secret, keys };
  }
  return cached.keys;
}

/** The AES-CTR counter block of a SIV: two bits cleared as RFC 5297 does, so the counter never wraps. */
function counterOf(siv: Uint8Array): Uint8Array {
  const counter = siv.slice();
  counter[8]! &= 0x7f;
  counter[12]! &= 0x7f;
  return counter;
}

async function sivOf(key: CryptoKey, payload: Uint8Array): Promise<Uint8Array> {
  return new Uint8Array(await crypto.subtle.sign("HMAC", key, payload)).subarray(0, SIV_BYTES);
}

export class TrackingSigner {
  private readonly keys: Promise<TokenKeys>;

  constructor(secretsKey: string) {
    this.keys = trackingKeys(secretsKey);
  }

  async sign(claim: TrackingClaim): Promise<string> {
    const fields = isJourneyClaim(claim)
      ? [JOURNEY_PREFIX + KIND_CODES[claim.kind], claim.panelId, claim.msgid]
      : [KIND_CODES[claim.kind], claim.panelId, claim.campaignId, String(claim.contactId)];
    if (claim.kind === "click") fields.push(claim.url ?? "");
    const payload = encoder.encode(fields.join("\n"));
    const keys = await this.keys;
    const siv = await sivOf(keys.mac, payload);
    const sealed = new Uint8Array(await crypto.subtle.encrypt({ name: "AES-CTR", counter: counterOf(siv), length: 64 }, keys.cipher, payload));
    const token = new Uint8Array(SIV_BYTES + sealed.byteLength);
    token.set(siv);
    token.set(sealed, SIV_BYTES);
    return base64UrlEncode(token);
  }

  /** The claim of a genuine token of the expected kind; null for anything else. */
  async verify(token: string, kind: TrackingKind): Promise<TrackingClaim | null> {
    const payload = token.includes(".") ? await this.openLegacy(token) : await this.open(token);
    return payload ? claimOf(decoder.decode(payload), kind) : null;
  }

  private async open(token: string): Promise<Uint8Array | null> {
    const bytes = base64UrlDecode(token);
    if (!bytes || bytes.byteLength <= SIV_BYTES) return null;
    const keys = await this.keys;
    const siv = bytes.subarray(0, SIV_BYTES);
    const payload = new Uint8Array(await crypto.subtle.decrypt({ name: "AES-CTR", counter: counterOf(siv), length: 64 }, keys.cipher, bytes.subarray(SIV_BYTES)));
    return crypto.subtle.timingSafeEqual(await sivOf(keys.mac, payload), siv) ? payload : null;
  }

  private async openLegacy(token: string): Promise<Uint8Array | null> {
    const [payloadText, macText, extra] = token.split(".");
    if (payloadText === undefined || macText === undefined || extra !== undefined) return null;
    const payload = base64UrlDecode(payloadText);
    const mac = base64UrlDecode(macText);
    if (!payload || !mac || mac.byteLength !== SIV_BYTES) return null;
    const expected = new Uint8Array(await crypto.subtle.sign("HMAC", (await this.keys).legacyMac, payload)).subarray(0, SIV_BYTES);
    return crypto.subtle.timingSafeEqual(expected, mac) ? payload : null;
  }
}

function claimOf(text: string, kind: TrackingKind): TrackingClaim | null {
  const [code = "", panelId, ...rest] = text.split("\n");
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
 * of the HTML rewritten to its click URL, the open pixel, the unsubscribe link in both bodies
 * (where the body asked for it, or in a footer naming the sender) and as the one-click
 * List-Unsubscribe header. `html` and `text` are the personalised bodies; the text keeps the
 * links as they were written.
 */
export async function trackedMime(
  signer: TrackingSigner,
  baseUrl: string,
  tracked: TrackedMessageRef,
  facts: SenderFacts,
  message: Omit<MimeMessage, "unsubscribeUrl">,
): Promise<string> {
  const urls = await trackingLinks(signer, baseUrl, tracked, trackableLinks(message.html));
  return buildMime({
    ...message,
    html: applyTracking(message.html, urls, facts),
    text: applyTextUnsubscribe(message.text, urls.unsubscribe, facts),
    unsubscribeUrl: urls.unsubscribe,
  });
}
