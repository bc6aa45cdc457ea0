-- The SMS stop list (admin GET …/sms/suppressions) pages newest first with a cursor
-- (created_at, phone): without this index each page sorted every stop of the panel. The order
-- is the list's own, created_at descending then phone ascending, so a page is a range read.
CREATE INDEX sms_suppressions_by_time ON sms_suppressions (panel_id, created_at DESC, phone);
