-- A waiting point and a push device deleted while a fence on this shard covers their bucket are
-- not counted out (decision 0047), as 0117 does for list members: the deletes a fence lets pass
-- are of a split source's copies of the moved rows (its cleaning's), and the switch recounts the
-- source's waiting gauges and push counters without them (store/journeys/points.ts
-- recountWaitingStatements, store/push.ts recountPushStatement). Before, the source's gauges kept
-- the moved waits and devices until cleaning deleted them, and the figures summed over the shards
-- (a journey's report, the push screen) counted them twice. The fence's record is the row
-- `<panel>/fence/FFFF-LLLL` of panels_in_transit (store/panel-move/triggers.ts fenceMark).
DROP TRIGGER journey_step_point_gone;

CREATE TRIGGER journey_step_point_gone AFTER DELETE ON journey_points
WHEN NOT EXISTS (SELECT 1 FROM panels_in_transit WHERE panel_id = OLD.panel_id)
  AND (OLD.kind <> 'start' AND OLD.outcome IS NULL)
  AND NOT EXISTS (SELECT 1 FROM panels_in_transit f WHERE f.panel_id >= OLD.panel_id || '/fence/' AND f.panel_id < OLD.panel_id || '/fence0'
    AND OLD.bucket BETWEEN CAST(substr(f.panel_id, length(OLD.panel_id) + 8, 4) AS INTEGER) AND CAST(substr(f.panel_id, length(OLD.panel_id) + 13, 4) AS INTEGER))
BEGIN
  UPDATE journey_step_waiting SET waiting = waiting - 1 WHERE journey_id = OLD.journey_id AND step_id = OLD.step_id;
END;

DROP TRIGGER push_subscriptions_count_out;

CREATE TRIGGER push_subscriptions_count_out AFTER DELETE ON push_subscriptions
WHEN NOT EXISTS (SELECT 1 FROM panels_in_transit WHERE panel_id = OLD.panel_id)
  AND NOT EXISTS (SELECT 1 FROM panels_in_transit f WHERE f.panel_id >= OLD.panel_id || '/fence/' AND f.panel_id < OLD.panel_id || '/fence0'
    AND OLD.bucket BETWEEN CAST(substr(f.panel_id, length(OLD.panel_id) + 8, 4) AS INTEGER) AND CAST(substr(f.panel_id, length(OLD.panel_id) + 13, 4) AS INTEGER))
BEGIN
  UPDATE push_counts SET n = n - 1 WHERE panel_id = OLD.panel_id AND kind = OLD.kind;
END;
