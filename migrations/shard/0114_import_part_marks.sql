-- Issue 42: a partitioned import's part on a shard other than the panel's home counts the
-- contacts it created as the home's chunk does, by the shard's highest contact id taken first in
-- its batch (store/imports.ts importPartStatements), instead of probing every key of the part
-- before its upsert (a fifth of the part's SQLite work). A row lives only inside the batch that
-- writes it: the batch's last statement deletes it and answers the count, so a shard holds none
-- between batches and a panel move has nothing here to copy.
CREATE TABLE IF NOT EXISTS import_part_marks (
  job_id TEXT PRIMARY KEY,
  mark   INTEGER NOT NULL
) WITHOUT ROWID;
