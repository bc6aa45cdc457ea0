-- Real push channels (issue 19): web push (VAPID, RFC 8291) and app push through Firebase Cloud
-- Messaging HTTP v1. A panel's settings, and the browsers and app installs that subscribed.

-- The panel's push setup; no row, or a channel's columns empty: that channel's messages go to
-- the outbox (recorded, nothing sent).
CREATE TABLE IF NOT EXISTS push_settings (
  panel_id              TEXT PRIMARY KEY,
  -- Web push: the VAPID contact (mailto: or https:), the public key browsers subscribe with
  -- (uncompressed P-256 point, base64url), and the private key (AES-GCM with SECRETS_KEY).
  -- The keys stay when the web push setting is changed or turned off: subscriptions are bound to them.
  vapid_subject         TEXT,
  vapid_public_key      TEXT,
  vapid_private_enc     TEXT,
  -- FCM: the service account's project and client email; its private key encrypted.
  fcm_project_id        TEXT,
  fcm_client_email      TEXT,
  fcm_private_key_enc   TEXT,
  updated_at            INTEGER NOT NULL
);

-- Where a contact (or an anonymous visitor, by uniqueid) receives push: a browser's push
-- subscription (kind 'web': endpoint and its keys) or an app install's FCM token (kind 'app').
CREATE TABLE IF NOT EXISTS push_subscriptions (
  panel_id      TEXT NOT NULL,
  kind          TEXT NOT NULL CHECK (kind IN ('web', 'app')),
  -- The web subscription's endpoint URL, or the FCM registration token.
  address       TEXT NOT NULL,
  p256dh        TEXT,
  auth          TEXT,
  platform      TEXT,
  -- The contact's primary-key value, when the site or app knew it.
  contact_key   TEXT,
  uniqueid      TEXT,
  created_at    INTEGER NOT NULL,
  updated_at    INTEGER NOT NULL,
  PRIMARY KEY (panel_id, kind, address)
) WITHOUT ROWID;

CREATE INDEX IF NOT EXISTS push_subscriptions_by_contact ON push_subscriptions (panel_id, contact_key) WHERE contact_key IS NOT NULL;
CREATE INDEX IF NOT EXISTS push_subscriptions_by_uniqueid ON push_subscriptions (panel_id, uniqueid) WHERE uniqueid IS NOT NULL;

-- Push messages waiting for their nudge, for the cron's re-drive (as SMS: 0040).
CREATE INDEX IF NOT EXISTS journey_messages_push_waiting ON journey_messages (claimed_at, created_at) WHERE channel IN ('apn', 'bpn') AND status = 'sending';
