import { decodeOrKeep } from "../lib/uri";
import { z } from "../lib/z";
import { canonicalAttributeName } from "./attributes";
import { headerFormatProblem } from "./csv";
import { bodySourceField } from "./email-source";
import { addressList, emailAddress, textListParam, listIdParam, outboundUrl, textParam, type InputRules } from "./fields";
import { formatLocalIso, instantOf, parseLocalDateTime } from "./time";
import { variantParam, type AbMetric, type AbTestResults } from "./ab-test";
import type { CampaignAction, CampaignStatus } from "./campaign-lifecycle";

/**
 * The email broadcast request (spec 2.5, CONTRACT 2.4): one schema for the route, its
 * /openapi.json entry and the type the engine takes. What it cannot see (the list names taken,
 * the files themselves) the engine checks with the helpers below.
 */

export const MAX_TAGS = 5;
export const MAX_CAMPAIGN_TEXT = 500;
/** notify_me recipients at most. */
export const MAX_NOTIFY_ADDRESSES = 20;

/** What the request's rules read: may URLs name private hosts, the panel's zone, the clock, the lead time. */
export interface BroadcastRules extends InputRules {
  timezone: string;
  now: number;
  leadMinutes: number;
}

/** Decodes standard or URL-safe base64 (line breaks allowed) as UTF-8; null when it is not base64 or not UTF-8. */
export function decodeBase64Utf8(input: string): string | null {
  const compact = input.replace(/\s+/g, "").replace(/-/g, "+").replace(/_/g, "/");
  if (compact === "" || !/^[A-Za-z0-9+/]*={0,2}$/.test(compact) || compact.length % 4 === 1) return null;
  try {
    const binary = atob(compact.padEnd(Math.ceil(compact.length / 4) * 4, "="));
    const bytes = Uint8Array.from(binary, (c) => c.charCodeAt(0));
    return new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(bytes);
  } catch {
    return null;
  }
}

/** Optional text: absent, null and blank are not given; a number is its decimal text. */
const optionalText = (error = "must be text") =>
  z
    .union([z.string(), z.number()], { error })
    .nullish()
    .transform((value) => (value === undefined || value === null ? undefined : String(value).trim() || undefined));

const ROWCOUNT_RULE = 'must be "1" (row count in the file name) or absent';
const MD5_RULE = "must be an MD5 digest: 32 hex characters";

const campaignText = (max: number, description: string) => textParam(max).meta({ description });

const tags = z
  .union([z.string(), z.array(z.string())], { error: "must be text: labels separated by commas" })
  .nullish()
  .transform((value, ctx) => {
    const labels = (value === undefined || value === null ? [] : Array.isArray(value) ? value : value.split(",")).map((t) => t.trim()).filter(Boolean);
    if (labels.length > MAX_TAGS) ctx.addIssue({ code: "custom", message: `at most ${MAX_TAGS} tags are allowed, not ${labels.length}` });
    else if (labels.some((t) => t.length > 100)) ctx.addIssue({ code: "custom", message: "each tag must be at most 100 characters" });
    return labels;
  })
  .meta({ description: `Up to ${MAX_TAGS} labels, comma separated (a JSON array is accepted)`, example: "spring,sale" });

const checkRowcount = optionalText(ROWCOUNT_RULE)
  .transform((value, ctx) => {
    if (value === undefined || value === "0") return false;
    if (value === "1") return true;
    ctx.addIssue({ code: "custom", message: ROWCOUNT_RULE });
    return z.NEVER;
  })
  .meta({ description: '"1": each CSV is named <name>_<rows>.csv and holds that many rows, header included' });

const md5 = optionalText(MD5_RULE)
  .pipe(z.string().toLowerCase().regex(/^[0-9a-f]{32}$/, { error: MD5_RULE }).optional())
  .meta({ description: "MD5 of the downloaded file, hex; not with check_rowcount" });

const sourceCode = optionalText()
  .transform((value, ctx) => {
    if (value === undefined) return undefined;
    const html = decodeBase64Utf8(value);
    if (html !== null && html.trim() !== "") return html;
    ctx.addIssue({ code: "custom", message: html === null ? "must be the HTML body encoded in base64 (UTF-8)" : "decodes to an empty body" });
    return z.NEVER;
  })
  .meta({ description: "The HTML body, base64 (UTF-8); exactly one of source_file and source_code" });

function scheduleDate(rules: BroadcastRules) {
  return textParam(19)
    .transform((text, ctx) => {
      const clock = parseLocalDateTime(text);
      if (!clock.ok) {
        ctx.addIssue({ code: "custom", message: clock.reason });
        return z.NEVER;
      }
      const sendAt = instantOf(clock.value, rules.timezone);
      const earliest = rules.now + rules.leadMinutes * 60_000;
      if (sendAt < earliest) {
        ctx.addIssue({
          code: "custom",
          message: `must be at least ${rules.leadMinutes} minutes ahead (in the panel's time zone ${rules.timezone}); the earliest allowed is ${formatLocal(earliest, rules.timezone)}`,
        });
      }
      return { local: text, sendAt };
    })
    .meta({ description: "YYYY-MM-DD HH:mm:SS in the panel's time zone, at least BROADCAST_LEAD_MINUTES ahead", example: "2026-12-01 09:30:00" });
}

const notifyMe = textListParam(2048).pipe(addressList(MAX_NOTIFY_ADDRESSES));

/** Set and not empty; a member that failed its own rule counts as given. */
const given = (value: unknown) => value !== undefined && value !== null && value !== "";

/**
 * The data object of 4.10. Every problem is reported at once, in the order of the members:
 * the rules across members run even when a member failed its own.
 */
export function broadcastRequestSchema(rules: BroadcastRules) {
  const shape = {
    contacts_upload_source: textParam(2048)
      .pipe(outboundUrl(rules))
      .refine((url) => /\.(csv|zip)$/i.test(pathOf(url)), { error: "must be the URL of a .csv file or of a .zip of .csv files" })
      .meta({ description: "http(s) URL of a .csv file or of a .zip of .csv files", example: "https://files.example.com/contacts.csv" }),
    list_name: campaignText(200, "Name of the new list; no list of the panel may have it"),
    campaign_name: campaignText(MAX_CAMPAIGN_TEXT, "Name of the campaign"),
    subject_line: campaignText(998, "Subject; {{ATTRIBUTE|fallback}} personalises it"),
    sender_name: campaignText(200, "Sender's display name"),
    sender_email_id: textParam(254).pipe(emailAddress).meta({ description: "Sender's address", example: "shop@example.com" }),
    contacts_upload_source_file_md5: md5,
    check_rowcount: checkRowcount,
    tags,
    schedule_date: scheduleDate(rules),
    source_file: optionalText().pipe(outboundUrl(rules).optional()).meta({ description: "http(s) URL of the HTML body; exactly one of source_file and source_code" }),
    source_code: sourceCode,
    notify_me: notifyMe.meta({ description: `One to ${MAX_NOTIFY_ADDRESSES} addresses, comma separated (or a JSON array of them), that get the answer by email`, example: "ops@example.com" }),
  };
  const order: readonly string[] = Object.keys(shape);
  return z
    .object(shape, {
      error: (issue) =>
        issue.input === undefined ? "is required: a JSON object with the broadcast request (spec 2.5)" : "must be a JSON object with the broadcast request (spec 2.5)",
    })
    .superRefine(
      (data, ctx) => {
        if (data.check_rowcount === true && typeof data.contacts_upload_source_file_md5 === "string") {
          ctx.addIssue({ code: "custom", path: ["check_rowcount"], message: "must not be combined with contacts_upload_source_file_md5: pass one or the other" });
        }
        const file = given(data.source_file);
        const code = given(data.source_code);
        if (!file && !code) ctx.addIssue({ code: "custom", path: ["source_file"], message: "one of source_file (URL of the HTML body) and source_code (base64 HTML) is required" });
        else if (file && code) ctx.addIssue({ code: "custom", path: ["source_code"], message: "must not be combined with source_file: pass exactly one of them" });
        const rank = (issue: { path?: PropertyKey[] }) => order.indexOf(String(issue.path?.[0]));
        ctx.issues.sort((a, b) => rank(a) - rank(b));
      },
      { when: (payload) => typeof payload.value === "object" && payload.value !== null && !Array.isArray(payload.value) },
    )
    .transform((data) => ({
      contactsSource: data.contacts_upload_source,
      md5: data.contacts_upload_source_file_md5 ?? null,
      checkRowcount: data.check_rowcount,
      listName: data.list_name,
      campaignName: data.campaign_name,
      subject: data.subject_line,
      senderName: data.sender_name,
      senderEmail: data.sender_email_id,
      tags: data.tags,
      scheduleLocal: data.schedule_date.local,
      sendAt: data.schedule_date.sendAt,
      sourceFile: data.source_file ?? null,
      /** The decoded HTML of `source_code`. */
      sourceHtml: data.source_code ?? null,
      notify: data.notify_me,
    }));
}

export type BroadcastRequest = z.output<ReturnType<typeof broadcastRequestSchema>>;

/**
 * The answer of spec 2.6 without its `payload` (the echo of the request): what the service
 * wrote, in the order the answer lists it. The notify_me mail carries this much and no more.
 */
export function broadcastAnswer(requestId: string, success: boolean, campaignId: string, message: string) {
  return { RequestID: requestId, success, CampaignID: campaignId, message };
}

const idList = <T extends z.ZodType>(item: T, what: string) => z.array(item).max(100, { error: `must name at most 100 ${what}` }).default([]);

/** Who a campaign of the admin API sends to (CONTRACT 9): lists and/or saved segments, minus excluded ones. */
export const campaignAudienceSchema = z
  .object({
    lists: idList(listIdParam, "lists"),
    segments: idList(z.string().trim().min(1).max(64), "segments"),
    exclude_lists: idList(listIdParam, "lists"),
    exclude_segments: idList(z.string().trim().min(1).max(64), "segments"),
  })
  .strict()
  .refine((a) => a.lists.length + a.segments.length > 0, { error: "must name at least one list or segment to send to (lists, segments)" });

/**
 * The body of POST /panels/{panel}/campaigns with an `audience` (CONTRACT 9): the rules of 4.10
 * for everything but the contacts, which are lists and saved segments of the panel. Without
 * `schedule_date` the campaign is published at the next minute.
 */
export function audienceCampaignSchema(rules: BroadcastRules) {
  return z
    .object({
      name: campaignText(MAX_CAMPAIGN_TEXT, "Name of the campaign"),
      subject: campaignText(998, "Subject; {{ATTRIBUTE|fallback}} personalises it; with email_template, absent takes the template's").optional(),
      sender_name: campaignText(200, "Sender's display name"),
      sender_email: z.string().max(254).pipe(emailAddress),
      reply_to: z.string().max(254).pipe(emailAddress).optional(),
      email_template: z
        .string({ error: "must be the id of one of the panel's email templates" })
        .trim()
        .min(1)
        .max(64)
        .optional()
        .meta({ description: "A saved email template (/email-templates) whose subject, preheader and body the campaign copies now: editing the template later does not change it" }),
      html: z.string().max(2 * 1024 * 1024, { error: "must be at most 2 MiB" }).refine((h) => h.trim() !== "", { error: "must not be empty" }).optional(),
      body_source: bodySourceField.optional().meta({ description: "The visual editor's source html was rendered from (the panel renders it with MJML); only with html" }),
      html_url: z.string().max(2048).pipe(outboundUrl(rules)).optional(),
      schedule_date: scheduleDate(rules).optional(),
      local_time: z
        .string({ error: "must be a time of day, HH:MM" })
        .max(5, { abort: true, error: "must be a time of day, HH:MM (00:00 to 23:59)" })
        .regex(/^([01]\d|2[0-3]):[0-5]\d$/, { error: "must be a time of day, HH:MM (00:00 to 23:59)" })
        .optional()
        .meta({
          description:
            "Send at local time: each recipient at this HH:MM of the send date (schedule_date's, in the panel's zone) on its own clock (its TIMEZONE attribute, else the panel's zone), so over up to 26 hours; where that time has passed when the campaign starts, at once",
          example: "10:00",
        }),
      tags,
      audience: campaignAudienceSchema,
      topic: z
        .string({ error: "must be the id of one of the panel's topics" })
        .trim()
        .min(1, { error: "must be the id of one of the panel's topics" })
        .max(64, { error: "must be the id of one of the panel's topics" })
        .optional()
        .meta({ description: "A topic of the panel (/topics) the campaign is about: contacts who left it on their preference page are skipped" }),
    })
    .strict()
    .superRefine((data, ctx) => {
      const bodies = [data.html, data.html_url, data.email_template].filter((b) => b !== undefined).length;
      if (bodies === 0) ctx.addIssue({ code: "custom", path: ["html"], message: "one of html, html_url and email_template is required" });
      if (data.html !== undefined && data.html_url !== undefined) ctx.addIssue({ code: "custom", path: ["html_url"], message: "must not be combined with html: pass exactly one of them" });
      if (data.email_template !== undefined && bodies > 1) ctx.addIssue({ code: "custom", path: ["email_template"], message: "must not be combined with html or html_url: the template is the body" });
      if (data.subject === undefined && data.email_template === undefined) ctx.addIssue({ code: "custom", path: ["subject"], message: "is required" });
      if (data.body_source != null && data.html === undefined) ctx.addIssue({ code: "custom", path: ["body_source"], message: "must come with html, the body rendered from it" });
    })
    .transform((data) => ({
      campaignName: data.name,
      subject: data.subject ?? null,
      senderName: data.sender_name,
      senderEmail: data.sender_email,
      replyTo: data.reply_to ?? null,
      sourceHtml: data.html ?? null,
      sourceFile: data.html_url ?? null,
      emailTemplate: data.email_template ?? null,
      bodySource: data.body_source ?? null,
      scheduleLocal: data.schedule_date?.local ?? formatLocal(rules.now, rules.timezone),
      sendAt: data.schedule_date?.sendAt ?? rules.now,
      tags: data.tags,
      audience: data.audience,
      localTime: data.local_time ?? null,
      topicId: data.topic ?? null,
    }));
}

export type AudienceCampaignRequest = z.output<ReturnType<typeof audienceCampaignSchema>>;

/**
 * PATCH /panels/{panel}/campaigns/{campaign}: what a draft or scheduled campaign may change
 * (domain/campaign-lifecycle.ts); each member left out stays as it is. Its time changes by
 * rescheduling.
 */
export function campaignEditSchema(rules: InputRules) {
  return z
    .object({
      name: campaignText(MAX_CAMPAIGN_TEXT, "Name of the campaign").optional(),
      subject: campaignText(998, "Subject; {{ATTRIBUTE|fallback}} personalises it").optional(),
      sender_name: campaignText(200, "Sender's display name").optional(),
      sender_email: z.string().max(254).pipe(emailAddress).optional(),
      reply_to: z.string().max(254).pipe(emailAddress).nullable().optional().meta({ description: "null removes it" }),
      html: z.string().max(2 * 1024 * 1024, { error: "must be at most 2 MiB" }).refine((h) => h.trim() !== "", { error: "must not be empty" }).optional(),
      body_source: bodySourceField.optional().meta({ description: "The visual editor's source html was rendered from; only with html. A new html without it drops the campaign's source" }),
      html_url: z.string().max(2048).pipe(outboundUrl(rules)).optional(),
      email_template: z
        .string({ error: "must be the id of one of the panel's email templates" })
        .trim()
        .min(1)
        .max(64)
        .optional()
        .meta({ description: "Copy a saved email template's body (and its subject, unless subject is given) into the campaign now" }),
      tags: z.array(z.string().trim().min(1).max(100)).max(MAX_TAGS, { error: `at most ${MAX_TAGS} tags are allowed` }).optional(),
      audience: campaignAudienceSchema.optional(),
      topic: z
        .string({ error: "must be the id of one of the panel's topics" })
        .trim()
        .min(1, { error: "must be the id of one of the panel's topics" })
        .max(64, { error: "must be the id of one of the panel's topics" })
        .nullable()
        .optional()
        .meta({ description: "The topic the campaign is about (contacts who left it are skipped); null: none" }),
    })
    .strict()
    .superRefine((data, ctx) => {
      if (data.html !== undefined && data.html_url !== undefined) ctx.addIssue({ code: "custom", path: ["html_url"], message: "must not be combined with html: pass exactly one of them" });
      if (data.email_template !== undefined && (data.html !== undefined || data.html_url !== undefined)) {
        ctx.addIssue({ code: "custom", path: ["email_template"], message: "must not be combined with html or html_url: the template is the body" });
      }
      if (data.body_source != null && data.html === undefined) ctx.addIssue({ code: "custom", path: ["body_source"], message: "must come with html, the body rendered from it" });
      if (Object.keys(data).length === 0) ctx.addIssue({ code: "custom", path: [], message: "must change at least one member" });
    });
}

export type CampaignEdit = z.output<ReturnType<typeof campaignEditSchema>>;

/**
 * POST /panels/{panel}/campaigns/{campaign}/schedule: a time at least the panel's campaign lead
 * time ahead, or `send_now` where that lead time is 0.
 */
export function campaignScheduleSchema(rules: BroadcastRules) {
  return z
    .object({
      schedule_date: scheduleDate(rules).optional(),
      send_now: z.literal(true, { error: "must be true when given" }).optional().meta({ description: "Send at the next minute; only where the panel's campaign lead time is 0" }),
    })
    .strict()
    .superRefine((data, ctx) => {
      if ((data.schedule_date === undefined) === (data.send_now === undefined)) ctx.addIssue({ code: "custom", path: ["schedule_date"], message: "pass exactly one of schedule_date and send_now" });
      else if (data.send_now && rules.leadMinutes > 0) {
        ctx.addIssue({ code: "custom", path: ["send_now"], message: `is offered only where the panel's campaign lead time is 0; it is ${rules.leadMinutes} minutes` });
      }
    })
    .transform((data) => data.schedule_date ?? { local: formatLocal(rules.now, rules.timezone), sendAt: rules.now });
}

function pathOf(url: string): string {
  try {
    return decodeOrKeep(new URL(url).pathname);
  } catch {
    return url;
  }
}

/** The file name at the end of a URL or zip entry path. */
export function fileNameOf(pathOrUrl: string): string {
  const path = /^https?:/i.test(pathOrUrl) ? pathOf(pathOrUrl) : pathOrUrl;
  return path.split("/").pop() ?? path;
}

/** The row count embedded in `<name>_<rows>.csv`, or null when the name has none. */
export function rowcountInFileName(name: string): number | null {
  const match = /_(\d+)\.csv$/i.exec(name);
  return match ? Number(match[1]) : null;
}

/** `YYYY-MM-DD HH:mm:SS` in the zone: the schedule_date form. */
function formatLocal(epochMs: number, timeZone: string): string {
  return formatLocalIso(epochMs, timeZone).replace("T", " ");
}

export type HeaderCheck = { ok: true; header: string[] } | { ok: false; message: string };

/**
 * The header rows of every CSV of the upload: identical across files (same names, same
 * order), known to the panel's schema and holding the primary key.
 */
export function checkCsvHeaders(
  files: ReadonlyArray<{ name: string; header: string[] }>,
  known: (name: string) => boolean,
  primaryKey: string,
): HeaderCheck {
  const first = files[0];
  if (!first) return { ok: false, message: "the upload holds no .csv file" };
  const formatProblem = headerFormatProblem(first.header);
  if (formatProblem) return { ok: false, message: `${first.name}: ${formatProblem}` };
  const canonical = (header: string[]) => header.map((h) => canonicalAttributeName(h));
  const expected = canonical(first.header);
  for (const file of files.slice(1)) {
    const header = canonical(file.header);
    if (header.length !== expected.length || header.some((h, i) => h !== expected[i])) {
      return {
        ok: false,
        message: `every csv file must have the same header: ${file.name} has "${file.header.join(",")}" but ${first.name} has "${first.header.join(",")}"`,
      };
    }
  }
  const empty = expected.filter((h) => h === "");
  if (empty.length) return { ok: false, message: `the csv header of ${first.name} has an empty column name` };
  const duplicates = expected.filter((h, i) => expected.indexOf(h) !== i);
  if (duplicates.length) return { ok: false, message: `the csv header names ${duplicates.join(", ")} more than once` };
  const unknown = first.header.filter((h) => !known(canonicalAttributeName(h)));
  if (unknown.length) {
    return { ok: false, message: `the csv header has attributes that do not exist in the panel: ${unknown.join(", ")}` };
  }
  if (!expected.includes(primaryKey)) return { ok: false, message: `the csv header must contain the panel's primary key ${primaryKey}` };
  return { ok: true, header: expected };
}

export type { CampaignStatus } from "./campaign-lifecycle";

/** Who a campaign of the admin API sends to (CONTRACT 9): resolved when it is published. */
export interface CampaignAudience {
  lists: number[];
  segments: string[];
  exclude_lists: number[];
  exclude_segments: string[];
}

export interface CampaignCounters {
  recipients: number;
  queued: number;
  sent: number;
  failed: number;
  skipped: number;
  opens: number;
  unique_opens: number;
  clicks: number;
  unique_clicks: number;
  bounces: number;
  unsubscribes: number;
}

/** What a campaign's messages came to, as its aggregates sum it: the counters but the audience's size and what waits. */
export type CampaignSums = Omit<CampaignCounters, "recipients" | "queued">;

/** One hour of a campaign's report: what changed in it (UTC; `hour` is its start, epoch ms). */
export interface CampaignHour extends CampaignSums {
  hour: number;
}

export interface CampaignLinkClicks {
  url: string;
  clicks: number;
}

/** GET /panels/{panel}/campaigns/{id}/report: the counters, rates, hours and top links. */
export interface CampaignReport {
  counters: CampaignCounters;
  /** Shares of what was sent, 0 to 1 (0 before anything was sent); delivered is sent minus bounced. */
  rates: { delivered: number; unique_open: number; click_through: number; click_to_open: number; bounce: number; unsubscribe: number };
  hours: CampaignHour[];
  top_links: CampaignLinkClicks[];
  /** Its A/B test's variants side by side and the winner; null without a test. */
  ab_test: AbTestResults | null;
}

/** The recipients behind one of the report's numbers. */
export const RECIPIENT_FILTERS = ["all", "queued", "sent", "failed", "skipped", "opened", "clicked", "bounced", "unsubscribed"] as const;
export type RecipientFilter = (typeof RECIPIENT_FILTERS)[number];

export const recipientsQuery = z.object({
  filter: z.enum(RECIPIENT_FILTERS).default("all").meta({ description: "Which recipients: all, or those behind one number of the report" }),
  after: z.coerce.number().int().min(0).default(0).meta({ description: "The `next` of the previous page" }),
  limit: z.coerce.number().int().min(1).max(500).default(50),
  format: z.enum(["json", "csv"]).default("json").meta({ description: "csv: every matching recipient as one CSV download (after and limit ignored)" }),
});

/** One recipient as GET /panels/{panel}/campaigns/{id}/recipients answers it. */
export interface CampaignRecipientView {
  contact_id: number;
  key: string | null;
  address: string | null;
  status: string;
  /** Why it was skipped or failed. */
  error: string | null;
  sent_at: string | null;
  opens: number;
  clicks: number;
  first_open_at: string | null;
  first_click_at: string | null;
  bounced_at: string | null;
  unsubscribed_at: string | null;
  /** The subject the recipient got, merge tags filled. */
  subject: string;
  /** Its message id: GET /panels/{panel}/messages/{message_id}/copy answers the copy of a sent one. */
  message_id: string;
}

export interface CampaignRecipientsPage {
  recipients: CampaignRecipientView[];
  /** Pass as `after` for the next page; null on the last. */
  next: number | null;
}

/** POST /panels/{panel}/campaigns/{id}/test: the address one test copy goes to (checked as an email address by the service). */
/** POST /panels/{panel}/campaigns/audience-estimate: the audience a campaign would take. */
export const audienceEstimateBody = z.strictObject({ audience: campaignAudienceSchema });

/** Test copies go to at most this many addresses a request. */
export const MAX_TEST_ADDRESSES = 10;

/** POST …/test: one address (`email`) or several (`emails`), each given a copy. */
export const testSendBody = z
  .strictObject({
    email: z.string().min(1).max(254).optional().meta({ description: "The address the test copy goes to" }),
    emails: z
      .array(z.string().min(1).max(254))
      .min(1, { error: "must name at least one address" })
      .max(MAX_TEST_ADDRESSES, { error: `must name at most ${MAX_TEST_ADDRESSES} addresses` })
      .optional()
      .meta({ description: `The addresses a test copy goes to each (at most ${MAX_TEST_ADDRESSES})` }),
    variant: variantParam.optional(),
  })
  .superRefine((data, ctx) => {
    if (data.email === undefined && data.emails === undefined) ctx.addIssue({ code: "custom", path: ["email"], message: "is required: the address the test copy goes to (or emails, several)" });
    if (data.email !== undefined && data.emails !== undefined) ctx.addIssue({ code: "custom", path: ["emails"], message: "must not be combined with email: pass one of them" });
  });

/** GET …/preview: whose attributes fill the merge tags. */
export const campaignPreviewQuery = z.strictObject({
  contact: z.string().trim().min(1).max(254).optional().meta({ description: "The primary-key value of the contact to preview as; without it every merge tag shows its fallback" }),
  variant: variantParam.optional(),
});

/** One message the outbox provider kept, as GET /panels/{panel}/outbox answers it. */
export interface OutboxMessageView {
  id: string;
  channel: string;
  to: string;
  from: string;
  subject: string;
  campaign_id: string | null;
  size: number;
  created_at: string;
  note: string | null;
}

/** A campaign as the admin routes answer it (src/admin/campaigns.ts); the panel reads this type. */
export interface CampaignView {
  id: string;
  name: string;
  status: CampaignStatus;
  status_reason: string | null;
  /** The campaign's own list (4.10); null for a campaign with an audience. */
  list_id: number | null;
  audience: CampaignAudience | null;
  reply_to: string | null;
  subject: string;
  sender_name: string;
  sender_email: string;
  tags: string[];
  /** When it goes out, in the panel's time zone (`YYYY-MM-DD HH:mm:SS`). */
  schedule_date: string;
  timezone: string;
  send_at: string;
  /** Send at local time: each recipient at this HH:MM on its own clock; null: at once. */
  local_time: string | null;
  import_job_id: string | null;
  /** The saved email template its subject and body were copied from when it was created; null: its own. */
  email_template: string | null;
  /** The topic it is about (contacts who left it are skipped); null: none. */
  topic: string | null;
  request_id: string;
  created_at: string;
  published_at: string | null;
  finished_at: string | null;
  counters: CampaignCounters;
  /** What the campaign's state allows now (domain/campaign-lifecycle.ts): the panel's buttons. */
  actions: CampaignAction[];
  /** Its A/B test in brief (GET …/ab-test has the rest); null without one. */
  ab_test: { variants: number; metric: AbMetric; winner: string | null } | null;
}
