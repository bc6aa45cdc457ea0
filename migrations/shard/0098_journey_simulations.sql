-- Issue 46, item 1: journey simulations on history (decision 0048). A journey version is run
-- over the panel's recorded activities of the last N days (the shard's rows and the R2 archive)
-- with nothing sent; the steps (IMPORTS `journey_simulation` nudges) keep the in-memory state in
-- R2 between pages, named by the cursor it was left at, and the result here with the version.
CREATE TABLE IF NOT EXISTS journey_simulations (
  panel_id     TEXT NOT NULL,
  id           TEXT NOT NULL,
  journey_id   TEXT NOT NULL,
  version      INTEGER NOT NULL,
  days         INTEGER NOT NULL,
  from_at      INTEGER NOT NULL,
  to_at        INTEGER NOT NULL,
  state        TEXT NOT NULL CHECK (state IN ('running', 'done', 'failed')),
  events_read  INTEGER NOT NULL DEFAULT 0,
  -- The last event simulated, in (occurred_at, id) order.
  cursor_at    INTEGER,
  cursor_id    INTEGER,
  -- JSON, once done: per step figures, messages per channel, webhook calls, samples.
  result       TEXT,
  error        TEXT,
  created_by   TEXT,
  created_at   INTEGER NOT NULL,
  -- When a step last moved it on: the re-drive nudges one left alone too long.
  step_at      INTEGER NOT NULL,
  finished_at  INTEGER,
  PRIMARY KEY (panel_id, id)
) WITHOUT ROWID;

CREATE INDEX IF NOT EXISTS journey_simulations_by_journey ON journey_simulations (panel_id, journey_id, version, created_at);
CREATE INDEX IF NOT EXISTS journey_simulations_running ON journey_simulations (step_at) WHERE state = 'running';
