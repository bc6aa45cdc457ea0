-- Who asked for an erasure, and whether its `contact.erased` audit entry is written
-- (services/contacts/erase.ts, decision 0064). The entry follows the erasure's record, not the
-- request: whichever of the request, its retry or the cron completes the erasure writes it,
-- once, naming the requester kept here (JSON: the actor as the audit log records it). Erasures
-- recorded before this column have no requester and count as audited: their requests wrote
-- their entries, or died without a name to give one.
ALTER TABLE contact_erasures ADD COLUMN requested_by TEXT;
ALTER TABLE contact_erasures ADD COLUMN audited_at INTEGER;
UPDATE contact_erasures SET audited_at = created_at;
-- Erasures completed whose entry is still to write: few, each for a moment (or a request that died).
CREATE INDEX IF NOT EXISTS contact_erasures_unaudited ON contact_erasures (created_at) WHERE audited_at IS NULL AND state <> 'pending';
