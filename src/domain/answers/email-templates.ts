// The admin API's answers about a panel's saved email templates (issue 43, item 3).
import { z } from "../../lib/z";
import { isoInstant } from "./panels";

const templateFields = {
  id: z.string(),
  name: z.string(),
  subject: z.string(),
  preheader: z.string(),
  created_at: isoInstant,
  updated_at: isoInstant,
};

/** One template with its body and the merge tags subject, preheader and body use (each once). */
export const emailTemplateAnswer = z.strictObject({ ...templateFields, body_html: z.string(), merge_tags: z.array(z.string()) });
/** The panel's templates by name, without their bodies (GET .../email-templates/{id} has it). */
export const emailTemplateListAnswer = z.strictObject({ templates: z.array(z.strictObject({ ...templateFields, body_bytes: z.number() })) });
export const emailTemplateDeletedAnswer = z.strictObject({ deleted: z.literal(true) });
