import { z } from "../lib/z";
import { isValidTimeZone } from "./time";

export const timezoneName = z
  .string()
  .refine(isValidTimeZone, { error: "must be an IANA time zone such as UTC or Asia/Kolkata" })
  .meta({ example: "Asia/Kolkata" });
export const panelName = z.string().trim().min(1, { error: "must not be empty" }).max(200);

/** PATCH /panels/{panel}: API mode, name, time zone. */
export const panelPatchBody = z
  .object({ api_mode: z.boolean().optional(), name: panelName.optional(), timezone: timezoneName.optional() })
  .strict();
