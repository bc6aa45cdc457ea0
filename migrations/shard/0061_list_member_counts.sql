-- Issue 42: a list's member count is a maintained counter, so lists/getall, a list's view and
-- the admin lists screen read one column instead of counting list_members on every read
-- (0.18 s per 2 M-member list). The triggers below keep it for every writer of list_members
-- (adds, imports, removals, list empty/delete, contact delete and erasure): an INSERT OR IGNORE
-- that ignores a row fires no trigger, so a member added twice counts once.
-- A panel in transit (migration 0054) is left alone: a move copies lists rows with their count,
-- and the cleanup on the shard it left deletes without counting.
ALTER TABLE lists ADD COLUMN member_count INTEGER NOT NULL DEFAULT 0;

UPDATE lists SET member_count = (SELECT COUNT(*) FROM list_members m WHERE m.list_id = lists.id AND m.panel_id = lists.panel_id);

CREATE TRIGGER list_members_count_in AFTER INSERT ON list_members
WHEN NOT EXISTS (SELECT 1 FROM panels_in_transit WHERE panel_id = NEW.panel_id)
BEGIN
  UPDATE lists SET member_count = member_count + 1 WHERE panel_id = NEW.panel_id AND id = NEW.list_id;
END;

CREATE TRIGGER list_members_count_out AFTER DELETE ON list_members
WHEN NOT EXISTS (SELECT 1 FROM panels_in_transit WHERE panel_id = OLD.panel_id)
BEGIN
  UPDATE lists SET member_count = member_count - 1 WHERE panel_id = OLD.panel_id AND id = OLD.list_id;
END;
