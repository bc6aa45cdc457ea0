-- Email broadcasts (4.10): the campaign, one row per (campaign, contact) that is both the
-- send claim and the per-recipient tracking counters, suppressions, the outbox provider's
-- messages, and (until the event pipeline lands) the tracking events themselves.

CREATE TABLE campaigns (
  id             TEXT PRIMARY KEY,
  panel_id       TEXT NOT NULL REFERENCES panels(id),
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

CREATE INDEX campaigns_due ON campaigns (status, send_at);
CREATE INDEX campaigns_by_panel ON campaigns (panel_id, created_at);

-- One row per recipient, written when the campaign is published. Moving a row from
-- 'queued' to 'sending' under a fresh claim token is what makes a send exactly-once:
-- a redelivered batch finds nothing left to claim.
CREATE TABLE campaign_messages (
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
  unsubscribed_at INTEGER,
  -- Batch first: claiming a batch reads one narrow range of the table, not the whole campaign.
  PRIMARY KEY (campaign_id, batch, contact_id),
  UNIQUE (campaign_id, contact_id)
) WITHOUT ROWID;
CREATE INDEX campaign_messages_by_status ON campaign_messages (campaign_id, status);
CREATE INDEX campaign_messages_by_provider_id ON campaign_messages (provider_msg_id) WHERE provider_msg_id IS NOT NULL;

-- Addresses that get no more campaign email from the panel: unsubscribed or hard-bounced.
CREATE TABLE email_suppressions (
  panel_id    TEXT NOT NULL,
  address     TEXT NOT NULL,
  reason      TEXT NOT NULL CHECK (reason IN ('unsubscribe', 'hard_bounce')),
  campaign_id TEXT,
  created_at  INTEGER NOT NULL,
  PRIMARY KEY (panel_id, address)
) WITHOUT ROWID;

-- Messages kept by the outbox provider: the .eml is in R2 under r2_key.
CREATE TABLE outbox (
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

CREATE INDEX outbox_by_panel ON outbox (panel_id, channel, created_at);

-- Tracking events (open, click, bounce, unsubscribe) as src/broadcasts/events-seam.ts records
-- them until the shared event pipeline takes them over.
CREATE TABLE email_events (
  id          TEXT PRIMARY KEY,
  panel_id    TEXT NOT NULL,
  event       TEXT NOT NULL,
  msgid       TEXT NOT NULL,
  campaign_id TEXT,
  contact_id  INTEGER,
  address     TEXT,
  detail      TEXT,
  at          INTEGER NOT NULL
);

CREATE INDEX email_events_by_panel ON email_events (panel_id, at);
