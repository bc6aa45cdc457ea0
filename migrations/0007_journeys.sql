-- Journeys (CONTRACT 5): definitions, one instance per contact's pass through a journey,
-- the continuation points of each instance (its start, waits and delays, which double as
-- the timers the cron fires), the record of each step acted, and the messages journeys send
-- (sms, apn and bpn on their outbox channels; email through the email provider).
-- Times are UTC epoch milliseconds.

CREATE TABLE journeys (
  id           TEXT PRIMARY KEY,
  panel_id     TEXT NOT NULL REFERENCES panels(id),
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
);

CREATE INDEX journeys_by_panel ON journeys (panel_id, created_at);
CREATE INDEX journeys_running ON journeys (panel_id, status, trigger_type, trigger_key);

CREATE TABLE journey_instances (
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

-- A contact is in a journey at most once at a time.
CREATE UNIQUE INDEX journey_instances_one_active ON journey_instances (journey_id, contact_id) WHERE status = 'active';
CREATE INDEX journey_instances_by_journey ON journey_instances (journey_id, status);

-- Where an instance goes on from: its start (step_id ''), a wait_for_event or a delay.
-- `outcome` is NULL while pending; setting it (once, by a conditional UPDATE) is the claim
-- that decides between an event and a timeout. `continued_at` is set once the steps after it
-- have run; a resolved point not continued (a crash, a paused journey) is taken up again by
-- the cron. Every step after it is idempotent, so continuing twice acts once.
CREATE TABLE journey_points (
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
  continued_at INTEGER,
  UNIQUE (instance_id, step_id)
);

CREATE INDEX journey_points_due ON journey_points (due_at) WHERE outcome IS NULL AND due_at IS NOT NULL;
CREATE INDEX journey_points_by_msgid ON journey_points (panel_id, msgid) WHERE outcome IS NULL AND msgid IS NOT NULL;
CREATE INDEX journey_points_by_activity ON journey_points (panel_id, contact_id, activity_key) WHERE outcome IS NULL AND activity_key IS NOT NULL;
CREATE INDEX journey_points_to_continue ON journey_points (resolved_at) WHERE outcome IS NOT NULL AND continued_at IS NULL;

-- Each step acted, once per instance: the key that keeps a retried step from acting twice.
CREATE TABLE journey_step_runs (
  instance_id TEXT NOT NULL,
  step_id     TEXT NOT NULL,
  journey_id  TEXT NOT NULL,
  result      TEXT,
  at          INTEGER NOT NULL,
  PRIMARY KEY (instance_id, step_id)
) WITHOUT ROWID;

CREATE INDEX journey_step_runs_by_journey ON journey_step_runs (journey_id, step_id);

-- Messages journeys send. msgid is `<instance>.<step>`, so a step run twice records one message.
CREATE TABLE journey_messages (
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
);

CREATE INDEX journey_messages_by_panel ON journey_messages (panel_id, channel, created_at);
