import { z } from "../../lib/z";
import { emailAddress, idFromText, nameText, outboundUrl, type InputRules } from "../fields";
import { ALERT_FREQUENCIES } from "./alerts";
import { PAYLOAD_VERSIONS } from "./payload";

// A webhook's configuration as the admin API takes it (CONTRACT 4 and 6); the panel's request
// types are z.input of these schemas.

const SECRET_PREFIX = "whsec_";

/** Why a signing secret is unusable, or null: `whsec_` + base64 of 24 to 64 random bytes. */
export function signingSecretProblem(secret: string): string | null {
  if (!secret.startsWith(SECRET_PREFIX)) return `must start with ${SECRET_PREFIX} (a Standard Webhooks secret)`;
  let length: number;
  try {
    length = atob(secret.slice(SECRET_PREFIX.length)).length;
  } catch {
    return `must be ${SECRET_PREFIX} followed by base64`;
  }
  if (length < 24 || length > 64) return `must encode 24 to 64 bytes after ${SECRET_PREFIX}, not ${length}`;
  return null;
}

const label = nameText(200);
export const url = (rules: InputRules) =>
  z
    .string()
    .trim()
    .min(1, { error: "must not be empty" })
    .max(2048)
    .pipe(outboundUrl(rules))
    .meta({ example: "https://hooks.example.com/journeys" });
const username = z.string().min(1, { error: "must not be empty" }).max(200).refine((u) => !u.includes(":"), { error: "must not contain ':' (Basic authentication)" });
const password = z.string().max(500);
/** `"2.0"` or `"1.0"`; also as a number or without its `.0` (`2`, `"1"`), as clients write a version. */
const version = z.preprocess(
  (value) => {
    const whole = typeof value === "number" || typeof value === "string" ? idFromText(value) : undefined;
    return whole === undefined ? value : `${whole}.0`;
  },
  z.enum(PAYLOAD_VERSIONS, { error: `must be one of ${PAYLOAD_VERSIONS.join(", ")}` }),
);
const alert = z
  .object({
    emails: z.array(emailAddress).min(1, { error: "must name at least one recipient" }).max(20),
    frequency: z.enum(ALERT_FREQUENCIES, { error: `must be one of ${ALERT_FREQUENCIES.join(", ")}` }).default("immediate"),
  })
  .strict();
export const signingSecret = z.string().max(500).superRefine((secret, ctx) => {
  const problem = signingSecretProblem(secret);
  if (problem) ctx.addIssue({ code: "custom", message: problem });
});

/** POST /panels/{panel}/webhooks. */
export const createWebhookBody = (rules: InputRules) =>
  z
    .object({
      label,
      url: url(rules),
      username: username.optional(),
      password: password.optional(),
      version: version.default("2.0"),
      alert: alert.optional(),
      signing_secret: signingSecret.optional(),
    })
    .strict()
    .refine((body) => body.password === undefined || body.username !== undefined, { error: "needs a username", path: ["password"] });

/** PATCH /panels/{panel}/webhooks/{id}: null removes credentials, the alert or the signing secret. */
export const patchWebhookBody = (rules: InputRules) =>
  z
    .object({
      label: label.optional(),
      url: url(rules).optional(),
      username: username.nullable().optional(),
      password: password.nullable().optional(),
      version: version.optional(),
      alert: alert.nullable().optional(),
      signing_secret: signingSecret.nullable().optional(),
    })
    .strict();
