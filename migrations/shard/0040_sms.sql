-- SMS through real providers (issue 19): a panel's provider and its credentials, the numbers
-- that asked to stop, the short links of sent messages, and the panel's message templates.
-- All panel data, on the panel's shard.

-- The panel's SMS provider; no row: the outbox (messages recorded, nothing sent).
CREATE TABLE sms_settings (
  panel_id        TEXT PRIMARY KEY,
  provider        TEXT NOT NULL CHECK (provider IN ('twilio', 'msg91')),
  -- JSON of what is not secret: Twilio account_sid, from, messaging_service_sid; MSG91 sender_id, template_id.
  config          TEXT NOT NULL,
  -- AES-GCM with SECRETS_KEY: the Twilio auth token or the MSG91 authkey.
  credential_enc  TEXT NOT NULL,
  -- AES-GCM with SECRETS_KEY: the path secret of the provider's delivery-report URL.
  hook_token_enc  TEXT NOT NULL,
  updated_at      INTEGER NOT NULL
);

-- Numbers SMS is not sent to: a STOP reply the provider reported, or an operator's entry.
CREATE TABLE sms_suppressions (
  panel_id    TEXT NOT NULL,
  -- Digits only, with the country code (how both providers report the sender of a reply).
  phone       TEXT NOT NULL,
  reason      TEXT NOT NULL CHECK (reason IN ('stop', 'provider', 'operator')),
  created_at  INTEGER NOT NULL,
  PRIMARY KEY (panel_id, phone)
);

-- The links a sent SMS carried, behind {PUBLIC_BASE_URL}/s/{code}; the code is derived from the
-- message and the link, so rendering a message again gives the same codes.
CREATE TABLE sms_links (
  code        TEXT PRIMARY KEY,
  panel_id    TEXT NOT NULL,
  msgid       TEXT NOT NULL,
  url         TEXT NOT NULL,
  created_at  INTEGER NOT NULL
);

CREATE TABLE sms_templates (
  panel_id              TEXT NOT NULL,
  id                    TEXT NOT NULL,
  name                  TEXT NOT NULL,
  body                  TEXT NOT NULL,
  -- India (TRAI DLT): the registered template's id, sent with each message.
  dlt_template_id       TEXT,
  -- The provider's own template (MSG91 flow/template id); absent: the panel's default.
  provider_template_id  TEXT,
  created_at            INTEGER NOT NULL,
  updated_at            INTEGER NOT NULL,
  PRIMARY KEY (panel_id, id)
);

-- What the provider's receipts said of a sent SMS: delivered or failed, and when.
ALTER TABLE journey_messages ADD COLUMN delivery TEXT;
ALTER TABLE journey_messages ADD COLUMN delivery_at INTEGER;

-- SMS waiting for its provider (status 'sending' without a claim), for the cron's re-drive.
CREATE INDEX journey_messages_sms_waiting ON journey_messages (claimed_at, created_at) WHERE channel = 'sms' AND status = 'sending';
