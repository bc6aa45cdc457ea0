-- A segment saved (or edited) is unknown for up to PANEL_SEGMENTS_CACHE_MS to isolates that
-- cached the panel's segments before: a contact they write meanwhile is not re-checked against it,
-- and its build may have passed that contact already. recheck_upto: the highest contact id the
-- build reached while that window was open (NULL: nothing to re-check); once the window is over
-- and the build done, those contacts are re-checked in pages from the top down (the column moves
-- down to the next page's end), and it goes back to NULL (services/segments/membership.ts).
ALTER TABLE segments ADD COLUMN recheck_upto INTEGER;
CREATE INDEX segments_rechecking ON segments (checked_at) WHERE recheck_upto IS NOT NULL;
