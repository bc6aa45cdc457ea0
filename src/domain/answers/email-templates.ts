// The admin API's answers about a panel's saved email templates (issue 43, item 3).
import { z } from "../../lib/z";
import { emailSource } from "../email-source";
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
export const emailTemplateAnswer = z.strictObject({
  ...templateFields,
  body_html: z.string(),
  body_source: emailSource.nullable().meta({ description: "The visual editor's source body_html was rendered from; null: HTML written by hand" }),
  merge_tags: z.array(z.string()),
});
/** The panel's templates by name, without their bodies (GET .../email-templates/{id} has it). */
export const emailTemplateListAnswer = z.strictObject({ templates: z.array(z.strictObject({ ...templateFields, body_bytes: z.number() })) });
export const emailTemplateDeletedAnswer = z.strictObject({ deleted: z.literal(true) });
