-- A saved segment's `reachable: sms` (store/segment-sql.ts) reads the shard's sms_suppressions,
-- but a stop or a lift changes no contact, so nothing re-checked its stored members: a stopped
-- number stayed a member (and a segment journey's entry) until the segment was edited. A stop
-- is by number and may name several contacts, found only by a scan of the panel's contacts
-- (MOBILE has no index), so each stop or lift that changes the shard's rows marks the panel's
-- segments reading `reachable: sms` for a build there, as a bulk upload does
-- (store/segments.ts rebuildSegments): one due at once, or one more after a build under way,
-- however many stops arrive meanwhile. Every writer (an operator, a STOP or START reply, a
-- provider's opt-out, a contact's preferences, the cron's copies, an erasure's re-keying, a
-- move's copy) is covered, and a stop already held (ON CONFLICT DO NOTHING) marks nothing.
CREATE TRIGGER sms_stop_rebuilds_segments AFTER INSERT ON sms_suppressions
BEGIN
  UPDATE segments SET build_cursor = COALESCE(build_cursor, 0), rebuild_due = CASE WHEN build_cursor IS NULL THEN 0 ELSE 1 END
  WHERE panel_id = NEW.panel_id AND EXISTS (SELECT 1 FROM json_tree(segments.definition) t WHERE t.key = 'reachable' AND t.atom = 'sms');
END;

CREATE TRIGGER sms_lift_rebuilds_segments AFTER DELETE ON sms_suppressions
BEGIN
  UPDATE segments SET build_cursor = COALESCE(build_cursor, 0), rebuild_due = CASE WHEN build_cursor IS NULL THEN 0 ELSE 1 END
  WHERE panel_id = OLD.panel_id AND EXISTS (SELECT 1 FROM json_tree(segments.definition) t WHERE t.key = 'reachable' AND t.atom = 'sms');
END;
