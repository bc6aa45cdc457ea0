-- Migration 0033 on every shard (the same name: a database that is both control and shard 0 runs it once).
-- A panel's own tracking domain (issue 21): links, the open pixel and the unsubscribe link of
-- its email on a host of the sender's domain (a CNAME to the Worker), used once verified.
CREATE TABLE tracking_domains (
  panel_id    TEXT PRIMARY KEY,
  domain      TEXT NOT NULL,
  verified    INTEGER NOT NULL DEFAULT 0,
  checked_at  INTEGER,
  created_at  INTEGER NOT NULL
);
