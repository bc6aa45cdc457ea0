import { z } from "../lib/z";
import { utf8Length } from "../lib/bytes";
import { escapeHtmlOutsideTags } from "./merge-tags";
import { bodySourceField, type EmailSource } from "./email-source";
import { nameText } from "./fields";

/**
 * A panel's saved email templates (issue 43, item 3): message content (subject, preheader, HTML
 * body) that a campaign or a journey email step copies when it names one. Not the journey
 * templates of spec 6.3, which are whole journeys the panel starts from.
 */

/**
 * Gmail clips HTML past 102 KB, so a body much larger only hurts; 256 KiB leaves room for
 * inlined styles and keeps several copies inside one journey definition's D1 row (2 MB).
 */
export const MAX_TEMPLATE_BODY_BYTES = 256 * 1024;

/** POST and PUT /panels/{panel}/email-templates. */
export const emailTemplateBody = z
  .object({
    name: nameText(200).meta({ description: "The template's name, unique in the panel (whatever the case)" }),
    subject: z
      .string({ error: "is required" })
      .trim()
      .min(1, { error: "must not be empty" })
      .max(998, { error: "must be at most 998 characters" })
      .meta({ description: "Subject; {{ATTRIBUTE|fallback}} personalises it" }),
    preheader: z
      .string({ error: "must be text" })
      .trim()
      .max(500, { error: "must be at most 500 characters" })
      .default("")
      .meta({ description: "The preview text inboxes show after the subject; hidden in the body" }),
    body_html: z
      .string({ error: "is required" })
      // Characters first (a cheap bound, and what the OpenAPI document can say), then UTF-8 bytes.
      .max(MAX_TEMPLATE_BODY_BYTES, { error: `must be at most ${MAX_TEMPLATE_BODY_BYTES / 1024} KiB (UTF-8)`, abort: true })
      .refine((html) => html.trim() !== "", { error: "must not be empty", abort: true })
      .refine((html) => utf8Length(html) <= MAX_TEMPLATE_BODY_BYTES, { error: `must be at most ${MAX_TEMPLATE_BODY_BYTES / 1024} KiB (UTF-8)` })
      .meta({ description: "The HTML body; merge tags {{ATTRIBUTE|fallback}}, {{UNSUBSCRIBE}} and {{PREFERENCES}} as in campaigns" }),
    // What the visual editor rendered body_html from (the panel renders it with MJML); a PUT without it drops it.
    body_source: bodySourceField.default(null),
  })
  .strict();
export type EmailTemplateBody = z.output<typeof emailTemplateBody>;

/** What a campaign or an email step takes from a template: its own copy, never a reference. */
export interface EmailTemplateContent {
  subject: string;
  preheader: string;
  bodyHtml: string;
  bodySource: EmailSource | null;
}

/**
 * The body with the preheader as the hidden first text of the message, where inboxes read their
 * preview from; unchanged without one. Its text is escaped, its merge tags left for personalize
 * (which escapes what it fills them with, fallbacks included).
 */
export function htmlWithPreheader(content: Pick<EmailTemplateContent, "preheader" | "bodyHtml">): string {
  if (content.preheader === "") return content.bodyHtml;
  const hidden = `<div style="display:none;max-height:0;overflow:hidden;mso-hide:all" aria-hidden="true">${escapeHtmlOutsideTags(content.preheader)}</div>`;
  const body = /<body\b[^>]*>/i.exec(content.bodyHtml);
  if (!body) return hidden + content.bodyHtml;
  const at = body.index + body[0].length;
  return content.bodyHtml.slice(0, at) + hidden + content.bodyHtml.slice(at);
}
