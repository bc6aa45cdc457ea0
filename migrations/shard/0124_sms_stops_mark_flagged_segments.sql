-- Migration 0121's triggers walked the JSON of every segment of the panel (json_tree) for each
-- stop or lift, and wrote each segment reading `reachable: sms` again for every one: the cron's
-- stop copies (5,000 stops a run) and bulk STOP writes cost stops x segments x definition size
-- (issue 42). Now a flag, set by the store from the parsed definition (domain/segments.ts
-- dependenciesOf), names the segments that read it, a partial index finds only those of the
-- panel, and a segment already marked so that its build will see the stop is not written again
-- (decision 0063): a burst of stops writes each such segment once.
ALTER TABLE segments ADD COLUMN on_sms_stops INTEGER NOT NULL DEFAULT 0;

UPDATE segments SET on_sms_stops = 1
WHERE EXISTS (SELECT 1 FROM json_tree(segments.definition) t WHERE t.key = 'reachable' AND t.atom = 'sms');

CREATE INDEX segments_reading_sms_stops ON segments (panel_id) WHERE on_sms_stops = 1;

DROP TRIGGER sms_stop_rebuilds_segments;
DROP TRIGGER sms_lift_rebuilds_segments;

-- Marked as rebuildSegments marks (store/segments.ts): a built segment (build_cursor NULL) gets
-- a build from the first contact; one whose build has passed contacts (build_cursor > 0) gets one
-- more pass after it (rebuild_due). Left as they are: a pass that has not passed any contact yet
-- (build_cursor 0: each page's members are written in the same transaction as its cursor, so the
-- whole pass reads the panel's stops as they are after this one), and one with a pass due already.
CREATE TRIGGER sms_stop_rebuilds_segments AFTER INSERT ON sms_suppressions
BEGIN
  UPDATE segments SET build_cursor = COALESCE(build_cursor, 0), rebuild_due = CASE WHEN build_cursor IS NULL THEN 0 ELSE 1 END
  WHERE panel_id = NEW.panel_id AND on_sms_stops = 1 AND (build_cursor IS NULL OR (build_cursor > 0 AND rebuild_due = 0));
END;

CREATE TRIGGER sms_lift_rebuilds_segments AFTER DELETE ON sms_suppressions
BEGIN
  UPDATE segments SET build_cursor = COALESCE(build_cursor, 0), rebuild_due = CASE WHEN build_cursor IS NULL THEN 0 ELSE 1 END
  WHERE panel_id = OLD.panel_id AND on_sms_stops = 1 AND (build_cursor IS NULL OR (build_cursor > 0 AND rebuild_due = 0));
END;
