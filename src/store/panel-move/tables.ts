// The tables a panel's move copies (decision 0031): every table of migrations/shard but the
// move's own (panels_in_transit, panel_move_changes), in an order where a table comes after the
// tables its foreign keys name, so a page copied in order never names a row not yet there.
// test/store/panel-move-tables.test.ts compares this list with the shard's schema.

/** Where a row names its parent (a declared foreign key): the child's column, the parent table. */
export interface ParentLink {
  column: string;
  table: string;
  /** The parent's key is (panel_id, id), the child's (panel_id, column): lists, numbered per panel (migration 0058). */
  inPanel?: true;
}

export interface MovedTable {
  name: string;
  /** The primary key's columns, in order: the copy's cursor and a change's key. */
  key: readonly string[];
  /**
   * How a row names its panel, as SQL over the row's columns (`{row}` stands for the row's
   * alias): a panel_id column, or for the two tables without one, their parent's.
   */
  scope: string;
  /** Declared foreign keys: an upsert waits for its parent; a parent's delete takes its children along. */
  parents?: readonly ParentLink[];
  /** `INTEGER PRIMARY KEY AUTOINCREMENT`: ids keep their shard's range (decision 0030). */
  autoincrement?: true;
}

const byPanel = "{row}.panel_id = ?1";

function table(name: string, key: readonly string[], extra: Partial<Omit<MovedTable, "name" | "key">> = {}): MovedTable {
  return { name, key, scope: byPanel, ...extra };
}

export const MOVED_TABLES: readonly MovedTable[] = [
  table("attributes", ["panel_id", "name"]),
  table("activities", ["panel_id", "id"]),
  table("lists", ["panel_id", "id"]),
  table("contacts", ["id"], { autoincrement: true }),
  table("list_members", ["list_id", "contact_id"], { parents: [{ column: "list_id", table: "lists", inPanel: true }, { column: "contact_id", table: "contacts" }] }),
  table("anon_profiles", ["panel_id", "uniqueid"], { parents: [{ column: "contact_id", table: "contacts" }] }),
  table("uniqueid_contacts", ["panel_id", "uniqueid", "contact_id"]),
  table("import_jobs", ["id"]),
  table("import_errors", ["job_id", "source_index", "row_number"], { parents: [{ column: "job_id", table: "import_jobs" }] }),
  table("campaigns", ["id"], { parents: [{ column: "list_id", table: "lists", inPanel: true }] }),
  table("campaign_messages", ["campaign_id", "batch", "contact_id"]),
  table("campaign_link_clicks", ["campaign_id", "url"]),
  table("campaign_stats", ["campaign_id", "hour"]),
  table("campaign_ab_tallies", ["campaign_id", "ab_group", "variant"]),
  table("campaign_shards", ["campaign_id", "shard"]),
  table("campaign_parts", ["campaign_id"]),
  table("journeys", ["id"]),
  table("journey_versions", ["journey_id", "version"]),
  table("journey_instances", ["id"], { parents: [{ column: "journey_id", table: "journeys" }] }),
  table("journey_points", ["id"], { autoincrement: true, parents: [{ column: "instance_id", table: "journey_instances" }] }),
  table("journey_step_runs", ["instance_id", "step_id"], { scope: "EXISTS (SELECT 1 FROM journeys p WHERE p.id = {row}.journey_id AND p.panel_id = ?1)" }),
  table("journey_messages", ["msgid"]),
  table("journey_message_marks", ["msgid", "name"], { scope: "EXISTS (SELECT 1 FROM journey_messages p WHERE p.msgid = {row}.msgid AND p.panel_id = ?1)" }),
  table("journey_list_entries", ["id"], { autoincrement: true }),
  table("journey_stats", ["journey_id", "hour"]),
  table("journey_step_stats", ["journey_id", "step_id", "hour"]),
  table("journey_step_waiting", ["journey_id", "step_id"]),
  table("journey_channel_stats", ["journey_id", "channel", "hour"]),
  table("journey_pruned", ["journey_id", "version"]),
  table("journey_pruned_steps", ["journey_id", "step_id"]),
  table("journey_entry_keys", ["journey_id", "entry_key"]),
  table("journey_split_entries", ["instance_id", "step_id"]),
  table("journey_conversions", ["instance_id"]),
  table("journey_simulations", ["panel_id", "id"]),
  table("event_batches", ["id"], { autoincrement: true }),
  table("events", ["id"], { autoincrement: true }),
  table("event_guids", ["panel_id", "guid"]),
  table("event_archive_parts", ["panel_id", "day", "part"]),
  table("event_archive_owner_blocks", ["panel_id", "owner", "block"]),
  table("segments", ["id"]),
  table("segment_members", ["segment_id", "contact_id"]),
  table("segment_changes", ["id"], { autoincrement: true }),
  table("segment_exports", ["id"]),
  table("email_suppressions", ["panel_id", "address"]),
  table("sender_domains", ["panel_id", "domain"]),
  table("tracking_domains", ["panel_id"]),
  table("webhooks", ["id"]),
  table("webhook_replays", ["panel_id", "id"]),
  table("notifications", ["id"]),
  table("outbox", ["id"]),
  table("panel_days", ["panel_id", "kind", "day", "name"]),
  table("panel_counts", ["panel_id", "subject"]),
  table("panel_received", ["panel_id", "slot"]),
  table("panel_sent", ["panel_id", "slot"]),
  table("push_settings", ["panel_id"]),
  table("push_subscriptions", ["panel_id", "kind", "address"]),
  table("push_counts", ["panel_id", "kind"]),
  table("push_optouts", ["panel_id", "contact_id"]),
  table("sms_settings", ["panel_id"]),
  table("sms_templates", ["panel_id", "id"]),
  table("email_templates", ["panel_id", "id"]),
  table("signup_forms", ["panel_id", "id"]),
  table("form_settings", ["panel_id"]),
  table("form_signups", ["panel_id", "form_id", "contact_id"]),
  // A signup form's counts (decision 0049): a whole panel's move carries its keys' counts; the
  // per-IP rows (panel_id '') are no panel's and stay, pruned once their window ends.
  table("form_attempts", ["panel_id", "subject"]),
  table("consent_records", ["panel_id", "id"]),
  table("topics", ["panel_id", "id"]),
  table("topic_optouts", ["panel_id", "contact_id", "topic_id"]),
  table("sms_links", ["code"]),
  table("sms_suppressions", ["panel_id", "phone"]),
  table("contact_erasures", ["id"]),
  table("erased_message_copies", ["panel_id", "contact_id", "kind", "message"]),
  table("audit_log", ["id"], { autoincrement: true }),
  table("contact_sends", ["panel_id", "contact_id", "channel", "at", "send_key"]),
];

/** The move's own tables on each shard: never copied. */
export const MOVE_MACHINERY_TABLES = ["panels_in_transit", "panel_move_changes"] as const;

/** Tables whose rows never outlive the batch that writes them (a part's id mark): nothing to copy. */
export const BATCH_SCRATCH_TABLES = ["import_part_marks"] as const;

const byName = new Map(MOVED_TABLES.map((t) => [t.name, t]));

export function movedTable(name: string): MovedTable | undefined {
  return byName.get(name);
}

/** The tables whose rows name `parent` through a foreign key, with the naming column. */
export function childrenOf(parent: string): Array<{ table: MovedTable; column: string }> {
  return MOVED_TABLES.flatMap((t) => (t.parents ?? []).filter((p) => p.table === parent).map((p) => ({ table: t, column: p.column })));
}

/**
 * The contact-keyed tables (decision 0038 step 1): each row carries its contact's bucket. A
 * partition move (step 5, decision 0047) copies only these and the ones keyed by a contact,
 * an instance or a message without a bucket of their own (CONTACT_TABLES, PARENT_SCOPED_TABLES);
 * the panel's configuration stays on its home and is mirrored (decision 0041). Aggregates (stats,
 * the segments' history, the days) stay on the shard that counted them: reads sum the shards.
 * A signup form's counts (form_attempts, keyed by a hash of the key) are not carried: a moved
 * key's window starts over on its new shard (windows are minutes long; decision 0049).
 */
export const BUCKETED_TABLES = [
  "contacts",
  "list_members",
  "anon_profiles",
  "uniqueid_contacts",
  "campaign_messages",
  "journey_instances",
  "journey_points",
  "journey_messages",
  "journey_split_entries",
  "journey_conversions",
  "events",
  "event_guids",
  "segment_members",
  "push_optouts",
  // A device takes the bucket of the key its shard was chosen by (shard migration 0110).
  "push_subscriptions",
] as const;

/**
 * Rows of a contact with no bucket column: they take their contact's (a contact is never
 * re-keyed). A journey's list entry waiting for its consumer enters the contact on the shard
 * holding it.
 */
export const CONTACT_TABLES = ["consent_records", "topic_optouts", "form_signups", "contact_sends", "journey_list_entries"] as const;

/**
 * Rows of a journey instance, message or contact with neither a bucket nor a contact column, and
 * how each finds the bucket (`{between}` the range): a step run and a message's marks take their
 * parent's, which is copied before them and deleted after them (a step run left behind would let
 * the moved instance run its step again); a segment entry key kept past its pruned instance
 * (`segment:<contact id>`) takes its contact's, so the contact never enters that journey twice.
 */
export const PARENT_SCOPED_TABLES = {
  journey_step_runs: "EXISTS (SELECT 1 FROM journey_instances pi WHERE pi.id = {row}.instance_id AND pi.panel_id = ?1 AND pi.bucket {between})",
  journey_message_marks: "EXISTS (SELECT 1 FROM journey_messages pm WHERE pm.msgid = {row}.msgid AND pm.panel_id = ?1 AND pm.bucket {between})",
  journey_entry_keys:
    "{row}.panel_id = ?1 AND {row}.entry_key LIKE 'segment:%' AND EXISTS (SELECT 1 FROM contacts pc WHERE pc.id = CAST(substr({row}.entry_key, 9) AS INTEGER) AND pc.bucket {between})",
  // An SMS's short links go with their message: a click after the split finds the message beside
  // the link (services/journeys/sms.ts followSmsLink), and erasure and housekeeping on the contact's shard reach them.
  sms_links: "{row}.panel_id = ?1 AND EXISTS (SELECT 1 FROM journey_messages pm WHERE pm.msgid = {row}.msgid AND pm.panel_id = ?1 AND pm.bucket {between})",
} as const;

/** A bucket range of a panel: buckets first..last, inclusive. */
export interface BucketRange {
  first: number;
  last: number;
}

/**
 * The tables a move of the panel's buckets `range` copies, in MOVED_TABLES' order (parents
 * first), each scoped to the range: the capture and fence triggers' WHEN, every page, count and
 * delete read the scope, so all of them are narrowed to the moving buckets.
 */
export function partitionTables(range: BucketRange): MovedTable[] {
  if (!Number.isInteger(range.first) || !Number.isInteger(range.last)) throw new Error("a bucket range is whole numbers");
  const between = `BETWEEN ${range.first} AND ${range.last}`;
  const bucketed = new Set<string>(BUCKETED_TABLES);
  const byContact = new Set<string>(CONTACT_TABLES);
  const byParent: Readonly<Record<string, string>> = PARENT_SCOPED_TABLES;
  return MOVED_TABLES.flatMap((t) => {
    if (bucketed.has(t.name)) return [{ ...t, scope: `${t.scope} AND {row}.bucket ${between}` }];
    if (byContact.has(t.name)) return [{ ...t, scope: `${t.scope} AND EXISTS (SELECT 1 FROM contacts pc WHERE pc.id = {row}.contact_id AND pc.bucket ${between})` }];
    if (byParent[t.name]) return [{ ...t, scope: byParent[t.name]!.replaceAll("{between}", between) }];
    return [];
  });
}

/** The table's scope condition over alias `alias`; `?1` is the panel id. */
export function scopeOf(t: MovedTable, alias: string): string {
  return t.scope.replaceAll("{row}", alias);
}
