-- Ended journey points are leased by whoever continues them: the caller that ended them (an
-- awaited event, the cron firing timers, an entry) until a minute later, or a consumer that
-- took a page of them. A point whose holder died is free again when its lease runs out; the
-- cron hands free points to the JOURNEYS queue in pages, so a backlog a crash left behind is
-- continued at the consumers' speed. Existing points start free (0).
ALTER TABLE journey_points ADD COLUMN leased_until INTEGER NOT NULL DEFAULT 0;

DROP INDEX journey_points_to_continue;
CREATE INDEX journey_points_to_continue ON journey_points (journey_id, leased_until) WHERE outcome IS NOT NULL AND continued_at IS NULL;
