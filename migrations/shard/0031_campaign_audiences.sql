-- Migration 0031 on every shard (the same name: a database that is both control and shard 0 runs it once).
-- Campaigns of the admin API send to an audience (lists and saved segments, with exclusions;
-- CONTRACT 9) instead of a list of their own: list_id becomes optional, and a campaign may
-- carry a Reply-To address. SQLite cannot relax NOT NULL in place, so the table is rebuilt.

PRAGMA defer_foreign_keys = on;

CREATE TABLE campaigns_new (
  id             TEXT PRIMARY KEY,
  panel_id       TEXT NOT NULL,
  -- The campaign's own list (4.10); NULL for a campaign with an audience.
  list_id        INTEGER REFERENCES lists(id),
  name           TEXT NOT NULL,
  subject        TEXT NOT NULL,
  sender_name    TEXT NOT NULL,
  sender_email   TEXT NOT NULL,
  tags           TEXT NOT NULL DEFAULT '[]',
  schedule_local TEXT NOT NULL,
  send_at        INTEGER NOT NULL,
  body_key       TEXT NOT NULL,
  import_job_id  TEXT,
  status         TEXT NOT NULL CHECK (status IN ('scheduled', 'sending', 'sent', 'failed')),
  status_reason  TEXT,
  recipients     INTEGER NOT NULL DEFAULT 0,
  request_id     TEXT NOT NULL,
  created_at     INTEGER NOT NULL,
  published_at   INTEGER,
  finished_at    INTEGER,
  updated_at     INTEGER NOT NULL,
  -- JSON {"lists","segments","exclude_lists","exclude_segments"}; resolved into
  -- campaign_messages when the campaign is published.
  audience       TEXT,
  reply_to       TEXT,
  CHECK ((list_id IS NULL) <> (audience IS NULL))
);

INSERT INTO campaigns_new (id, panel_id, list_id, name, subject, sender_name, sender_email, tags, schedule_local, send_at, body_key,
  import_job_id, status, status_reason, recipients, request_id, created_at, published_at, finished_at, updated_at, audience)
SELECT id, panel_id, list_id, name, subject, sender_name, sender_email, tags, schedule_local, send_at, body_key,
  import_job_id, status, status_reason, recipients, request_id, created_at, published_at, finished_at, updated_at, audience
FROM campaigns;

DROP TABLE campaigns;
ALTER TABLE campaigns_new RENAME TO campaigns;

CREATE INDEX campaigns_due ON campaigns (status, send_at);
CREATE INDEX campaigns_by_panel ON campaigns (panel_id, created_at);
