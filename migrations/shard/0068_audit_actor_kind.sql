-- Issue 44 (the audit log of every configuration change): who acted is now one of three kinds:
-- an operator of the panel (actor_id, actor_email: the operator's), the deployment's ADMIN_TOKEN
-- (both NULL), or an API key (actor_id, actor_email: the API user whose key it was). Earlier
-- rows had only the first two, told apart by a NULL actor_id.
ALTER TABLE audit_log ADD COLUMN actor_kind TEXT NOT NULL DEFAULT 'operator';
UPDATE audit_log SET actor_kind = 'admin_token' WHERE actor_id IS NULL;
