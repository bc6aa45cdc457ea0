-- A shard's tables: every table that holds one panel's data (docs/operations.md: shards), as
-- migrations 0001-0021 left them. The control database (migrations/) keeps panels, the
-- directory (panels.shard), users and their key hashes, operators and their sessions, and the
-- dead-letter record. Applied to every SHARD_n binding; a new shard starts here. IF NOT EXISTS
-- throughout: a deployment from before shards binds SHARD_0 to its existing database, whose
-- tables are these already.

CREATE TABLE IF NOT EXISTS attributes (
  panel_id   TEXT NOT NULL,
  name       TEXT NOT NULL,
  type       TEXT NOT NULL CHECK (type IN ('string', 'integer', 'float', 'date', 'boolean')),
  created_at INTEGER NOT NULL,
  PRIMARY KEY (panel_id, name)
);

CREATE TABLE IF NOT EXISTS contacts (
  id         INTEGER PRIMARY KEY AUTOINCREMENT,
  panel_id   TEXT NOT NULL,
  pk_value   TEXT NOT NULL,
  attrs      TEXT NOT NULL DEFAULT '{}',
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  UNIQUE (panel_id, pk_value)
);

CREATE TABLE IF NOT EXISTS lists (
  id          INTEGER PRIMARY KEY AUTOINCREMENT,
  panel_id    TEXT NOT NULL,
  name        TEXT NOT NULL,
  name_key    TEXT NOT NULL,
  description TEXT NOT NULL DEFAULT '',
  created_at  INTEGER NOT NULL,
  updated_at  INTEGER NOT NULL,
  UNIQUE (panel_id, name_key)
);

CREATE TABLE IF NOT EXISTS list_members (
  list_id    INTEGER NOT NULL REFERENCES lists(id),
  contact_id INTEGER NOT NULL REFERENCES contacts(id),
  panel_id   TEXT NOT NULL,
  added_at   INTEGER NOT NULL,
  PRIMARY KEY (list_id, contact_id)
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS notifications (
  id         TEXT PRIMARY KEY,
  panel_id   TEXT NOT NULL,
  kind       TEXT NOT NULL,
  recipients TEXT NOT NULL,
  subject    TEXT NOT NULL,
  body       TEXT NOT NULL,
  status     TEXT NOT NULL CHECK (status IN ('sending', 'sent', 'failed')),
  error      TEXT,
  -- Set by callers that must send at most once (e.g. "import:<jobid>"); a repeat is skipped.
  dedupe_key TEXT UNIQUE,
  created_at INTEGER NOT NULL
);

CREATE TABLE IF NOT EXISTS import_jobs (
  id              TEXT PRIMARY KEY,
  panel_id        TEXT NOT NULL,
  status          TEXT NOT NULL CHECK (status IN ('queued', 'running', 'completed', 'failed')),
  -- What the engine does next: download the sources, check their headers, import rows,
  -- write the error report, send the email and the callback, nothing.
  phase           TEXT NOT NULL CHECK (phase IN ('fetch', 'header', 'rows', 'report', 'notify', 'done')),
  reason          TEXT,
  -- JSON array of the files imported as one job, in order:
  -- [{"url"?, "key", "name", "owned", "size"?, "data_offset"?, "header_row"?}]
  sources         TEXT NOT NULL,
  -- JSON, set once the headers are checked: {"header": [original cells], "columns": [{"name","type"}]}
  columns         TEXT,
  list_id         INTEGER,
  notify_emails   TEXT NOT NULL DEFAULT '[]',
  callback_url    TEXT,
  callback_state  TEXT NOT NULL DEFAULT 'none' CHECK (callback_state IN ('none', 'pending', 'sending', 'sent', 'failed')),
  callback_status INTEGER,
  callback_error  TEXT,
  callback_at     INTEGER,
  -- Origin of the call that started the job, for the error report's link.
  origin          TEXT NOT NULL DEFAULT '',
  -- Checkpoint, advanced in the same D1 batch as the rows of each chunk. seq is the number of
  -- chunks committed; a chunk commits only when seq still has the value it was read with.
  seq             INTEGER NOT NULL DEFAULT 0,
  source_index    INTEGER NOT NULL DEFAULT 0,
  byte_offset     INTEGER NOT NULL DEFAULT 0,
  row_number      INTEGER NOT NULL DEFAULT 0,
  -- Highest contacts.id before the chunk being committed: ids above it were created by it.
  contact_mark    INTEGER NOT NULL DEFAULT 0,
  total           INTEGER NOT NULL DEFAULT 0,
  created         INTEGER NOT NULL DEFAULT 0,
  updated         INTEGER NOT NULL DEFAULT 0,
  failed          INTEGER NOT NULL DEFAULT 0,
  error_report_key TEXT,
  -- Consecutive failed attempts without progress; past a limit the job fails.
  attempts        INTEGER NOT NULL DEFAULT 0,
  last_error      TEXT,
  created_at      INTEGER NOT NULL,
  started_at      INTEGER,
  finished_at     INTEGER,
  updated_at      INTEGER NOT NULL
, lease TEXT, leased_until INTEGER);

CREATE TABLE IF NOT EXISTS import_errors (
  panel_id     TEXT NOT NULL,
  job_id       TEXT NOT NULL REFERENCES import_jobs(id),
  source_index INTEGER NOT NULL,
  row_number   INTEGER NOT NULL,
  line         TEXT NOT NULL,
  PRIMARY KEY (job_id, source_index, row_number)
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS anon_profiles (
  panel_id   TEXT NOT NULL,
  uniqueid   TEXT NOT NULL,
  contact_id INTEGER NOT NULL REFERENCES contacts(id),
  linked_at  INTEGER NOT NULL,
  PRIMARY KEY (panel_id, uniqueid)
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS webhooks (
  id                 TEXT PRIMARY KEY,
  panel_id           TEXT NOT NULL,
  label              TEXT NOT NULL,
  url                TEXT NOT NULL,
  username           TEXT,
  -- AES-GCM under SECRETS_KEY (lib/crypto.ts); never returned.
  password_enc       TEXT,
  signing_secret_enc TEXT,
  version            TEXT NOT NULL DEFAULT '2.0' CHECK (version IN ('2.0', '1.0')),
  -- JSON array of addresses; NULL when no failure alert is set.
  alert_emails       TEXT,
  alert_frequency    TEXT CHECK (alert_frequency IN ('immediate', 'hourly', 'daily')),
  state              TEXT NOT NULL DEFAULT 'configured' CHECK (state IN ('configured', 'operational', 'disabled')),
  disabled_reason    TEXT,
  disabled_at        INTEGER,
  created_at         INTEGER NOT NULL,
  updated_at         INTEGER NOT NULL
);

CREATE TABLE IF NOT EXISTS campaigns (
  id             TEXT PRIMARY KEY,
  panel_id       TEXT NOT NULL,
  list_id        INTEGER NOT NULL REFERENCES lists(id),
  name           TEXT NOT NULL,
  subject        TEXT NOT NULL,
  sender_name    TEXT NOT NULL,
  sender_email   TEXT NOT NULL,
  tags           TEXT NOT NULL DEFAULT '[]',
  -- schedule_date as the caller wrote it (panel time zone) and the instant it names.
  schedule_local TEXT NOT NULL,
  send_at        INTEGER NOT NULL,
  body_key       TEXT NOT NULL,
  -- The contact import feeding the list; publishing waits for it to complete.
  import_job_id  TEXT,
  status         TEXT NOT NULL CHECK (status IN ('scheduled', 'sending', 'sent', 'failed')),
  status_reason  TEXT,
  recipients     INTEGER NOT NULL DEFAULT 0,
  request_id     TEXT NOT NULL,
  created_at     INTEGER NOT NULL,
  published_at   INTEGER,
  finished_at    INTEGER,
  updated_at     INTEGER NOT NULL
);

CREATE TABLE IF NOT EXISTS campaign_messages (
  campaign_id     TEXT NOT NULL,
  contact_id      INTEGER NOT NULL,
  panel_id        TEXT NOT NULL,
  batch           INTEGER NOT NULL,
  status          TEXT NOT NULL DEFAULT 'queued' CHECK (status IN ('queued', 'sending', 'sent', 'failed', 'skipped')),
  claim           TEXT,
  claimed_at      INTEGER,
  address         TEXT,
  provider_msg_id TEXT,
  error           TEXT,
  sent_at         INTEGER,
  opens           INTEGER NOT NULL DEFAULT 0,
  first_open_at   INTEGER,
  clicks          INTEGER NOT NULL DEFAULT 0,
  first_click_at  INTEGER,
  bounced_at      INTEGER,
  unsubscribed_at INTEGER, attempted_at INTEGER,
  -- Batch first: claiming a batch reads one narrow range of the table, not the whole campaign.
  PRIMARY KEY (campaign_id, batch, contact_id),
  UNIQUE (campaign_id, contact_id)
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS email_suppressions (
  panel_id    TEXT NOT NULL,
  address     TEXT NOT NULL,
  reason      TEXT NOT NULL CHECK (reason IN ('unsubscribe', 'hard_bounce')),
  campaign_id TEXT,
  created_at  INTEGER NOT NULL,
  PRIMARY KEY (panel_id, address)
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS outbox (
  id          TEXT PRIMARY KEY,
  panel_id    TEXT NOT NULL,
  channel     TEXT NOT NULL,
  recipient   TEXT NOT NULL,
  sender      TEXT NOT NULL,
  subject     TEXT NOT NULL,
  campaign_id TEXT,
  r2_key      TEXT NOT NULL,
  size        INTEGER NOT NULL,
  created_at  INTEGER NOT NULL
);

CREATE TABLE IF NOT EXISTS journeys (
  id           TEXT PRIMARY KEY,
  panel_id     TEXT NOT NULL,
  name         TEXT NOT NULL,
  -- The definition as validated (JSON: trigger, filter, steps).
  definition   TEXT NOT NULL,
  trigger_type TEXT NOT NULL CHECK (trigger_type IN ('activity', 'list', 'segment')),
  -- activity name (lower case) or list id, for trigger lookups.
  trigger_key  TEXT,
  status       TEXT NOT NULL DEFAULT 'draft' CHECK (status IN ('draft', 'running', 'paused', 'stopped')),
  -- Segment journeys: the last contact id the entry scan has looked at; NULL when no scan is due.
  scan_cursor  INTEGER,
  created_at   INTEGER NOT NULL,
  updated_at   INTEGER NOT NULL
, rescan_due INTEGER NOT NULL DEFAULT 0);

CREATE TABLE IF NOT EXISTS journey_instances (
  id          TEXT PRIMARY KEY,
  panel_id    TEXT NOT NULL,
  journey_id  TEXT NOT NULL REFERENCES journeys(id),
  contact_id  INTEGER NOT NULL,
  -- What made the contact enter (`event:<id>`, `list:<list>:<contact>:<list entry id>`, `segment:<contact>`):
  -- the same trigger seen twice (a redelivered event) enters once.
  entry_key   TEXT NOT NULL,
  status      TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'completed', 'exited')),
  entered_at  INTEGER NOT NULL,
  ended_at    INTEGER,
  UNIQUE (journey_id, entry_key)
);

CREATE TABLE IF NOT EXISTS journey_points (
  id           INTEGER PRIMARY KEY AUTOINCREMENT,
  instance_id  TEXT NOT NULL REFERENCES journey_instances(id),
  step_id      TEXT NOT NULL,
  panel_id     TEXT NOT NULL,
  journey_id   TEXT NOT NULL,
  contact_id   INTEGER NOT NULL,
  kind         TEXT NOT NULL CHECK (kind IN ('start', 'wait', 'delay')),
  -- Waits: what ends them. Message events by msgid and channel; activities by name and contact.
  channel      TEXT,
  msgid        TEXT,
  events       TEXT,
  activity_key TEXT,
  -- The event the branch carries (the trigger or the last awaited event), for webhooks.
  event_id     INTEGER,
  due_at       INTEGER,
  outcome      TEXT CHECK (outcome IN ('start', 'event', 'timeout', 'elapsed', 'cancelled')),
  matched_event_id INTEGER,
  created_at   INTEGER NOT NULL,
  resolved_at  INTEGER,
  continued_at INTEGER, leased_until INTEGER NOT NULL DEFAULT 0,
  UNIQUE (instance_id, step_id)
);

CREATE TABLE IF NOT EXISTS journey_step_runs (
  instance_id TEXT NOT NULL,
  step_id     TEXT NOT NULL,
  journey_id  TEXT NOT NULL,
  result      TEXT,
  at          INTEGER NOT NULL,
  PRIMARY KEY (instance_id, step_id)
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS journey_messages (
  msgid       TEXT PRIMARY KEY,
  panel_id    TEXT NOT NULL,
  journey_id  TEXT NOT NULL,
  instance_id TEXT NOT NULL,
  step_id     TEXT NOT NULL,
  channel     TEXT NOT NULL CHECK (channel IN ('email', 'sms', 'apn', 'bpn')),
  contact_id  INTEGER NOT NULL,
  recipient   TEXT,
  -- JSON: subject/html/sender for email, text/title/url for the others.
  content     TEXT NOT NULL,
  -- sms/apn/bpn: recorded (the outbox channel). email: sent through the email provider,
  -- skipped (no valid or a suppressed address) or failed; 'sending' while claimed.
  status      TEXT NOT NULL DEFAULT 'recorded' CHECK (status IN ('recorded', 'sending', 'sent', 'skipped', 'failed')),
  error       TEXT,
  created_at  INTEGER NOT NULL
, provider_msg_id TEXT, claim TEXT, claimed_at INTEGER, attempted_at INTEGER);

CREATE TABLE IF NOT EXISTS event_batches (
  id          INTEGER PRIMARY KEY AUTOINCREMENT,
  panel_id    TEXT NOT NULL,
  -- JSON array of the events as recorded; NULL once they are rows of `events`.
  events      TEXT,
  received_at INTEGER NOT NULL,
  -- The rows of `events` the batch became: ids first_id..last_id (an empty range when every
  -- event was a duplicate). NULL until then. Rows of one batch have consecutive ids.
  first_id    INTEGER,
  last_id     INTEGER,
  -- JSON object: step name -> true (every event of the batch passed it) or [event ids passed].
  steps_done  TEXT NOT NULL DEFAULT '{}',
  last_error  TEXT,
  state       TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'failed')),
  -- Last enqueue or consumer attempt; the cron re-drives pending batches quiet for too long.
  nudged_at   INTEGER NOT NULL,
  attempts    INTEGER NOT NULL DEFAULT 0,
  redrives    INTEGER NOT NULL DEFAULT 0
, lease TEXT, leased_until INTEGER NOT NULL DEFAULT 0);

CREATE TABLE IF NOT EXISTS events (
  id          INTEGER PRIMARY KEY AUTOINCREMENT,
  panel_id    TEXT NOT NULL,
  -- The event_batches row it was recorded in (NULL for events done with before batches existed).
  batch_id    INTEGER,
  guid        TEXT NOT NULL,
  channel     TEXT NOT NULL CHECK (channel IN ('custom_activity', 'email', 'sms', 'apn', 'bpn')),
  name        TEXT NOT NULL,
  activity_id INTEGER,
  contact_id  INTEGER,
  uniqueid    TEXT,
  identity    TEXT,
  source      TEXT,
  params      TEXT NOT NULL DEFAULT '{}',
  occurred_at INTEGER NOT NULL,
  received_at INTEGER NOT NULL,
  msgid       TEXT,
  campaign_id TEXT,
  journey_id  TEXT
, asset_id TEXT);

CREATE TABLE IF NOT EXISTS event_guids (
  panel_id TEXT NOT NULL,
  guid     TEXT NOT NULL,
  batch_id INTEGER NOT NULL,
  PRIMARY KEY (panel_id, guid)
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS journey_list_entries (
  id           INTEGER PRIMARY KEY AUTOINCREMENT,
  panel_id     TEXT NOT NULL,
  journey_id   TEXT NOT NULL,
  list_id      INTEGER NOT NULL,
  contact_id   INTEGER NOT NULL,
  -- A consumer holds the entry until then; an entry whose holder died is taken again after it.
  leased_until INTEGER NOT NULL DEFAULT 0
);

CREATE TABLE IF NOT EXISTS activities (
  panel_id   TEXT NOT NULL,
  id         INTEGER NOT NULL,
  name       TEXT NOT NULL,
  name_key   TEXT NOT NULL,
  -- JSON object: parameter name -> "string" | "integer" | "float"
  params     TEXT NOT NULL DEFAULT '{}',
  created_at INTEGER NOT NULL,
  PRIMARY KEY (panel_id, id),
  UNIQUE (panel_id, name_key)
);

CREATE INDEX IF NOT EXISTS list_members_by_contact ON list_members (contact_id);

CREATE INDEX IF NOT EXISTS notifications_by_panel ON notifications (panel_id, created_at);

CREATE INDEX IF NOT EXISTS import_jobs_by_panel ON import_jobs (panel_id, created_at);

CREATE INDEX IF NOT EXISTS import_jobs_unfinished ON import_jobs (updated_at) WHERE phase <> 'done';

CREATE INDEX IF NOT EXISTS anon_profiles_by_contact ON anon_profiles (contact_id);

CREATE INDEX IF NOT EXISTS webhooks_by_panel ON webhooks (panel_id, created_at);

CREATE INDEX IF NOT EXISTS campaigns_due ON campaigns (status, send_at);

CREATE INDEX IF NOT EXISTS campaigns_by_panel ON campaigns (panel_id, created_at);

CREATE INDEX IF NOT EXISTS campaign_messages_by_status ON campaign_messages (campaign_id, status);

CREATE INDEX IF NOT EXISTS campaign_messages_by_provider_id ON campaign_messages (provider_msg_id) WHERE provider_msg_id IS NOT NULL;

CREATE INDEX IF NOT EXISTS outbox_by_panel ON outbox (panel_id, channel, created_at);

CREATE INDEX IF NOT EXISTS journeys_by_panel ON journeys (panel_id, created_at);

CREATE INDEX IF NOT EXISTS journeys_running ON journeys (panel_id, status, trigger_type, trigger_key);

CREATE UNIQUE INDEX IF NOT EXISTS journey_instances_one_active ON journey_instances (journey_id, contact_id) WHERE status = 'active';

CREATE INDEX IF NOT EXISTS journey_instances_by_journey ON journey_instances (journey_id, status);

CREATE INDEX IF NOT EXISTS journey_points_due ON journey_points (due_at) WHERE outcome IS NULL AND due_at IS NOT NULL;

CREATE INDEX IF NOT EXISTS journey_points_by_msgid ON journey_points (panel_id, msgid) WHERE outcome IS NULL AND msgid IS NOT NULL;

CREATE INDEX IF NOT EXISTS journey_points_by_activity ON journey_points (panel_id, contact_id, activity_key) WHERE outcome IS NULL AND activity_key IS NOT NULL;

CREATE INDEX IF NOT EXISTS journey_step_runs_by_journey ON journey_step_runs (journey_id, step_id);

CREATE INDEX IF NOT EXISTS journey_messages_by_panel ON journey_messages (panel_id, channel, created_at);

CREATE INDEX IF NOT EXISTS event_batches_pending ON event_batches (nudged_at) WHERE state = 'pending';

CREATE INDEX IF NOT EXISTS events_by_contact ON events (panel_id, contact_id, occurred_at, id);

CREATE INDEX IF NOT EXISTS events_by_uniqueid ON events (panel_id, uniqueid, occurred_at, id) WHERE uniqueid IS NOT NULL;

CREATE TRIGGER IF NOT EXISTS anon_profiles_join_history AFTER INSERT ON anon_profiles
BEGIN
  UPDATE events SET contact_id = NEW.contact_id
  WHERE panel_id = NEW.panel_id AND uniqueid = NEW.uniqueid AND contact_id IS NULL;
END;

CREATE INDEX IF NOT EXISTS journey_list_entries_by_panel ON journey_list_entries (panel_id, id);

CREATE INDEX IF NOT EXISTS journey_list_entries_by_contact ON journey_list_entries (panel_id, contact_id);

CREATE TRIGGER IF NOT EXISTS list_members_enter_journeys AFTER INSERT ON list_members
BEGIN
  INSERT INTO journey_list_entries (panel_id, journey_id, list_id, contact_id)
  SELECT NEW.panel_id, j.id, NEW.list_id, NEW.contact_id FROM journeys j
  WHERE j.panel_id = NEW.panel_id AND j.status = 'running' AND j.trigger_type = 'list' AND j.trigger_key = CAST(NEW.list_id AS TEXT);
END;

CREATE TRIGGER IF NOT EXISTS list_members_leave_journeys AFTER DELETE ON list_members
BEGIN
  DELETE FROM journey_list_entries WHERE panel_id = OLD.panel_id AND contact_id = OLD.contact_id AND list_id = OLD.list_id;
END;

CREATE INDEX IF NOT EXISTS journey_messages_by_provider_id ON journey_messages (provider_msg_id) WHERE provider_msg_id IS NOT NULL;

CREATE INDEX IF NOT EXISTS journey_points_to_continue ON journey_points (journey_id, leased_until) WHERE outcome IS NOT NULL AND continued_at IS NULL;
