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
