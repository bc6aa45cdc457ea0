-- Who did what in a panel, for its owners: key rotations, API mode, webhooks, campaigns,
-- journeys, users and operators. Newest first by id.
CREATE TABLE IF NOT EXISTS audit_log (
  id          INTEGER PRIMARY KEY AUTOINCREMENT,
  panel_id    TEXT NOT NULL,
  at          INTEGER NOT NULL,
  -- The operator who acted (id and email as they were), or NULL for the deployment's ADMIN_TOKEN.
  actor_id    TEXT,
  actor_email TEXT,
  action      TEXT NOT NULL,
  -- What the action was about: a user, webhook, campaign, journey or operator id, or the panel's.
  target      TEXT NOT NULL,
  -- JSON: what changed (names of changed settings, a new role...), never secrets.
  detail      TEXT NOT NULL DEFAULT '{}'
);

CREATE INDEX IF NOT EXISTS audit_log_by_panel ON audit_log (panel_id, id);
