-- A membership deleted while a fence on this shard covers its bucket is not counted out of its
-- list (decision 0047): the deletes a fence lets pass are of a split source's copies of the moved
-- members (its cleaning's, or a caller's holding the map from before the switch), and the switch
-- recounts the source's lists without them (store/lists.ts recountStayingMembersStatement).
-- Before, the source's counters kept the moved members until cleaning deleted them, and the
-- figure summed over the shards counted them twice. The fence's record is the row
-- `<panel>/fence/FFFF-LLLL` of panels_in_transit (store/panel-move/triggers.ts fenceMark).
DROP TRIGGER list_members_count_out;

CREATE TRIGGER list_members_count_out AFTER DELETE ON list_members
WHEN NOT EXISTS (SELECT 1 FROM panels_in_transit WHERE panel_id = OLD.panel_id)
  AND NOT EXISTS (SELECT 1 FROM panels_in_transit f WHERE f.panel_id >= OLD.panel_id || '/fence/' AND f.panel_id < OLD.panel_id || '/fence0'
    AND OLD.bucket BETWEEN CAST(substr(f.panel_id, length(OLD.panel_id) + 8, 4) AS INTEGER) AND CAST(substr(f.panel_id, length(OLD.panel_id) + 13, 4) AS INTEGER))
BEGIN
  UPDATE lists SET member_count = member_count - 1 WHERE panel_id = OLD.panel_id AND id = OLD.list_id;
END;
