-- Activity definitions, the one event store every channel writes to, anonymous profiles,
-- and the pipeline's per-(event, step) progress. Times are UTC epoch milliseconds.

-- An activity an operator defines in the panel. `id` is the `activityid` clients send
-- (spec 2.4) and the integer `activity_id` of webhook events (spec 2.8). A definition is
-- never edited once created, so ingest may cache it (README: activity decisions).
CREATE TABLE activities (
  id         INTEGER PRIMARY KEY AUTOINCREMENT,
  panel_id   TEXT NOT NULL REFERENCES panels(id),
  name       TEXT NOT NULL,
  name_key   TEXT NOT NULL,
  -- JSON object: parameter name -> "string" | "integer" | "float"
  params     TEXT NOT NULL DEFAULT '{}',
  created_at INTEGER NOT NULL,
  UNIQUE (panel_id, name_key)
);

-- Every event of the service: custom activities, email opens/clicks/bounces/unsubscribes,
-- sms/apn/bpn delivered/click. `guid` is the event's unique id within the panel (the
-- client's guid or Idempotency-Key, else generated), so a retried post stores nothing twice.
-- `contact_id` is NULL while the event belongs to an anonymous `uniqueid` only.
CREATE TABLE events (
  id          INTEGER PRIMARY KEY AUTOINCREMENT,
  panel_id    TEXT NOT NULL REFERENCES panels(id),
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
  journey_id  TEXT,
  -- Pipeline progress: pending until every registered step has succeeded.
  state       TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'done', 'failed')),
  -- Last enqueue or consumer attempt; the cron re-drives pending events quiet for too long.
  nudged_at   INTEGER NOT NULL,
  attempts    INTEGER NOT NULL DEFAULT 0,
  redrives    INTEGER NOT NULL DEFAULT 0,
  UNIQUE (panel_id, guid)
);

CREATE INDEX events_by_contact ON events (panel_id, contact_id, occurred_at, id);
CREATE INDEX events_by_uniqueid ON events (panel_id, uniqueid, occurred_at, id) WHERE uniqueid IS NOT NULL;
CREATE INDEX events_pending ON events (nudged_at) WHERE state = 'pending';

-- An anonymous visitor (`uniqueid`) once an event named it together with a contact: its
-- earlier events joined that contact, and its later anonymous events attach to it.
CREATE TABLE anon_profiles (
  panel_id   TEXT NOT NULL REFERENCES panels(id),
  uniqueid   TEXT NOT NULL,
  contact_id INTEGER NOT NULL REFERENCES contacts(id),
  linked_at  INTEGER NOT NULL,
  PRIMARY KEY (panel_id, uniqueid)
) WITHOUT ROWID;

-- Foreign-key checks on contacts look profiles up by contact.
CREATE INDEX anon_profiles_by_contact ON anon_profiles (contact_id);

-- When a uniqueid first gets its contact, its anonymous history joins that contact. A trigger,
-- not a statement of every post, because it has work to do only on the first link; later
-- anonymous events find the link when they are inserted. A uniqueid later seen with another
-- identity is re-linked for what follows; what was already attributed stays.
CREATE TRIGGER anon_profiles_join_history AFTER INSERT ON anon_profiles
BEGIN
  UPDATE events SET contact_id = NEW.contact_id
  WHERE panel_id = NEW.panel_id AND uniqueid = NEW.uniqueid AND contact_id IS NULL;
END;

-- Which pipeline steps have run for an event; a retry re-runs only the steps not done.
CREATE TABLE event_steps (
  event_id   INTEGER NOT NULL REFERENCES events(id),
  step       TEXT NOT NULL,
  panel_id   TEXT NOT NULL,
  done_at    INTEGER,
  attempts   INTEGER NOT NULL DEFAULT 0,
  last_error TEXT,
  PRIMARY KEY (event_id, step)
) WITHOUT ROWID;
