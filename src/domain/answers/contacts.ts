// The admin API's answers about contacts, their events, lists and background jobs: the routes
// return them and the panel reads them (`z.output`).
import { z } from "../../lib/z";
import { CHANNEL_STATES, PREFERENCE_CHANNELS, SUPPRESSION_REASONS } from "../preferences";
import { isoInstant } from "./panels";

const attributes = z.record(z.string(), z.unknown());
const jobStatus = z.enum(["queued", "running", "completed", "failed"]);

export const contactAnswer = z.strictObject({ key: z.string(), attributes, created_at: isoInstant, updated_at: isoInstant });

export const contactSearchAnswer = z.strictObject({
  primary_key: z.string(),
  /** The attribute searched (the primary key unless `attribute` named another). */
  attribute: z.string(),
  contacts: z.array(contactAnswer),
  next_cursor: z.string().nullable(),
  /**
   * A "contains" search only: how many contacts after the cursor it looked at, and whether it
   * stopped at its bound (then next_cursor goes on after the last one looked at).
   */
  scan: z.strictObject({ contacts: z.number(), bounded: z.boolean() }).optional(),
});

export const contactMessageAnswer = z.strictObject({
  kind: z.enum(["campaign", "journey"]),
  /** GET /panels/{panel}/messages/{message_id}/copy answers its rendered copy when `has_copy`. */
  message_id: z.string(),
  has_copy: z.boolean(),
  source_id: z.string(),
  source_name: z.string(),
  step_id: z.string().nullable(),
  channel: z.string(),
  subject: z.string().nullable(),
  status: z.string(),
  error: z.string().nullable(),
  at: isoInstant,
  opens: z.number(),
  clicks: z.number(),
  bounced: z.boolean(),
  unsubscribed: z.boolean(),
});

/** The contact page: attributes, lists, recent messages and journeys, and the EMAIL's suppression. */
export const contactPageAnswer = contactAnswer.extend({
  primary_key: z.string(),
  lists: z.array(z.strictObject({ id: z.number(), name: z.string() })),
  messages: z.array(contactMessageAnswer),
  journeys: z.array(
    z.strictObject({
      journey_id: z.string(),
      name: z.string(),
      journey_status: z.string(),
      status: z.enum(["active", "completed", "exited"]),
      entered_at: isoInstant,
      ended_at: isoInstant.nullable(),
    }),
  ),
  suppression: z
    .object({ address: z.string(), reason: z.enum(SUPPRESSION_REASONS), campaign_id: z.string().nullable(), since: isoInstant })
    .nullable(),
});

export const erasureAnswer = z.strictObject({
  erasure_id: z.string(),
  state: z.enum(["archive", "done"]),
  archive_parts_rewritten: z.number(),
  created_at: isoInstant,
  finished_at: isoInstant.nullable(),
});

const channelState = z.enum(CHANNEL_STATES);
export const preferencesAnswer = z.strictObject({
  preferences: z.record(z.enum(PREFERENCE_CHANNELS), channelState),
});

/** An event as the admin API shows it; times also in the panel's zone, as webhooks carry them. */
export const eventAnswer = z.looseObject({
  guid: z.string(),
  channel: z.string(),
  name: z.string(),
  params: z.record(z.string(), z.unknown()),
  occurred_at: isoInstant,
  received_at: isoInstant,
});
const eventPage = { events: z.array(eventAnswer), next_cursor: z.string().nullable() };
export const contactEventsAnswer = z.strictObject({ contact: z.string(), ...eventPage });
export const profileEventsAnswer = z.strictObject({ uniqueid: z.string(), ...eventPage });
export const eventRetryAnswer = z.strictObject({ retried_batches: z.number(), more: z.boolean() });

export const listAnswer = z.strictObject({
  id: z.number(),
  name: z.string(),
  description: z.string(),
  count: z.number(),
  created_at: isoInstant,
  updated_at: isoInstant,
});
export const listListAnswer = z.strictObject({ lists: z.array(listAnswer) });
export const listDeletedAnswer = z.strictObject({ deleted: z.boolean() });
export const listEmptiedAnswer = z.strictObject({ removed: z.number() });
export const listMembersAnswer = z.strictObject({
  list: listAnswer,
  primary_key: z.string(),
  members: z.array(z.strictObject({ key: z.string(), attributes, added_at: isoInstant })),
  next_cursor: z.string().nullable(),
});
/** A background job started: follow it at /jobs/{jobid}. */
export const jobStartedAnswer = z.strictObject({ jobid: z.string() });

/** A bulk upload, as bulkstatus and GET /jobs/{job} show it. */
export const importJobAnswer = z.strictObject({
  jobid: z.string(),
  status: jobStatus,
  reason: z.string().nullable(),
  total: z.number(),
  created: z.number(),
  updated: z.number(),
  failed: z.number(),
  listid: z.number().nullable(),
  sources: z.array(z.strictObject({ path: z.string().optional(), name: z.string(), bytes: z.number().nullable() })),
  progress: z.strictObject({ bytes_done: z.number(), bytes_total: z.number().nullable() }),
  error_report: z.string().nullable(),
  notifyemail: z.array(z.string()),
  callback: z
    .object({
      url: z.string(),
      state: z.enum(["none", "pending", "sending", "sent", "failed"]),
      http_status: z.number().nullable(),
      error: z.string().nullable(),
      at: isoInstant.nullable(),
    })
    .nullable(),
  created_at: isoInstant,
  started_at: isoInstant.nullable(),
  finished_at: isoInstant.nullable(),
  updated_at: isoInstant,
});

/** One import of the panel's history: who started it, into which list, how it went, where its error report is. */
export const importHistoryEntryAnswer = z.strictObject({
  jobid: z.string(),
  via: z.enum(["api", "panel", "broadcast"]),
  status: jobStatus,
  reason: z.string().nullable(),
  list: z.strictObject({ id: z.number(), name: z.string().nullable() }).nullable(),
  files: z.array(z.string()),
  mapped: z.boolean(),
  total: z.number(),
  created: z.number(),
  updated: z.number(),
  failed: z.number(),
  /** The admin API's download of the refused rows (the panel's session or the admin token), when there are any. */
  error_report: z.string().nullable(),
  created_at: isoInstant,
  finished_at: isoInstant.nullable(),
});
export const importHistoryAnswer = z.strictObject({ imports: z.array(importHistoryEntryAnswer), next_cursor: z.string().nullable() });

/** A segment export, as GET /jobs/{job} shows it: `download` once completed. */
export const segmentExportAnswer = z.strictObject({
  jobid: z.string(),
  type: z.literal("segment_export"),
  segment: z.string(),
  status: jobStatus,
  reason: z.string().nullable(),
  columns: z.array(z.string()),
  progress: z.strictObject({ rows: z.number(), total: z.number() }),
  download: z.string().nullable(),
  created_at: isoInstant.nullable(),
  started_at: isoInstant.nullable(),
  finished_at: isoInstant.nullable(),
  updated_at: isoInstant.nullable(),
});
export const jobAnswer = z.union([segmentExportAnswer, importJobAnswer]);
