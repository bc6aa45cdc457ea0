-- Journey reports from aggregates (issue 20, decision 0028): what a journey did per UTC hour,
-- per step and per channel, and what waits at each step now, so the report and the canvas's
-- live counters read a few rows per journey instead of scanning instances, points or events.
--
-- Every count is made by a trigger in the transaction of the row change it counts, and adds only
-- what that change changed. Each counted change is already idempotent in the table it counts (an
-- instance is entered once per entry key, a step runs once per instance: INSERT OR IGNORE; a
-- point is ended once: UPDATE ... WHERE outcome IS NULL; a message changes status once; an
-- event is stored once per guid and batch), so a redelivered nudge, event or cron run that
-- changes no row adds nothing. The hour is the one the row itself names (entered_at, ended_at,
-- at, resolved_at, received_at) or, for a message's status, the store's clock.

-- The journey: instances entered, completed and exited per hour.
CREATE TABLE IF NOT EXISTS journey_stats (
  journey_id TEXT NOT NULL,
  hour       INTEGER NOT NULL,
  panel_id   TEXT NOT NULL,
  entered    INTEGER NOT NULL DEFAULT 0,
  completed  INTEGER NOT NULL DEFAULT 0,
  exited     INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (journey_id, hour)
) WITHOUT ROWID;

-- Each step per hour: instances that reached it (its step run), went on past it, failed at it;
-- timed_out: of those that went on past a wait, the ones its time limit let go.
CREATE TABLE IF NOT EXISTS journey_step_stats (
  journey_id TEXT NOT NULL,
  step_id    TEXT NOT NULL,
  hour       INTEGER NOT NULL,
  panel_id   TEXT NOT NULL,
  entered    INTEGER NOT NULL DEFAULT 0,
  passed     INTEGER NOT NULL DEFAULT 0,
  failed     INTEGER NOT NULL DEFAULT 0,
  timed_out  INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (journey_id, step_id, hour)
) WITHOUT ROWID;

-- Instances waiting at each wait or delay step now (not per hour: a current count).
CREATE TABLE IF NOT EXISTS journey_step_waiting (
  journey_id TEXT NOT NULL,
  step_id    TEXT NOT NULL,
  panel_id   TEXT NOT NULL,
  waiting    INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (journey_id, step_id)
) WITHOUT ROWID;

-- Each channel of the journey per hour: messages sent (or kept by the outbox), failed and
-- skipped; events reported for them (opens, clicks, deliveries) and the messages with at least
-- one (opened, clicked, delivered, bounced).
CREATE TABLE IF NOT EXISTS journey_channel_stats (
  journey_id TEXT NOT NULL,
  channel    TEXT NOT NULL,
  hour       INTEGER NOT NULL,
  panel_id   TEXT NOT NULL,
  sent       INTEGER NOT NULL DEFAULT 0,
  failed     INTEGER NOT NULL DEFAULT 0,
  skipped    INTEGER NOT NULL DEFAULT 0,
  delivered  INTEGER NOT NULL DEFAULT 0,
  opens      INTEGER NOT NULL DEFAULT 0,
  opened     INTEGER NOT NULL DEFAULT 0,
  clicks     INTEGER NOT NULL DEFAULT 0,
  clicked    INTEGER NOT NULL DEFAULT 0,
  bounced    INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (journey_id, channel, hour)
) WITHOUT ROWID;

-- Which kinds of event a journey message has had (open, click, delivered, bounce, ...): the
-- first of each kind counts the message in opened/clicked/delivered/bounced. Gone with the message.
CREATE TABLE IF NOT EXISTS journey_message_marks (
  msgid TEXT NOT NULL,
  name  TEXT NOT NULL,
  PRIMARY KEY (msgid, name)
) WITHOUT ROWID;

CREATE TRIGGER IF NOT EXISTS journey_stats_entered AFTER INSERT ON journey_instances
BEGIN
  INSERT INTO journey_stats (journey_id, hour, panel_id, entered) VALUES (NEW.journey_id, (NEW.entered_at / 3600000) * 3600000, NEW.panel_id, 1)
  ON CONFLICT (journey_id, hour) DO UPDATE SET entered = entered + 1;
END;

CREATE TRIGGER IF NOT EXISTS journey_stats_ended AFTER UPDATE OF status ON journey_instances
WHEN NEW.status IS NOT OLD.status AND (NEW.status IN ('completed', 'exited') OR OLD.status IN ('completed', 'exited'))
BEGIN
  INSERT INTO journey_stats (journey_id, hour, panel_id, completed, exited)
  VALUES (NEW.journey_id, (COALESCE(NEW.ended_at, unixepoch() * 1000) / 3600000) * 3600000, NEW.panel_id,
    (NEW.status = 'completed') - (OLD.status = 'completed'), (NEW.status = 'exited') - (OLD.status = 'exited'))
  ON CONFLICT (journey_id, hour) DO UPDATE SET completed = completed + excluded.completed, exited = exited + excluded.exited;
END;

-- A step run is recorded once per (instance, step). A condition's run (then/else) and a
-- webhook's (the hand-over's result) also say whether the step went on or failed; a message
-- step's result is its msgid (its message's status counts it below); waits and delays record
-- 'waiting' (their point counts them below).
CREATE TRIGGER IF NOT EXISTS journey_step_stats_run AFTER INSERT ON journey_step_runs
BEGIN
  INSERT INTO journey_step_stats (journey_id, step_id, hour, panel_id, entered, passed, failed)
  SELECT NEW.journey_id, NEW.step_id, (NEW.at / 3600000) * 3600000, j.panel_id, 1,
    NEW.result IN ('then', 'else', 'queued'),
    NEW.result = 'webhook_missing' OR NEW.result LIKE 'refused%'
  FROM journeys j WHERE j.id = NEW.journey_id
  ON CONFLICT (journey_id, step_id, hour) DO UPDATE SET entered = entered + 1, passed = passed + excluded.passed, failed = failed + excluded.failed;
END;

CREATE TRIGGER IF NOT EXISTS journey_step_waiting_new AFTER INSERT ON journey_points
WHEN NEW.kind <> 'start' AND NEW.outcome IS NULL
BEGIN
  INSERT INTO journey_step_waiting (journey_id, step_id, panel_id, waiting) VALUES (NEW.journey_id, NEW.step_id, NEW.panel_id, 1)
  ON CONFLICT (journey_id, step_id) DO UPDATE SET waiting = waiting + 1;
END;

CREATE TRIGGER IF NOT EXISTS journey_step_point_ended AFTER UPDATE OF outcome ON journey_points
WHEN NEW.kind <> 'start' AND OLD.outcome IS NULL AND NEW.outcome IS NOT NULL
BEGIN
  UPDATE journey_step_waiting SET waiting = waiting - 1 WHERE journey_id = NEW.journey_id AND step_id = NEW.step_id;
  INSERT INTO journey_step_stats (journey_id, step_id, hour, panel_id, passed, timed_out)
  VALUES (NEW.journey_id, NEW.step_id, (COALESCE(NEW.resolved_at, unixepoch() * 1000) / 3600000) * 3600000, NEW.panel_id,
    NEW.outcome IN ('event', 'timeout', 'elapsed'), NEW.outcome = 'timeout')
  ON CONFLICT (journey_id, step_id, hour) DO UPDATE SET passed = passed + excluded.passed, timed_out = timed_out + excluded.timed_out;
END;

-- An erased contact's waiting points leave the count.
CREATE TRIGGER IF NOT EXISTS journey_step_point_gone AFTER DELETE ON journey_points
WHEN OLD.kind <> 'start' AND OLD.outcome IS NULL
BEGIN
  UPDATE journey_step_waiting SET waiting = waiting - 1 WHERE journey_id = OLD.journey_id AND step_id = OLD.step_id;
END;

-- Messages: sent (or recorded by the outbox), failed or skipped, counted for the channel and for
-- the step that sent them, when a row enters with or moves to that status.
CREATE TRIGGER IF NOT EXISTS journey_message_stats_new AFTER INSERT ON journey_messages
WHEN NEW.status IN ('sent', 'recorded', 'failed', 'skipped')
BEGIN
  INSERT INTO journey_channel_stats (journey_id, channel, hour, panel_id, sent, failed, skipped)
  VALUES (NEW.journey_id, NEW.channel, (unixepoch() / 3600) * 3600000, NEW.panel_id,
    NEW.status IN ('sent', 'recorded'), NEW.status = 'failed', NEW.status = 'skipped')
  ON CONFLICT (journey_id, channel, hour) DO UPDATE SET sent = sent + excluded.sent, failed = failed + excluded.failed, skipped = skipped + excluded.skipped;
  INSERT INTO journey_step_stats (journey_id, step_id, hour, panel_id, passed, failed)
  VALUES (NEW.journey_id, NEW.step_id, (unixepoch() / 3600) * 3600000, NEW.panel_id, NEW.status IN ('sent', 'recorded'), NEW.status IN ('failed', 'skipped'))
  ON CONFLICT (journey_id, step_id, hour) DO UPDATE SET passed = passed + excluded.passed, failed = failed + excluded.failed;
END;

CREATE TRIGGER IF NOT EXISTS journey_message_stats AFTER UPDATE OF status ON journey_messages
WHEN NEW.status IS NOT OLD.status
  AND (NEW.status IN ('sent', 'recorded', 'failed', 'skipped') OR OLD.status IN ('sent', 'recorded', 'failed', 'skipped'))
BEGIN
  INSERT INTO journey_channel_stats (journey_id, channel, hour, panel_id, sent, failed, skipped)
  VALUES (NEW.journey_id, NEW.channel, (unixepoch() / 3600) * 3600000, NEW.panel_id,
    (NEW.status IN ('sent', 'recorded')) - (OLD.status IN ('sent', 'recorded')),
    (NEW.status = 'failed') - (OLD.status = 'failed'),
    (NEW.status = 'skipped') - (OLD.status = 'skipped'))
  ON CONFLICT (journey_id, channel, hour) DO UPDATE SET sent = sent + excluded.sent, failed = failed + excluded.failed, skipped = skipped + excluded.skipped;
  INSERT INTO journey_step_stats (journey_id, step_id, hour, panel_id, passed, failed)
  VALUES (NEW.journey_id, NEW.step_id, (unixepoch() / 3600) * 3600000, NEW.panel_id,
    (NEW.status IN ('sent', 'recorded')) - (OLD.status IN ('sent', 'recorded')),
    (NEW.status IN ('failed', 'skipped')) - (OLD.status IN ('failed', 'skipped')))
  ON CONFLICT (journey_id, step_id, hour) DO UPDATE SET passed = passed + excluded.passed, failed = failed + excluded.failed;
END;

CREATE TRIGGER IF NOT EXISTS journey_message_marks_gone AFTER DELETE ON journey_messages
BEGIN
  DELETE FROM journey_message_marks WHERE msgid = OLD.msgid;
END;

-- Channel events of journey messages (they carry the journey and the msgid), counted as the
-- pipeline stores them as rows: once per event. The mark is read before it is set, so only the
-- first event of a kind counts the message.
CREATE TRIGGER IF NOT EXISTS journey_channel_events AFTER INSERT ON events
WHEN NEW.journey_id IS NOT NULL AND NEW.msgid IS NOT NULL AND NEW.channel <> 'custom_activity'
  AND NEW.name IN ('delivered', 'open', 'click', 'bounce')
BEGIN
  INSERT INTO journey_channel_stats (journey_id, channel, hour, panel_id, delivered, opens, opened, clicks, clicked, bounced)
  SELECT NEW.journey_id, NEW.channel, (NEW.received_at / 3600000) * 3600000, NEW.panel_id,
    NEW.name = 'delivered' AND first, NEW.name = 'open', NEW.name = 'open' AND first,
    NEW.name = 'click', NEW.name = 'click' AND first, NEW.name = 'bounce' AND first
  FROM (SELECT NOT EXISTS (SELECT 1 FROM journey_message_marks WHERE msgid = NEW.msgid AND name = NEW.name) AS first)
  WHERE true
  ON CONFLICT (journey_id, channel, hour) DO UPDATE SET delivered = delivered + excluded.delivered, opens = opens + excluded.opens,
    opened = opened + excluded.opened, clicks = clicks + excluded.clicks, clicked = clicked + excluded.clicked, bounced = bounced + excluded.bounced;
  INSERT OR IGNORE INTO journey_message_marks (msgid, name) VALUES (NEW.msgid, NEW.name);
END;

-- Journeys that ran before this migration, counted once from the rows still held.
INSERT INTO journey_stats (journey_id, hour, panel_id, entered)
SELECT journey_id, (entered_at / 3600000) * 3600000 AS h, panel_id, COUNT(*) FROM journey_instances GROUP BY journey_id, h, panel_id
ON CONFLICT (journey_id, hour) DO UPDATE SET entered = entered + excluded.entered;

INSERT INTO journey_stats (journey_id, hour, panel_id, completed, exited)
SELECT journey_id, (ended_at / 3600000) * 3600000 AS h, panel_id, SUM(status = 'completed'), SUM(status = 'exited')
FROM journey_instances WHERE status IN ('completed', 'exited') AND ended_at IS NOT NULL GROUP BY journey_id, h, panel_id
ON CONFLICT (journey_id, hour) DO UPDATE SET completed = completed + excluded.completed, exited = exited + excluded.exited;

INSERT INTO journey_step_stats (journey_id, step_id, hour, panel_id, entered, passed, failed)
SELECT r.journey_id, r.step_id, (r.at / 3600000) * 3600000 AS h, j.panel_id, COUNT(*),
  SUM(r.result IN ('then', 'else', 'queued')), SUM(r.result = 'webhook_missing' OR r.result LIKE 'refused%')
FROM journey_step_runs r JOIN journeys j ON j.id = r.journey_id GROUP BY r.journey_id, r.step_id, h, j.panel_id
ON CONFLICT (journey_id, step_id, hour) DO UPDATE SET entered = entered + excluded.entered, passed = passed + excluded.passed, failed = failed + excluded.failed;

INSERT INTO journey_step_stats (journey_id, step_id, hour, panel_id, passed, timed_out)
SELECT journey_id, step_id, (resolved_at / 3600000) * 3600000 AS h, panel_id, SUM(outcome IN ('event', 'timeout', 'elapsed')), SUM(outcome = 'timeout')
FROM journey_points WHERE kind <> 'start' AND outcome IS NOT NULL AND resolved_at IS NOT NULL GROUP BY journey_id, step_id, h, panel_id
ON CONFLICT (journey_id, step_id, hour) DO UPDATE SET passed = passed + excluded.passed, timed_out = timed_out + excluded.timed_out;

INSERT INTO journey_step_waiting (journey_id, step_id, panel_id, waiting)
SELECT journey_id, step_id, panel_id, COUNT(*) FROM journey_points WHERE kind <> 'start' AND outcome IS NULL GROUP BY journey_id, step_id, panel_id
ON CONFLICT (journey_id, step_id) DO UPDATE SET waiting = waiting + excluded.waiting;

INSERT INTO journey_step_stats (journey_id, step_id, hour, panel_id, passed, failed)
SELECT journey_id, step_id, (COALESCE(attempted_at, created_at) / 3600000) * 3600000 AS h, panel_id,
  SUM(status IN ('sent', 'recorded')), SUM(status IN ('failed', 'skipped'))
FROM journey_messages WHERE status IN ('sent', 'recorded', 'failed', 'skipped') GROUP BY journey_id, step_id, h, panel_id
ON CONFLICT (journey_id, step_id, hour) DO UPDATE SET passed = passed + excluded.passed, failed = failed + excluded.failed;

INSERT INTO journey_channel_stats (journey_id, channel, hour, panel_id, sent, failed, skipped)
SELECT journey_id, channel, (COALESCE(attempted_at, created_at) / 3600000) * 3600000 AS h, panel_id,
  SUM(status IN ('sent', 'recorded')), SUM(status = 'failed'), SUM(status = 'skipped')
FROM journey_messages WHERE status IN ('sent', 'recorded', 'failed', 'skipped') GROUP BY journey_id, channel, h, panel_id
ON CONFLICT (journey_id, channel, hour) DO UPDATE SET sent = sent + excluded.sent, failed = failed + excluded.failed, skipped = skipped + excluded.skipped;

-- Events: each message counted in the hour of its first event of a kind.
INSERT INTO journey_channel_stats (journey_id, channel, hour, panel_id, delivered, opens, opened, clicks, clicked, bounced)
SELECT journey_id, channel, h, panel_id, SUM(name = 'delivered' AND first), SUM(name = 'open'), SUM(name = 'open' AND first),
  SUM(name = 'click'), SUM(name = 'click' AND first), SUM(name = 'bounce' AND first)
FROM (
  SELECT journey_id, channel, (received_at / 3600000) * 3600000 AS h, panel_id, name,
    ROW_NUMBER() OVER (PARTITION BY msgid, name ORDER BY id) = 1 AS first
  FROM events
  WHERE journey_id IS NOT NULL AND msgid IS NOT NULL AND channel <> 'custom_activity' AND name IN ('delivered', 'open', 'click', 'bounce'))
GROUP BY journey_id, channel, h, panel_id
ON CONFLICT (journey_id, channel, hour) DO UPDATE SET delivered = delivered + excluded.delivered, opens = opens + excluded.opens,
  opened = opened + excluded.opened, clicks = clicks + excluded.clicks, clicked = clicked + excluded.clicked, bounced = bounced + excluded.bounced;

INSERT OR IGNORE INTO journey_message_marks (msgid, name)
SELECT DISTINCT msgid, name FROM events
WHERE journey_id IS NOT NULL AND msgid IS NOT NULL AND channel <> 'custom_activity' AND name IN ('delivered', 'open', 'click', 'bounce');
