-- The event pipeline keeps its progress per recorded batch instead of per event.
--
-- Recording a call's events is now one row (event_batches.events, a JSON array) plus a guid
-- claim for each event whose guid the caller chose; the pipeline's first stage turns that row
-- into rows of `events`. A 1,000-event post used to write 1,000 indexed event rows and their
-- contacts in the request; the request now writes one row (bench:activity), and the pipeline
-- writes no row per event and step (event_steps is gone): a batch's progress is one JSON value.

PRAGMA defer_foreign_keys = on;

DROP TRIGGER anon_profiles_join_history;

-- The events one call recorded, and the pipeline's progress over them. Deleted once every
-- event passed every step; what remains is pending work or work that failed for good.
CREATE TABLE event_batches (
  id          INTEGER PRIMARY KEY AUTOINCREMENT,
  panel_id    TEXT NOT NULL REFERENCES panels(id),
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
);

CREATE INDEX event_batches_pending ON event_batches (nudged_at) WHERE state = 'pending';

-- Events the old pipeline had not finished become batches of one (keeping their id, the
-- steps they passed, attempts and state), so the re-drive takes them up within a minute.
INSERT INTO event_batches (id, panel_id, events, received_at, first_id, last_id, steps_done, state, nudged_at, attempts, redrives)
SELECT e.id, e.panel_id, NULL, e.received_at, e.id, e.id,
  (SELECT json_group_object(s.step, json('true')) FROM event_steps s WHERE s.event_id = e.id AND s.done_at IS NOT NULL),
  e.state, 0, e.attempts, e.redrives
FROM events e WHERE e.state IN ('pending', 'failed');

DROP TABLE event_steps;

-- `events` loses its per-event pipeline columns and its unique guid index: guids are claimed
-- when recorded (event_guids), before an event becomes a row.
CREATE TABLE events_new (
  id          INTEGER PRIMARY KEY AUTOINCREMENT,
  panel_id    TEXT NOT NULL REFERENCES panels(id),
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
);

INSERT INTO events_new (id, panel_id, batch_id, guid, channel, name, activity_id, contact_id, uniqueid, identity, source, params,
  occurred_at, received_at, msgid, campaign_id, journey_id)
SELECT id, panel_id, CASE WHEN state IN ('pending', 'failed') THEN id END, guid, channel, name, activity_id, contact_id, uniqueid,
  identity, source, params, occurred_at, received_at, msgid, campaign_id, journey_id
FROM events;

DROP TABLE events;
ALTER TABLE events_new RENAME TO events;

CREATE INDEX events_by_contact ON events (panel_id, contact_id, occurred_at, id);
CREATE INDEX events_by_uniqueid ON events (panel_id, uniqueid, occurred_at, id) WHERE uniqueid IS NOT NULL;

CREATE TRIGGER anon_profiles_join_history AFTER INSERT ON anon_profiles
BEGIN
  UPDATE events SET contact_id = NEW.contact_id
  WHERE panel_id = NEW.panel_id AND uniqueid = NEW.uniqueid AND contact_id IS NULL;
END;

-- Guids chosen by callers (an event's guid, a request's Idempotency-Key), claimed by the batch
-- that recorded them first: a retried post stores nothing twice. Generated guids need no claim.
CREATE TABLE event_guids (
  panel_id TEXT NOT NULL,
  guid     TEXT NOT NULL,
  batch_id INTEGER NOT NULL,
  PRIMARY KEY (panel_id, guid)
) WITHOUT ROWID;

-- Guids of events stored before this migration stay taken (batch 0 names no batch).
INSERT INTO event_guids (panel_id, guid, batch_id) SELECT panel_id, guid, 0 FROM events WHERE true ON CONFLICT DO NOTHING;
