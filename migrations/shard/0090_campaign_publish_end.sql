-- Issue 43, item 7: an A/B test's wait is counted from the end of its campaign's publication
-- (the last publish step, which splits the recipients into the test's groups), not from its
-- start: a large audience published over many steps still gets the whole wait. Null while
-- recipients are still inserted, and for campaigns whose publication ended before this column.
ALTER TABLE campaigns ADD COLUMN published_end_at INTEGER;
