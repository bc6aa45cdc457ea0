-- A campaign's sent copies (its test sends among them) for the panel's campaign page.
CREATE INDEX IF NOT EXISTS outbox_by_campaign ON outbox (panel_id, campaign_id, created_at);
