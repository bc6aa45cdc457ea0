-- A segment saved (or edited), or a segment journey started (or given a new version), is unknown
-- for up to 10 s (PANEL_SEGMENTS_CACHE_MS, LIVE_JOURNEYS_CACHE_MS) to isolates that cached the
-- panel's segments or live journeys before: a contact they write meanwhile is not checked against
-- it, and its build or entry scan may have passed that contact already.
-- segments.recheck_upto, journeys.rescan_upto: the highest contact id the build or scan reached
-- while that window was open (NULL: nothing to look at again); once the window is over and the
-- build or scan done, those contacts are checked again in pages from the top down (the column
-- moves down to the next page's end), then it goes back to NULL (services/segments/membership.ts,
-- services/journeys/contact-triggers.ts).
ALTER TABLE segments ADD COLUMN recheck_upto INTEGER;
CREATE INDEX segments_rechecking ON segments (checked_at) WHERE recheck_upto IS NOT NULL;
ALTER TABLE journeys ADD COLUMN rescan_upto INTEGER;
CREATE INDEX journeys_rescanning ON journeys (updated_at) WHERE rescan_upto IS NOT NULL;
