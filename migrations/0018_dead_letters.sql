-- What arrived on the dead-letter queue (a message another queue gave up on after its
-- retries), and what its re-drive did with the work it named. Kept 30 days.
CREATE TABLE dead_letters (
  id          INTEGER PRIMARY KEY AUTOINCREMENT,
  queue       TEXT NOT NULL,
  -- imports, events, sends, journeys, or unknown (a body no consumer reads)
  kind        TEXT NOT NULL,
  panel_id    TEXT,
  body        TEXT NOT NULL,
  attempts    INTEGER NOT NULL,
  action      TEXT NOT NULL,
  received_at INTEGER NOT NULL
);

CREATE INDEX dead_letters_by_time ON dead_letters (received_at);
