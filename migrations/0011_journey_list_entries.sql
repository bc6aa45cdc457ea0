-- List triggers of journeys, whatever adds the member (CONTRACT 5).
--
-- A contact that joins a list (contact/add with listid, or a bulk upload into a list) leaves
-- an entry here for each running journey of that list, in the same transaction as its
-- membership: a trigger on list_members writes it, so no way of adding members can miss it,
-- and a bulk upload of a million rows writes its entries without a round trip per row. The
-- JOURNEYS queue's consumer (src/journeys/list-entries.ts) enters the contacts and deletes the
-- entries; the entry's id is part of the instance's entry key, so an entry taken twice enters
-- once.

CREATE TABLE journey_list_entries (
  id           INTEGER PRIMARY KEY AUTOINCREMENT,
  panel_id     TEXT NOT NULL,
  journey_id   TEXT NOT NULL,
  list_id      INTEGER NOT NULL,
  contact_id   INTEGER NOT NULL,
  -- A consumer holds the entry until then; an entry whose holder died is taken again after it.
  leased_until INTEGER NOT NULL DEFAULT 0
);

CREATE INDEX journey_list_entries_by_panel ON journey_list_entries (panel_id, id);
CREATE INDEX journey_list_entries_by_contact ON journey_list_entries (panel_id, contact_id);

-- INSERT OR IGNORE of a member already in the list inserts nothing and fires nothing: only a
-- new membership enters. The journeys_running index makes the lookup one probe per row.
CREATE TRIGGER list_members_enter_journeys AFTER INSERT ON list_members
BEGIN
  INSERT INTO journey_list_entries (panel_id, journey_id, list_id, contact_id)
  SELECT NEW.panel_id, j.id, NEW.list_id, NEW.contact_id FROM journeys j
  WHERE j.panel_id = NEW.panel_id AND j.status = 'running' AND j.trigger_type = 'list' AND j.trigger_key = CAST(NEW.list_id AS TEXT);
END;

-- A member removed (from the list, or with the list) before its entry was taken enters nothing.
CREATE TRIGGER list_members_leave_journeys AFTER DELETE ON list_members
BEGIN
  DELETE FROM journey_list_entries WHERE panel_id = OLD.panel_id AND contact_id = OLD.contact_id AND list_id = OLD.list_id;
END;

-- Segment journeys look at every contact again after a bulk upload. An upload that ends while
-- a scan is under way marks it to start over once it has finished (one more pass, however
-- many uploads came), so the contacts it had passed are seen too.
ALTER TABLE journeys ADD COLUMN rescan_due INTEGER NOT NULL DEFAULT 0;
