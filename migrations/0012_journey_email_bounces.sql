-- Bounces of journey email: the provider's message id of each sent journey email, so a bounce
-- the provider reports (SES through SNS) finds its message as it finds a campaign's.

ALTER TABLE journey_messages ADD COLUMN provider_msg_id TEXT;

CREATE INDEX journey_messages_by_provider_id ON journey_messages (provider_msg_id) WHERE provider_msg_id IS NOT NULL;
