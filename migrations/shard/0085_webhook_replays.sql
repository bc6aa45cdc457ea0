-- Issue 46, item 2: webhook replays. An owner re-sends the panel's recorded events of a time
-- range (the shard's rows and, past the retention window, the R2 archive) to a webhook, in
-- order, through its dispatcher. A replay is worked in bounded steps (IMPORTS `webhook_replay`
-- nudges); its cursor is the last event handed over, in (occurred_at, id) order.
CREATE TABLE IF NOT EXISTS webhook_replays (
  panel_id      TEXT NOT NULL,
  -- The caller's id (idempotency: a second create with it answers this row) or one made here.
  id            TEXT NOT NULL,
  webhook_id    TEXT NOT NULL,
  from_at       INTEGER NOT NULL,
  to_at         INTEGER NOT NULL,
  -- JSON: {"channels":[...]|null,"journey_id":...|null}
  filter        TEXT NOT NULL,
  state         TEXT NOT NULL CHECK (state IN ('running', 'done', 'cancelled')),
  -- The dry run's count when the replay was created: what it expects to hand over.
  events_total  INTEGER NOT NULL,
  events_queued INTEGER NOT NULL DEFAULT 0,
  cursor_at     INTEGER,
  cursor_id     INTEGER,
  created_by    TEXT,
  created_at    INTEGER NOT NULL,
  -- When a step last moved it on (or took it): the re-drive nudges one left alone too long.
  step_at       INTEGER NOT NULL,
  finished_at   INTEGER,
  PRIMARY KEY (panel_id, id)
) WITHOUT ROWID;

CREATE INDEX IF NOT EXISTS webhook_replays_by_webhook ON webhook_replays (panel_id, webhook_id, created_at);
CREATE INDEX IF NOT EXISTS webhook_replays_running ON webhook_replays (step_at) WHERE state = 'running';
