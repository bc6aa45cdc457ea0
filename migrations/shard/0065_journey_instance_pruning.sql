-- Issue 42, bounded storage: housekeeping prunes journey instances JOURNEY_INSTANCES_DAYS after
-- they ended (completed or exited), with their points, step runs and messages. What the journey
-- page counts of them is kept here first, in the same batch that deletes them.

-- Finished instances found oldest first across the shard.
CREATE INDEX journey_instances_finished ON journey_instances (ended_at) WHERE status <> 'active';

-- Pruned instances per journey and version (store/journeys/instances.ts adds them to the rows
-- still there): the journey's entered/completed/exited counters and each version's entries.
CREATE TABLE journey_pruned (
  journey_id TEXT NOT NULL,
  version    INTEGER NOT NULL,
  panel_id   TEXT NOT NULL,
  completed  INTEGER NOT NULL DEFAULT 0,
  exited     INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (journey_id, version)
) WITHOUT ROWID;

-- Pruned step runs per step: the counter of instances each step acted for.
CREATE TABLE journey_pruned_steps (
  journey_id TEXT NOT NULL,
  step_id    TEXT NOT NULL,
  panel_id   TEXT NOT NULL,
  acted      INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (journey_id, step_id)
) WITHOUT ROWID;

-- Entry keys that make a contact enter once for good (`segment:<contact>`) of pruned instances:
-- entering checks them as it checks the instances' own keys. Event and list-entry keys name one
-- trigger, never seen again once its redelivery is over, so they are not kept.
CREATE TABLE journey_entry_keys (
  journey_id TEXT NOT NULL,
  entry_key  TEXT NOT NULL,
  panel_id   TEXT NOT NULL,
  PRIMARY KEY (journey_id, entry_key)
) WITHOUT ROWID;
