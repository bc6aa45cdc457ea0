-- Erasing a contact (right to erasure): its rows are found by contact, the outbox's copies by
-- address or number.
CREATE INDEX IF NOT EXISTS journey_points_by_contact ON journey_points (panel_id, contact_id);
CREATE INDEX IF NOT EXISTS segment_changes_by_contact ON segment_changes (panel_id, contact_id);
CREATE INDEX IF NOT EXISTS outbox_by_recipient ON outbox (panel_id, recipient);
CREATE INDEX IF NOT EXISTS sms_links_by_message ON sms_links (panel_id, msgid);

-- An erasure whose archived days are still being rewritten: `owners` are the archive owner keys
-- (c:{contact id}, u:{uniqueid}) whose events leave the archive; the row goes once none is left.
-- It names no address or key of the contact, only ids.
CREATE TABLE IF NOT EXISTS contact_erasures (
  id          TEXT PRIMARY KEY,
  panel_id    TEXT NOT NULL,
  contact_id  INTEGER NOT NULL,
  owners      TEXT NOT NULL,
  state       TEXT NOT NULL CHECK (state IN ('archive', 'done')),
  parts_done  INTEGER NOT NULL DEFAULT 0,
  created_at  INTEGER NOT NULL,
  finished_at INTEGER
);
CREATE INDEX IF NOT EXISTS contact_erasures_pending ON contact_erasures (created_at) WHERE state = 'archive';
