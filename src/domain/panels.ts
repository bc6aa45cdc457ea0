import { z } from "../lib/z";
import { UNKNOWN_ATTRIBUTE_MODES } from "./attributes";
import { corsOriginList, nameText } from "./fields";
import { isValidTimeZone } from "./time";
import { messageRulesSchema } from "./message-rules";

export const timezoneName = z
  .string()
  .max(64, { abort: true })
  .refine(isValidTimeZone, { error: "must be an IANA time zone such as UTC or Asia/Kolkata" })
  .meta({ example: "Asia/Kolkata" });
export const panelName = nameText(200);

/** PATCH /panels/{panel}: API mode, name, time zone, and the settings for existing clients (CONTRACT 8). */
export const panelPatchBody = z
  .object({
    api_mode: z.boolean().optional(),
    name: panelName.optional(),
    timezone: timezoneName.optional(),
    unknown_attributes: z
      .enum(UNKNOWN_ATTRIBUTE_MODES, { error: `must be one of ${UNKNOWN_ATTRIBUTE_MODES.join(", ")}` })
      .optional()
      .meta({ description: "Contact attributes not in the schema: reject the call (default), ignore them, or create them as strings" }),
    cors_origins: corsOriginList.optional(),
    event_retention_days: z
      .int({ error: "must be a whole number of days" })
      .min(1, { error: "must be at least 1 day" })
      .max(3650, { error: "must be at most 3650 days" })
      .optional()
      .meta({ description: "Days recorded events stay in the panel's database before they move to the archive (R2); 90 by default" }),
    campaign_lead_minutes: z
      .int({ error: "must be a whole number of minutes" })
      .min(0, { error: "must be at least 0 (0: campaigns may be sent now)" })
      .max(10080, { error: "must be at most 10080 minutes (a week)" })
      .optional()
      .meta({
        description:
          "How far ahead the panel's campaigns must be scheduled, in minutes; the deployment's BROADCAST_LEAD_MINUTES (90) until set. At 0 a campaign may be sent now. upload_contact_and_publish keeps the deployment's rule (4.10)",
      }),
    message_rules: messageRulesSchema.optional().meta({
      description:
        "Frequency caps and quiet hours per channel (email, sms, push), for campaigns and journeys alike; replaces the rules set before. Journey message steps marked exempt (transactional) are not held by them",
    }),
    require_two_factor: z
      .boolean({ error: "must be true or false" })
      .optional()
      .meta({ description: "Operators of the panel must sign in with a second factor (TOTP); those without one are asked to enrol at their next sign-in" }),
  })
  .strict();
