import { base64UrlDecode } from "../lib/random";
import { z } from "../lib/z";

/**
 * Push without I/O: the admin body of a panel's push setup (web push, FCM), the bodies sites and
 * apps send to subscribe, and what a journey's push message carries to the device.
 */

const base64UrlBytes = (length: number, what: string, first?: number) =>
  z
    .string({ error: `is required: ${what}` })
    .trim()
    .max(200, { abort: true, error: `must be ${what}` })
    .refine(
      (text) => {
        const bytes = base64UrlDecode(text);
        return bytes?.length === length && (first === undefined || bytes[0] === first);
      },
      { error: `must be ${what}, base64url` },
    );

/** Members of a key file that are not used, accepted so the file can be sent as it is. */
const keyFileText = z.string().max(2048).optional();

/** A Google service account as its JSON key file holds it; project_id, client_email and private_key are used. */
const serviceAccount = z.strictObject(
  {
    type: z.literal("service_account", { error: 'must be "service_account": the key file of a Google service account' }).optional(),
    project_id: z
      .string({ error: "is required: the Firebase project id" })
      .trim()
      .max(64, { abort: true, error: "must be a Firebase project id" })
      .regex(/^[a-z][a-z0-9-]{4,62}$/, { error: "must be a Firebase project id: lowercase letters, digits and hyphens" }),
    client_email: z.email({ error: "must be the service account's email address" }).max(320),
    private_key: z
      .string({ error: "is required: the service account's private key (PEM)" })
      .max(8000, { abort: true, error: "must be a PEM private key" })
      .refine((pem) => /-----BEGIN PRIVATE KEY-----[\s\S]+-----END PRIVATE KEY-----/.test(pem), { error: "must be a PKCS #8 PEM private key (BEGIN PRIVATE KEY)" }),
    private_key_id: keyFileText,
    client_id: keyFileText,
    auth_uri: keyFileText,
    token_uri: keyFileText,
    auth_provider_x509_cert_url: keyFileText,
    client_x509_cert_url: keyFileText,
    universe_domain: keyFileText,
  },
  { error: "must be the service account key file's JSON object" },
);

/**
 * PUT /panels/{panel}/push. Each channel absent stays as it is; null turns it off (its messages
 * go to the outbox again). `web_push.subject` is the VAPID contact push services may write to.
 */
export const pushSettingsBody = z
  .object({
    web_push: z
      .object({
        subject: z
          .string({ error: "is required: mailto: or https: URL push services may contact" })
          .trim()
          .max(320, { abort: true, error: "must be a mailto: or https: URL" })
          .regex(/^(mailto:[^\s@]+@[^\s@]+\.[^\s@]+|https:\/\/\S+)$/, { error: "must be a mailto: address or an https: URL" }),
      })
      .strict()
      .nullable()
      .optional(),
    fcm: z.object({ service_account: serviceAccount }).strict().nullable().optional(),
  })
  .strict()
  .refine((b) => b.web_push !== undefined || b.fcm !== undefined, { error: "give web_push, fcm or both (null turns one off)", path: ["web_push"] });
export type PushSettingsBody = z.output<typeof pushSettingsBody>;

/** Who the device belongs to: the contact's primary-key value, or an anonymous visitor id. */
const owner = {
  identity: z.union([z.string().max(320), z.number()], { error: "must be the contact's primary-key value" }).nullish(),
  uniqueid: z.union([z.string().max(200), z.number()], { error: "must be text" }).nullish(),
};

/** POST /v1/push/web/{client_id}: what `PushSubscription.toJSON()` gives, and whose it is. */
export const webSubscribeBody = z
  .object({
    subscription: z.object(
      {
        endpoint: z.string({ error: "is required: the push service URL" }).trim().max(2048),
        expirationTime: z.number().nullable().optional(),
        keys: z.object(
          {
            p256dh: base64UrlBytes(65, "the browser's P-256 public key (an uncompressed point, 65 bytes)", 4),
            auth: base64UrlBytes(16, "the 16-byte auth secret"),
          },
          { error: "is required: p256dh and auth" },
        ),
      },
      { error: "is required: the browser's PushSubscription (subscription.toJSON())" },
    ),
    ...owner,
  })
  .strict();
export type WebSubscribeBody = z.output<typeof webSubscribeBody>;

/** DELETE /v1/push/web/{client_id}: the browser unsubscribed. */
export const webUnsubscribeBody = z.object({ endpoint: z.string({ error: "is required: the subscription's endpoint" }).trim().min(1).max(2048) }).strict();

const fcmToken = z
  .string({ error: "is required: the app's FCM registration token" })
  .trim()
  .min(20, { error: "must be an FCM registration token" })
  .max(4096, { abort: true, error: "must be an FCM registration token" })
  .regex(/^[A-Za-z0-9_:\-.]+$/, { error: "must be an FCM registration token" });

/** POST /v1/push/app/{client_id}: an app install's FCM registration token. */
export const appTokenBody = z
  .object({ token: fcmToken, platform: z.enum(["android", "ios", "web"], { error: "must be one of android, ios, web" }).optional(), ...owner })
  .strict();
export type AppTokenBody = z.output<typeof appTokenBody>;

/** DELETE /v1/push/app/{client_id}: the app signed out or the token was replaced. */
export const appTokenDeleteBody = z.object({ token: fcmToken }).strict();

/**
 * What a push message carries to the device. The web push payload is this JSON (encrypted); the
 * service worker snippet (docs/api/push.md) shows it and reports `delivered` and `click` to
 * `report` with the msgid. FCM carries the same as notification and data.
 */
export interface PushPayload {
  msgid: string;
  title: string;
  body: string;
  url: string | null;
  /** Where the device reports delivered and click: POST {"msgid","event"}. */
  report: string;
}

/** The title a message without one shows: the panel's name, as a site's notifications show their site. */
export function pushPayload(content: { title?: unknown; text?: unknown; url?: unknown }, msgid: string, panelName: string, report: string): PushPayload {
  return {
    msgid,
    title: typeof content.title === "string" && content.title ? content.title : panelName,
    body: typeof content.text === "string" ? content.text : "",
    url: typeof content.url === "string" ? content.url : null,
    report,
  };
}
