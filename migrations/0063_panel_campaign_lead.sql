-- Issue 43: how far ahead the panel's own campaigns must be scheduled, in minutes; NULL keeps
-- the deployment's BROADCAST_LEAD_MINUTES (90). At 0 the panel offers "Send now". The apiv2
-- upload_contact_and_publish keeps the deployment's rule (4.10) whatever this says.
ALTER TABLE panels ADD COLUMN campaign_lead_minutes INTEGER;
