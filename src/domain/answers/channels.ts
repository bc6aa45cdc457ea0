// The admin API's answers about the SMS and push channels' settings and SMS templates.
import { z } from "../../lib/z";
import type { SmsLength } from "../sms";
import { isoInstant } from "./panels";

/** GET /panels/{panel}/sms: the provider's settings without its credential, and the URLs to give it. */
export const smsSettingsAnswer = z.discriminatedUnion("sends", [
  z.strictObject({ provider: z.literal("outbox"), sends: z.literal(false) }),
  z.strictObject({
    provider: z.enum(["twilio", "msg91"]),
    sends: z.literal(true),
    // The provider's settings as PUT /sms took them, without auth_token or authkey.
    account_sid: z.string().optional(),
    from: z.string().optional(),
    messaging_service_sid: z.string().optional(),
    sender_id: z.string().optional(),
    template_id: z.string().optional(),
    dlt_template_id: z.string().optional(),
    credential_set: z.literal(true),
    delivery_report_url: z.string(),
    replies_url: z.string(),
    updated_at: isoInstant,
  }),
]);

const smsLength = z.strictObject({
  encoding: z.enum(["GSM-7", "UCS-2"]),
  characters: z.number(),
  units: z.number(),
  segments: z.number(),
}) satisfies z.ZodType<SmsLength>;

/** An SMS template: its length measured with every merge tag at its fallback. */
export const smsTemplateAnswer = z.strictObject({
  id: z.string(),
  name: z.string(),
  body: z.string(),
  dlt_template_id: z.string().nullable(),
  provider_template_id: z.string().nullable(),
  merge_tags: z.array(z.string()),
  length: smsLength,
  created_at: isoInstant,
  updated_at: isoInstant,
});
export const smsTemplateListAnswer = z.strictObject({ templates: z.array(smsTemplateAnswer) });
export const smsTemplateDeletedAnswer = z.strictObject({ deleted: z.boolean() });
export const smsPreviewAnswer = z.strictObject({ text: z.string(), length: smsLength });
export const smsSuppressionListAnswer = z.strictObject({
  suppressions: z.array(z.strictObject({ phone: z.string(), reason: z.enum(["stop", "provider", "operator"]), created_at: isoInstant })),
  /** The `cursor` of the next page; null on the last. A page may be shorter than `limit`, even empty, and still have one. */
  next_cursor: z.string().nullable(),
});
export const smsSuppressionAnswer = z.strictObject({ phone: z.string(), suppressed: z.boolean() });

/** GET /panels/{panel}/push: never a private key. */
export const pushSettingsAnswer = z.strictObject({
  web_push: z.discriminatedUnion("sends", [
    z.strictObject({ sends: z.literal(true), subject: z.string(), public_key: z.string(), subscribe_url: z.string(), subscriptions: z.number() }),
    z.strictObject({ sends: z.literal(false), subscriptions: z.number() }),
  ]),
  fcm: z.discriminatedUnion("sends", [
    z.strictObject({ sends: z.literal(true), project_id: z.string(), client_email: z.string(), credential_set: z.literal(true), register_url: z.string(), tokens: z.number() }),
    z.strictObject({ sends: z.literal(false), tokens: z.number() }),
  ]),
  updated_at: isoInstant.nullable(),
});
