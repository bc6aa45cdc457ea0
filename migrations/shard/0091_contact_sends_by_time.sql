-- Housekeeping prunes contact_sends past the longest frequency-cap window (90 days): the rows in
-- time order, so each pruning statement reads only what it removes.
CREATE INDEX contact_sends_by_at ON contact_sends (at);
