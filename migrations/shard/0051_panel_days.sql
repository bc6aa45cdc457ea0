-- The Home screen's history (issue 20): per panel and UTC day, contacts (the count at the
-- day's start), events by channel and name, and sends by channel, so the charts read at most a
-- row per day and series instead of scanning contacts, events or messages.
--
-- events: counted by the event pipeline in the transaction that stores a batch's events as rows
--   (store/event-batches.ts), by the day the event happened; a batch is stored once, so a
--   redelivered batch counts nothing again.
-- sends: counted by the triggers below when a message becomes sent (campaign email) or sent or
--   kept by the outbox (journey messages), in the day that happened; a row that is already sent
--   counts nothing again.
-- contacts: the cron's daily count (services/overview/history.ts); earlier days filled once here.
CREATE TABLE IF NOT EXISTS panel_days (
  panel_id TEXT NOT NULL,
  kind     TEXT NOT NULL CHECK (kind IN ('contacts', 'events', 'sends')),
  -- Epoch milliseconds of the UTC day's start.
  day      INTEGER NOT NULL,
  -- events: "channel:name"; sends: the channel; contacts: ''.
  name     TEXT NOT NULL,
  n        INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (panel_id, kind, day, name)
) WITHOUT ROWID;

CREATE TRIGGER IF NOT EXISTS panel_days_campaign_sends AFTER UPDATE OF status ON campaign_messages
WHEN NEW.status = 'sent' AND OLD.status <> 'sent'
BEGIN
  INSERT INTO panel_days (panel_id, kind, day, name, n) VALUES (NEW.panel_id, 'sends', (unixepoch() / 86400) * 86400000, 'email', 1)
  ON CONFLICT (panel_id, kind, day, name) DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER IF NOT EXISTS panel_days_journey_sends_new AFTER INSERT ON journey_messages
WHEN NEW.status IN ('sent', 'recorded')
BEGIN
  INSERT INTO panel_days (panel_id, kind, day, name, n) VALUES (NEW.panel_id, 'sends', (unixepoch() / 86400) * 86400000, NEW.channel, 1)
  ON CONFLICT (panel_id, kind, day, name) DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER IF NOT EXISTS panel_days_journey_sends AFTER UPDATE OF status ON journey_messages
WHEN NEW.status IN ('sent', 'recorded') AND OLD.status NOT IN ('sent', 'recorded')
BEGIN
  INSERT INTO panel_days (panel_id, kind, day, name, n) VALUES (NEW.panel_id, 'sends', (unixepoch() / 86400) * 86400000, NEW.channel, 1)
  ON CONFLICT (panel_id, kind, day, name) DO UPDATE SET n = n + 1;
END;

-- History before this migration, counted once from what is still held.
INSERT INTO panel_days (panel_id, kind, day, name, n)
SELECT panel_id, 'events', (occurred_at / 86400000) * 86400000, channel || ':' || name, COUNT(*)
FROM events GROUP BY panel_id, (occurred_at / 86400000) * 86400000, channel || ':' || name
ON CONFLICT (panel_id, kind, day, name) DO NOTHING;

INSERT INTO panel_days (panel_id, kind, day, name, n)
SELECT panel_id, 'sends', (sent_at / 86400000) * 86400000, 'email', COUNT(*)
FROM campaign_messages WHERE status = 'sent' AND sent_at IS NOT NULL GROUP BY panel_id, (sent_at / 86400000) * 86400000
ON CONFLICT (panel_id, kind, day, name) DO NOTHING;

INSERT INTO panel_days (panel_id, kind, day, name, n)
SELECT panel_id, 'sends', (created_at / 86400000) * 86400000, channel, COUNT(*)
FROM journey_messages WHERE status IN ('sent', 'recorded') GROUP BY panel_id, (created_at / 86400000) * 86400000, channel
ON CONFLICT (panel_id, kind, day, name) DO UPDATE SET n = n + excluded.n;

-- Contacts at the start of each day since the panel's first, from when each was created.
INSERT INTO panel_days (panel_id, kind, day, name, n)
SELECT panel_id, 'contacts', day + 86400000, '', SUM(added) OVER (PARTITION BY panel_id ORDER BY day)
FROM (SELECT panel_id, (created_at / 86400000) * 86400000 AS day, COUNT(*) AS added FROM contacts GROUP BY panel_id, (created_at / 86400000) * 86400000)
WHERE true
ON CONFLICT (panel_id, kind, day, name) DO NOTHING;
