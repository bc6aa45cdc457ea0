-- Issue 47: the deployment's operations view and its alerts.

-- One row per cron tick: when it was due, when it started and how long it took (one INSERT at
-- the tick's end, the oldest past a day pruned by the same batch). The operations view shows
-- the last ticks; the cron-late alert compares a tick with the one before.
CREATE TABLE cron_ticks (
  scheduled_at INTEGER PRIMARY KEY,
  started_at   INTEGER NOT NULL,
  duration_ms  INTEGER NOT NULL,
  -- tasks run in the tick (not handed out) that threw, and whether the hand-out failed
  failed_tasks INTEGER NOT NULL DEFAULT 0
);

-- Who hears of an operations alert: an email address or a webhook URL (posted through the
-- outbound guard, signed as webhooks are when a secret is set), for the kinds listed (JSON).
CREATE TABLE alert_subscriptions (
  id                 TEXT PRIMARY KEY,
  kinds              TEXT NOT NULL,
  email              TEXT,
  webhook_url        TEXT,
  -- AES-GCM under SECRETS_KEY (lib/crypto.ts); never returned.
  signing_secret_enc TEXT,
  created_at         INTEGER NOT NULL,
  -- the last delivery that failed, for the operations view
  last_error         TEXT,
  last_error_at      INTEGER,
  CHECK ((email IS NULL) <> (webhook_url IS NULL))
);

-- The alert conditions that hold now, one row each: inserted (and announced) when a check first
-- finds it, deleted when the check that owns it (`scope`: control, or shard:N) no longer does,
-- so a condition is announced once, and again only after it cleared and came back.
CREATE TABLE alert_conditions (
  key      TEXT PRIMARY KEY,
  scope    TEXT NOT NULL,
  kind     TEXT NOT NULL,
  panel_id TEXT,
  detail   TEXT NOT NULL,
  since    INTEGER NOT NULL
);
CREATE INDEX alert_conditions_by_scope ON alert_conditions (scope);
