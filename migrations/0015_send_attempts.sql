-- Sends through a provider without an idempotency key (SES) record that the provider call is
-- about to be made, right before making it. A claim whose holder died is then redone where
-- provably nothing reached the provider (no attempt recorded), and settled as failed with an
-- unknown outcome where the call may have happened: at most once, never guessed as sent.
ALTER TABLE campaign_messages ADD COLUMN attempted_at INTEGER;

-- Journey email is claimed the same way: a claim token and its time (renewed while the send
-- runs), so a claim whose holder died can be told from one still being sent.
ALTER TABLE journey_messages ADD COLUMN claim TEXT;
ALTER TABLE journey_messages ADD COLUMN claimed_at INTEGER;
ALTER TABLE journey_messages ADD COLUMN attempted_at INTEGER;
