-- Issue 42, done-item 2 (decision 0038, step 4): a campaign's recipients are inserted in bounded
-- steps, each over one range of contact ids (FANOUT_CHUNK_IDS), from a queued task that resumes
-- where the last committed step ended (services/broadcasts/publish.ts). What a step needs is
-- kept on the campaign and moved by the step's own transaction, so a crash repeats no step:
--   publish_after  contact ids above it are still to go through; NULL: every recipient is in
--                  (campaigns published before this change, and every one once done)
--   publish_until  the shard's largest contact id when publishing began: contacts made later
--                  are not recipients, as they were not under the one INSERT ... SELECT before
--   publish_batch  the number of the next send batch a step's recipients start
ALTER TABLE campaigns ADD COLUMN publish_after INTEGER;
ALTER TABLE campaigns ADD COLUMN publish_until INTEGER;
ALTER TABLE campaigns ADD COLUMN publish_batch INTEGER NOT NULL DEFAULT 0;

-- A list emptied or deleted loses its members in the same kind of bounded steps, each one
-- DELETE over a range of contact ids (the member counter's triggers keep its count right as
-- each step commits; services/lists/clear.ts):
--   clear_after  member contact ids above it are still to go; NULL: nothing pending
--   clear_until  emptying: the shard's largest contact id when asked (NULL for a delete: all)
--   clear_at     emptying: when asked; members added since stay (NULL for a delete: all)
--   deleted_at   deleted: the list is gone for every read and its name free at once; the row
--                itself goes with the last step (its number stays taken until then)
ALTER TABLE lists ADD COLUMN clear_after INTEGER;
ALTER TABLE lists ADD COLUMN clear_until INTEGER;
ALTER TABLE lists ADD COLUMN clear_at INTEGER;
ALTER TABLE lists ADD COLUMN deleted_at INTEGER;
-- When the clear last moved on: a clear whose step nudge was lost is nudged again (cron).
ALTER TABLE lists ADD COLUMN clear_step_at INTEGER;
CREATE INDEX lists_clearing ON lists (clear_step_at) WHERE clear_after IS NOT NULL;

-- panel_sent: messages the outbox provider kept per panel and 15-minute slot of their
--   creation (epoch ms of the slot's start), counted by a trigger on outbox (an insert the
--   outbox ignores as a repeat counts nothing), so Home's "sends today" in the panel's zone is a
--   sum of at most 96 rows instead of a count of the day's outbox rows, as panel_received is for
--   events (migration 0062). The count refresh drops a panel's slots older than two days.
CREATE TABLE panel_sent (
  panel_id TEXT NOT NULL,
  slot     INTEGER NOT NULL,
  n        INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (panel_id, slot)
) WITHOUT ROWID;

CREATE TRIGGER outbox_count_sent AFTER INSERT ON outbox
WHEN NOT EXISTS (SELECT 1 FROM panels_in_transit WHERE panel_id = NEW.panel_id)
BEGIN
  INSERT INTO panel_sent (panel_id, slot, n) VALUES (NEW.panel_id, (NEW.created_at / 900000) * 900000, 1)
  ON CONFLICT (panel_id, slot) DO UPDATE SET n = n + 1;
END;

-- The last two days, counted once from the outbox held.
INSERT INTO panel_sent (panel_id, slot, n)
SELECT panel_id, (created_at / 900000) * 900000 AS slot, COUNT(*) FROM outbox
WHERE created_at >= (unixepoch() - 2 * 86400) * 1000
GROUP BY panel_id, slot
ON CONFLICT (panel_id, slot) DO NOTHING;
