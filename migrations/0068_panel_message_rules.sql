-- Issue 46: the panel's frequency caps and quiet hours per channel (JSON, domain/message-rules.ts
-- messageRulesSchema); '{}' is no rules.
ALTER TABLE panels ADD COLUMN message_rules TEXT NOT NULL DEFAULT '{}';
