-- A consumer pass holds the event batches it takes by a lease it renews between pieces of
-- work; a second message naming a held batch leaves it alone, and a batch whose holder died
-- is found by its expired lease and re-driven within about a minute (instead of after ten).
-- A batch whose message waits for a retry has its nudge time moved to when the retry comes.
ALTER TABLE event_batches ADD COLUMN lease TEXT;
ALTER TABLE event_batches ADD COLUMN leased_until INTEGER NOT NULL DEFAULT 0;
