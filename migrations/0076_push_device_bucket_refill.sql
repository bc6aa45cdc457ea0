-- Issue 42, shard migration 0110: a push device carries the bucket of the key its shard was
-- chosen by. 0110 set each device's from its owner's row on the same shard; a device whose owner
-- has no row there (a key no contact has yet, a visitor without an anonymous profile) kept
-- bucket 0 on a shard whose bucket back-fill had already finished, as nothing went over the
-- devices again. Each finished shard goes back to the back-fill's devices step
-- (services/retention/buckets.ts), which sets every device's bucket from its key, a bounded page
-- a step, then is done again; a shard still filling reaches that step anyway.
UPDATE bucket_fills
SET phase = 'profiles', cursor = '{"devices":null}', updated_at = CAST(strftime('%s', 'now') AS INTEGER) * 1000
WHERE phase = 'done';
