import type { smsSettingsAnswer } from "../../../domain/answers/channels";
import type { z } from "../../../lib/z";
import type { SmsSettingsBody } from "../../../domain/sms";
import { decryptSecret, encryptSecret } from "../../../lib/crypto";
import { randomBase64Url } from "../../../lib/random";
import { TtlCache } from "../../../lib/ttl-cache";
import { deleteSmsSettings, getSmsSettings, putSmsSettings, type SmsSettingsRecord } from "../../../store/sms";
import type { ShardDb } from "../../../store/shards";
import { Msg91Provider } from "./msg91";
import type { SmsApiEnv, SmsProvider } from "./provider";
import { TwilioProvider } from "./twilio";
import { config } from "../../../lib/config";

/**
 * A panel's SMS provider (admin `PUT /panels/{panel}/sms`): Twilio or MSG91 with their
 * credentials encrypted at rest with SECRETS_KEY, as webhook secrets are; no provider means
 * the outbox, where journeys' SMS are recorded and nothing is sent.
 */
export interface PanelSms {
  record: SmsSettingsRecord;
  credential: string;
  /** The path secret of the delivery-report and reply URLs. */
  hookToken: string;
}

export type SmsSettingsEnv = SmsApiEnv & Pick<Env, "SECRETS_KEY" | "PUBLIC_BASE_URL">;

/** Settings an isolate trusts for this long; admin writes in the same isolate drop them at once. */
const SETTINGS_CACHE_MS = 10_000;
const cache = new TtlCache<Promise<PanelSms | null>>(SETTINGS_CACHE_MS, 500);

/** The panel's SMS provider settings, decrypted; null: the outbox. */
export function panelSms(env: Pick<Env, "SECRETS_KEY">, db: ShardDb, panelId: string): Promise<PanelSms | null> {
  let entry = cache.get(panelId);
  if (!entry) {
    entry = (async () => {
      const record = await getSmsSettings(db, panelId);
      if (!record) return null;
      const [credential, hookToken] = await Promise.all([decryptSecret(config(env).secretsKey, record.credentialEnc), decryptSecret(config(env).secretsKey, record.hookTokenEnc)]);
      return { record, credential, hookToken };
    })();
    entry.catch(() => cache.delete(panelId));
    cache.set(panelId, entry);
  }
  return entry;
}

/** The URLs a provider is given for this panel: receipts (delivery reports) and replies (STOP). */
export function smsHookUrls(env: Pick<Env, "PUBLIC_BASE_URL">, sms: PanelSms) {
  const base = `${config(env).publicBaseUrl}/hooks/sms/${sms.record.provider}/${encodeURIComponent(sms.record.panelId)}/${sms.hookToken}`;
  return { receipts: base, replies: `${base}/replies` };
}

export function smsProviderOf(env: SmsSettingsEnv, sms: PanelSms): SmsProvider {
  const { record, credential } = sms;
  if (record.provider === "twilio") {
    const receipts = smsHookUrls(env, sms).receipts;
    return new TwilioProvider({
      accountSid: record.config.account_sid!,
      authToken: credential,
      from: record.config.from,
      messagingServiceSid: record.config.messaging_service_sid,
      apiUrl: config(env).twilioApiUrl,
      statusCallback: () => receipts,
    });
  }
  return new Msg91Provider({
    authkey: credential,
    senderId: record.config.sender_id!,
    templateId: record.config.template_id!,
    dltTemplateId: record.config.dlt_template_id ?? null,
    apiUrl: config(env).msg91ApiUrl,
  });
}

/** Stores the panel's provider (or removes it: `outbox`). The hook token is kept across updates so configured URLs keep working. */
export async function saveSmsSettings(env: Pick<Env, "SECRETS_KEY">, db: ShardDb, panelId: string, body: SmsSettingsBody, now: number): Promise<void> {
  cache.delete(panelId);
  if (body.provider === "outbox") return deleteSmsSettings(db, panelId);
  const previous = await getSmsSettings(db, panelId);
  const { provider, ...rest } = body;
  const secret = "auth_token" in rest ? rest.auth_token : rest.authkey;
  const settings = Object.fromEntries(Object.entries(rest).filter(([name, value]) => name !== "auth_token" && name !== "authkey" && value !== undefined)) as Record<string, string>;
  const key = config(env).secretsKey;
  await putSmsSettings(db, {
    panelId,
    provider,
    config: settings,
    credentialEnc: await encryptSecret(key, secret),
    hookTokenEnc: previous?.hookTokenEnc ?? (await encryptSecret(key, randomBase64Url(24))),
    updatedAt: now,
  });
  cache.delete(panelId);
}

/** What the admin API shows of a panel's SMS setup: never the credential. */
export function smsSettingsView(env: Pick<Env, "PUBLIC_BASE_URL">, sms: PanelSms | null): z.input<typeof smsSettingsAnswer> {
  if (!sms) return { provider: "outbox", sends: false };
  const urls = smsHookUrls(env, sms);
  return {
    provider: sms.record.provider,
    sends: true,
    ...sms.record.config,
    credential_set: true,
    // Twilio is given the receipt URL with each message; MSG91's delivery-report webhook is set in its panel.
    delivery_report_url: urls.receipts,
    // The provider's incoming-message webhook, so STOP replies suppress the number.
    replies_url: urls.replies,
    updated_at: new Date(sms.record.updatedAt).toISOString(),
  };
}
