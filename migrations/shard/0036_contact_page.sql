-- The panel's contact page reads one contact's campaign messages, journey messages and journeys:
-- each read starts with the contact, so each table gets an index that does.
CREATE INDEX IF NOT EXISTS campaign_messages_by_contact ON campaign_messages (panel_id, contact_id);
CREATE INDEX IF NOT EXISTS journey_messages_by_contact ON journey_messages (panel_id, contact_id, created_at);
CREATE INDEX IF NOT EXISTS journey_instances_by_contact ON journey_instances (panel_id, contact_id, entered_at);
