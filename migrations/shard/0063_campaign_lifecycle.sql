-- Issue 43, campaign lifecycle (domain/campaign-lifecycle.ts): a campaign may now be a draft,
-- paused while sending, cancelled, or archived (a sent campaign "deleted", its report kept).
-- SQLite cannot change a CHECK in place, so the table is rebuilt as 0060 left it, with the
-- wider status rule. Nothing references campaigns by foreign key.

PRAGMA defer_foreign_keys = on;

CREATE TABLE campaigns_new (
  id             TEXT PRIMARY KEY,
  panel_id       TEXT NOT NULL,
  -- The campaign's own list (4.10); NULL for a campaign with an audience.
  list_id        INTEGER,
  name           TEXT NOT NULL,
  subject        TEXT NOT NULL,
  sender_name    TEXT NOT NULL,
  sender_email   TEXT NOT NULL,
  tags           TEXT NOT NULL DEFAULT '[]',
  -- A draft keeps the time it was last given (or its creation), used only once it is scheduled.
  schedule_local TEXT NOT NULL,
  send_at        INTEGER NOT NULL,
  body_key       TEXT NOT NULL,
  import_job_id  TEXT,
  status         TEXT NOT NULL CHECK (status IN ('draft', 'scheduled', 'sending', 'paused', 'sent', 'cancelled', 'failed', 'archived')),
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
  messages_pruned_at INTEGER,
  CHECK ((list_id IS NULL) <> (audience IS NULL)),
  FOREIGN KEY (panel_id, list_id) REFERENCES lists(panel_id, id)
);
INSERT INTO campaigns_new (id, panel_id, list_id, name, subject, sender_name, sender_email, tags, schedule_local, send_at, body_key,
  import_job_id, status, status_reason, recipients, request_id, created_at, published_at, finished_at, updated_at, audience, reply_to, messages_pruned_at)
SELECT id, panel_id, list_id, name, subject, sender_name, sender_email, tags, schedule_local, send_at, body_key,
  import_job_id, status, status_reason, recipients, request_id, created_at, published_at, finished_at, updated_at, audience, reply_to, messages_pruned_at
FROM campaigns;

DROP TABLE campaigns;
ALTER TABLE campaigns_new RENAME TO campaigns;

CREATE INDEX campaigns_due ON campaigns (status, send_at);
CREATE INDEX campaigns_by_panel ON campaigns (panel_id, created_at);
CREATE INDEX campaigns_to_prune ON campaigns (finished_at) WHERE messages_pruned_at IS NULL AND finished_at IS NOT NULL;
