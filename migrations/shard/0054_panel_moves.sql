-- Moving a panel between shards (decision 0031). A panel listed in panels_in_transit on a shard
-- is being copied in (the target) or deleted after it moved out (the source): every trigger of
-- the shard leaves its rows alone, so copied rows land exactly as they were (aggregates and derived
-- rows are copied too, not counted again) and a cleanup deletes without counting. The table is
-- empty but during a move, so the check is one lookup in an empty index.
CREATE TABLE IF NOT EXISTS panels_in_transit (
  panel_id TEXT PRIMARY KEY
) WITHOUT ROWID;

-- What changed in a moving panel's rows on the shard it leaves, written by triggers the move
-- creates for its duration (src/store/panel-move/capture.ts): the table and the key of each
-- changed row, in order. The move re-reads each row and copies it (or its absence) to the target.
-- A plain rowid (no AUTOINCREMENT): rows are deleted only once the move ends.
CREATE TABLE IF NOT EXISTS panel_move_changes (
  seq      INTEGER PRIMARY KEY,
  panel_id TEXT NOT NULL,
  tbl      TEXT NOT NULL,
  key      TEXT NOT NULL
);

-- Every trigger again, unchanged but for the first condition: no trigger acts on a panel in transit.

DROP TRIGGER IF EXISTS anon_profiles_join_history;
CREATE TRIGGER anon_profiles_join_history AFTER INSERT ON anon_profiles
WHEN NOT EXISTS (SELECT 1 FROM panels_in_transit WHERE panel_id = NEW.panel_id)
BEGIN
  UPDATE events SET contact_id = NEW.contact_id
  WHERE panel_id = NEW.panel_id AND uniqueid = NEW.uniqueid AND contact_id IS NULL;
END;

DROP TRIGGER IF EXISTS list_members_enter_journeys;
CREATE TRIGGER list_members_enter_journeys AFTER INSERT ON list_members
WHEN NOT EXISTS (SELECT 1 FROM panels_in_transit WHERE panel_id = NEW.panel_id)
BEGIN
  INSERT INTO journey_list_entries (panel_id, journey_id, list_id, contact_id)
  SELECT NEW.panel_id, j.id, NEW.list_id, NEW.contact_id FROM journeys j
  WHERE j.panel_id = NEW.panel_id AND j.status = 'running' AND j.trigger_type = 'list' AND j.trigger_key = CAST(NEW.list_id AS TEXT);
END;

DROP TRIGGER IF EXISTS list_members_leave_journeys;
CREATE TRIGGER list_members_leave_journeys AFTER DELETE ON list_members
WHEN NOT EXISTS (SELECT 1 FROM panels_in_transit WHERE panel_id = OLD.panel_id)
BEGIN
  DELETE FROM journey_list_entries WHERE panel_id = OLD.panel_id AND contact_id = OLD.contact_id AND list_id = OLD.list_id;
END;

DROP TRIGGER IF EXISTS segment_members_enter;
CREATE TRIGGER segment_members_enter AFTER INSERT ON segment_members
WHEN NOT EXISTS (SELECT 1 FROM panels_in_transit WHERE panel_id = NEW.panel_id)
BEGIN
  INSERT INTO segment_changes (segment_id, panel_id, contact_id, change, at) VALUES (NEW.segment_id, NEW.panel_id, NEW.contact_id, 'enter', NEW.entered_at);
  INSERT INTO journey_list_entries (panel_id, journey_id, list_id, contact_id, segment_id)
  SELECT NEW.panel_id, j.id, 0, NEW.contact_id, NEW.segment_id FROM journeys j
  WHERE j.panel_id = NEW.panel_id AND j.status = 'running' AND j.trigger_type = 'segment' AND j.trigger_key = NEW.segment_id;
END;

DROP TRIGGER IF EXISTS segment_members_exit;
CREATE TRIGGER segment_members_exit AFTER DELETE ON segment_members
WHEN NOT EXISTS (SELECT 1 FROM panels_in_transit WHERE panel_id = OLD.panel_id)
BEGIN
  INSERT INTO segment_changes (segment_id, panel_id, contact_id, change, at)
  VALUES (OLD.segment_id, OLD.panel_id, OLD.contact_id, 'exit', CAST(unixepoch('subsec') * 1000 AS INTEGER));
  DELETE FROM journey_list_entries WHERE panel_id = OLD.panel_id AND contact_id = OLD.contact_id AND segment_id = OLD.segment_id;
END;

DROP TRIGGER IF EXISTS campaign_stats_count;
CREATE TRIGGER campaign_stats_count AFTER UPDATE ON campaign_messages
WHEN NOT EXISTS (SELECT 1 FROM panels_in_transit WHERE panel_id = NEW.panel_id)
  AND ((NEW.status IS NOT OLD.status AND (NEW.status IN ('sent', 'failed', 'skipped') OR OLD.status IN ('sent', 'failed', 'skipped')))
  OR NEW.opens <> OLD.opens OR NEW.clicks <> OLD.clicks
  OR NEW.bounced_at IS NOT OLD.bounced_at OR NEW.unsubscribed_at IS NOT OLD.unsubscribed_at)
BEGIN
  INSERT INTO campaign_stats (campaign_id, hour, panel_id, sent, failed, skipped, bounces, opens, unique_opens, clicks, unique_clicks, unsubscribes)
  VALUES (
    NEW.campaign_id, (unixepoch() / 3600) * 3600000, NEW.panel_id,
    (NEW.status = 'sent') - (OLD.status = 'sent'),
    (NEW.status = 'failed') - (OLD.status = 'failed'),
    (NEW.status = 'skipped') - (OLD.status = 'skipped'),
    (NEW.bounced_at IS NOT NULL) - (OLD.bounced_at IS NOT NULL),
    NEW.opens - OLD.opens,
    (NEW.first_open_at IS NOT NULL) - (OLD.first_open_at IS NOT NULL),
    NEW.clicks - OLD.clicks,
    (NEW.first_click_at IS NOT NULL) - (OLD.first_click_at IS NOT NULL),
    (NEW.unsubscribed_at IS NOT NULL) - (OLD.unsubscribed_at IS NOT NULL))
  ON CONFLICT (campaign_id, hour) DO UPDATE SET
    sent = sent + excluded.sent, failed = failed + excluded.failed, skipped = skipped + excluded.skipped,
    bounces = bounces + excluded.bounces, opens = opens + excluded.opens, unique_opens = unique_opens + excluded.unique_opens,
    clicks = clicks + excluded.clicks, unique_clicks = unique_clicks + excluded.unique_clicks,
    unsubscribes = unsubscribes + excluded.unsubscribes;
END;

DROP TRIGGER IF EXISTS panel_days_campaign_sends;
CREATE TRIGGER panel_days_campaign_sends AFTER UPDATE OF status ON campaign_messages
WHEN NOT EXISTS (SELECT 1 FROM panels_in_transit WHERE panel_id = NEW.panel_id)
  AND (NEW.status = 'sent' AND OLD.status <> 'sent')
BEGIN
  INSERT INTO panel_days (panel_id, kind, day, name, n) VALUES (NEW.panel_id, 'sends', (unixepoch() / 86400) * 86400000, 'email', 1)
  ON CONFLICT (panel_id, kind, day, name) DO UPDATE SET n = n + 1;
END;

DROP TRIGGER IF EXISTS panel_days_journey_sends_new;
CREATE TRIGGER panel_days_journey_sends_new AFTER INSERT ON journey_messages
WHEN NOT EXISTS (SELECT 1 FROM panels_in_transit WHERE panel_id = NEW.panel_id)
  AND (NEW.status IN ('sent', 'recorded'))
BEGIN
  INSERT INTO panel_days (panel_id, kind, day, name, n) VALUES (NEW.panel_id, 'sends', (unixepoch() / 86400) * 86400000, NEW.channel, 1)
  ON CONFLICT (panel_id, kind, day, name) DO UPDATE SET n = n + 1;
END;

DROP TRIGGER IF EXISTS panel_days_journey_sends;
CREATE TRIGGER panel_days_journey_sends AFTER UPDATE OF status ON journey_messages
WHEN NOT EXISTS (SELECT 1 FROM panels_in_transit WHERE panel_id = NEW.panel_id)
  AND (NEW.status IN ('sent', 'recorded') AND OLD.status NOT IN ('sent', 'recorded'))
BEGIN
  INSERT INTO panel_days (panel_id, kind, day, name, n) VALUES (NEW.panel_id, 'sends', (unixepoch() / 86400) * 86400000, NEW.channel, 1)
  ON CONFLICT (panel_id, kind, day, name) DO UPDATE SET n = n + 1;
END;

DROP TRIGGER IF EXISTS journey_stats_entered;
CREATE TRIGGER journey_stats_entered AFTER INSERT ON journey_instances
WHEN NOT EXISTS (SELECT 1 FROM panels_in_transit WHERE panel_id = NEW.panel_id)
BEGIN
  INSERT INTO journey_stats (journey_id, hour, panel_id, entered) VALUES (NEW.journey_id, (NEW.entered_at / 3600000) * 3600000, NEW.panel_id, 1)
  ON CONFLICT (journey_id, hour) DO UPDATE SET entered = entered + 1;
END;

DROP TRIGGER IF EXISTS journey_stats_ended;
CREATE TRIGGER journey_stats_ended AFTER UPDATE OF status ON journey_instances
WHEN NOT EXISTS (SELECT 1 FROM panels_in_transit WHERE panel_id = NEW.panel_id)
  AND (NEW.status IS NOT OLD.status AND (NEW.status IN ('completed', 'exited') OR OLD.status IN ('completed', 'exited')))
BEGIN
  INSERT INTO journey_stats (journey_id, hour, panel_id, completed, exited)
  VALUES (NEW.journey_id, (COALESCE(NEW.ended_at, unixepoch() * 1000) / 3600000) * 3600000, NEW.panel_id,
    (NEW.status = 'completed') - (OLD.status = 'completed'), (NEW.status = 'exited') - (OLD.status = 'exited'))
  ON CONFLICT (journey_id, hour) DO UPDATE SET completed = completed + excluded.completed, exited = exited + excluded.exited;
END;

DROP TRIGGER IF EXISTS journey_step_stats_run;
CREATE TRIGGER journey_step_stats_run AFTER INSERT ON journey_step_runs
WHEN NOT EXISTS (SELECT 1 FROM journeys j JOIN panels_in_transit t ON t.panel_id = j.panel_id WHERE j.id = NEW.journey_id)
BEGIN
  INSERT INTO journey_step_stats (journey_id, step_id, hour, panel_id, entered, passed, failed)
  SELECT NEW.journey_id, NEW.step_id, (NEW.at / 3600000) * 3600000, j.panel_id, 1,
    NEW.result IN ('then', 'else', 'queued'),
    NEW.result = 'webhook_missing' OR NEW.result LIKE 'refused%'
  FROM journeys j WHERE j.id = NEW.journey_id
  ON CONFLICT (journey_id, step_id, hour) DO UPDATE SET entered = entered + 1, passed = passed + excluded.passed, failed = failed + excluded.failed;
END;

DROP TRIGGER IF EXISTS journey_step_waiting_new;
CREATE TRIGGER journey_step_waiting_new AFTER INSERT ON journey_points
WHEN NOT EXISTS (SELECT 1 FROM panels_in_transit WHERE panel_id = NEW.panel_id)
  AND (NEW.kind <> 'start' AND NEW.outcome IS NULL)
BEGIN
  INSERT INTO journey_step_waiting (journey_id, step_id, panel_id, waiting) VALUES (NEW.journey_id, NEW.step_id, NEW.panel_id, 1)
  ON CONFLICT (journey_id, step_id) DO UPDATE SET waiting = waiting + 1;
END;

DROP TRIGGER IF EXISTS journey_step_point_ended;
CREATE TRIGGER journey_step_point_ended AFTER UPDATE OF outcome ON journey_points
WHEN NOT EXISTS (SELECT 1 FROM panels_in_transit WHERE panel_id = NEW.panel_id)
  AND (NEW.kind <> 'start' AND OLD.outcome IS NULL AND NEW.outcome IS NOT NULL)
BEGIN
  UPDATE journey_step_waiting SET waiting = waiting - 1 WHERE journey_id = NEW.journey_id AND step_id = NEW.step_id;
  INSERT INTO journey_step_stats (journey_id, step_id, hour, panel_id, passed, timed_out)
  VALUES (NEW.journey_id, NEW.step_id, (COALESCE(NEW.resolved_at, unixepoch() * 1000) / 3600000) * 3600000, NEW.panel_id,
    NEW.outcome IN ('event', 'timeout', 'elapsed'), NEW.outcome = 'timeout')
  ON CONFLICT (journey_id, step_id, hour) DO UPDATE SET passed = passed + excluded.passed, timed_out = timed_out + excluded.timed_out;
END;

DROP TRIGGER IF EXISTS journey_step_point_gone;
CREATE TRIGGER journey_step_point_gone AFTER DELETE ON journey_points
WHEN NOT EXISTS (SELECT 1 FROM panels_in_transit WHERE panel_id = OLD.panel_id)
  AND (OLD.kind <> 'start' AND OLD.outcome IS NULL)
BEGIN
  UPDATE journey_step_waiting SET waiting = waiting - 1 WHERE journey_id = OLD.journey_id AND step_id = OLD.step_id;
END;

DROP TRIGGER IF EXISTS journey_message_stats_new;
CREATE TRIGGER journey_message_stats_new AFTER INSERT ON journey_messages
WHEN NOT EXISTS (SELECT 1 FROM panels_in_transit WHERE panel_id = NEW.panel_id)
  AND (NEW.status IN ('sent', 'recorded', 'failed', 'skipped'))
BEGIN
  INSERT INTO journey_channel_stats (journey_id, channel, hour, panel_id, sent, failed, skipped)
  VALUES (NEW.journey_id, NEW.channel, (unixepoch() / 3600) * 3600000, NEW.panel_id,
    NEW.status IN ('sent', 'recorded'), NEW.status = 'failed', NEW.status = 'skipped')
  ON CONFLICT (journey_id, channel, hour) DO UPDATE SET sent = sent + excluded.sent, failed = failed + excluded.failed, skipped = skipped + excluded.skipped;
  INSERT INTO journey_step_stats (journey_id, step_id, hour, panel_id, passed, failed)
  VALUES (NEW.journey_id, NEW.step_id, (unixepoch() / 3600) * 3600000, NEW.panel_id, NEW.status IN ('sent', 'recorded'), NEW.status IN ('failed', 'skipped'))
  ON CONFLICT (journey_id, step_id, hour) DO UPDATE SET passed = passed + excluded.passed, failed = failed + excluded.failed;
END;

DROP TRIGGER IF EXISTS journey_message_stats;
CREATE TRIGGER journey_message_stats AFTER UPDATE OF status ON journey_messages
WHEN NOT EXISTS (SELECT 1 FROM panels_in_transit WHERE panel_id = NEW.panel_id)
  AND (NEW.status IS NOT OLD.status
  AND (NEW.status IN ('sent', 'recorded', 'failed', 'skipped') OR OLD.status IN ('sent', 'recorded', 'failed', 'skipped')))
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

DROP TRIGGER IF EXISTS journey_message_marks_gone;
CREATE TRIGGER journey_message_marks_gone AFTER DELETE ON journey_messages
WHEN NOT EXISTS (SELECT 1 FROM panels_in_transit WHERE panel_id = OLD.panel_id)
BEGIN
  DELETE FROM journey_message_marks WHERE msgid = OLD.msgid;
END;

DROP TRIGGER IF EXISTS journey_channel_events;
CREATE TRIGGER journey_channel_events AFTER INSERT ON events
WHEN NOT EXISTS (SELECT 1 FROM panels_in_transit WHERE panel_id = NEW.panel_id)
  AND (NEW.journey_id IS NOT NULL AND NEW.msgid IS NOT NULL AND NEW.channel <> 'custom_activity'
  AND NEW.name IN ('delivered', 'open', 'click', 'bounce'))
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
