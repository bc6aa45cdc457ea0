// The admin API's answers about signup forms and consent (issue 45).
import { z } from "../../lib/z";
import { isoInstant } from "./panels";

const field = z.strictObject({ attribute: z.string(), label: z.string().optional(), required: z.boolean() });

const formFields = {
  id: z.string(),
  name: z.string(),
  title: z.string(),
  fields: z.array(field),
  lists: z.array(z.number()),
  consent_text: z.string(),
  confirmation_text: z.string(),
  thank_you_text: z.string(),
  redirect_url: z.string().nullable(),
  allowed_origins: z.array(z.string()),
  double_opt_in: z.boolean(),
  turnstile_site_key: z.string().nullable(),
  /** The hosted page, and where the snippet and JSON post. */
  hosted_url: z.string(),
  json_url: z.string(),
  created_at: isoInstant,
  updated_at: isoInstant,
};

/** One form with the HTML snippet to paste into a site. */
export const signupFormAnswer = z.strictObject({ ...formFields, snippet: z.string() });
export const signupFormListAnswer = z.strictObject({ forms: z.array(z.strictObject(formFields)) });
export const signupFormDeletedAnswer = z.strictObject({ deleted: z.literal(true) });
/** The panel's form settings; the Turnstile secret is never shown, only whether there is one. */
export const formSettingsAnswer = z.strictObject({ turnstile_secret_set: z.boolean(), consent_keeps_client: z.boolean() });
