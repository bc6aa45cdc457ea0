-- Journey webhooks (spec 2.7, CONTRACT 4 and 6): the configuration an operator gives and the
-- state the test action and deliveries move. The backlog of events and the attempt log live
-- in each webhook's WebhookDispatcher Durable Object, not here.
CREATE TABLE webhooks (
  id                 TEXT PRIMARY KEY,
  panel_id           TEXT NOT NULL REFERENCES panels(id),
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

CREATE INDEX webhooks_by_panel ON webhooks (panel_id, created_at);
