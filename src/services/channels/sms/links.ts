import { replaceSmsLinks, smsLinks } from "../../../domain/sms";
import { base64UrlEncode } from "../../../lib/random";
import { TtlCache } from "../../../lib/ttl-cache";
import type { SmsLink } from "../../../store/sms";
import { config } from "../../../lib/config";

/**
 * Short links of SMS: each link a message carries becomes {PUBLIC_BASE_URL}/s/{code}. The code
 * is an HMAC (keyed from SECRETS_KEY) of the message id and the link, so a message rendered
 * again gets the same codes, and a code cannot be guessed from another one.
 */
const encoder = new TextEncoder();
const keys = new TtlCache<Promise<CryptoKey>>(3_600_000, 4);

function linkKey(secretsKey: string): Promise<CryptoKey> {
  let key = keys.get(secretsKey);
  if (!key) {
    key = crypto.subtle.importKey("raw", encoder.encode(`sms-links\n${secretsKey}`), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
    keys.set(secretsKey, key);
  }
  return key;
}

/** 12 characters of base64url: 72 bits. */
async function linkCode(key: CryptoKey, msgid: string, index: number, url: string): Promise<string> {
  const mac = new Uint8Array(await crypto.subtle.sign("HMAC", key, encoder.encode(`${msgid}\n${index}\n${url}`)));
  return base64UrlEncode(mac.subarray(0, 9));
}

export const SHORT_CODE = /^[A-Za-z0-9_-]{12}$/;

/** The message's text with its links shortened, and the links to record. */
export async function shortenSmsLinks(env: Pick<Env, "SECRETS_KEY" | "PUBLIC_BASE_URL">, panelId: string, msgid: string, text: string): Promise<{ text: string; links: SmsLink[] }> {
  const urls = smsLinks(text);
  if (urls.length === 0) return { text, links: [] };
  const key = await linkKey(config(env).secretsKey);
  const links = await Promise.all(urls.map(async (url, i) => ({ code: await linkCode(key, msgid, i, url), panelId, msgid, url })));
  const base = config(env).publicBaseUrl;
  return { text: replaceSmsLinks(text, (_url, i) => `${base}/s/${links[i]!.code}`), links };
}
