-- Import jobs are held by the consumer running a step: a lease it takes before the step and
-- refreshes while the step runs (a heartbeat, whatever the step waits for: a slow download
-- shows no progress for minutes). A job whose holder died is found by its expired lease and
-- re-driven within about a minute; a job whose holder is alive is never run twice at once.
ALTER TABLE import_jobs ADD COLUMN lease TEXT;
ALTER TABLE import_jobs ADD COLUMN leased_until INTEGER;
