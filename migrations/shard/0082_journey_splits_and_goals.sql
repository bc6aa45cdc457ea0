-- Issue 46 (decision 0042): A/B split steps and journey goals.

-- One row per instance that passed a split step: the branch it took, written in the batch that
-- continues the point (INSERT OR IGNORE on the key, so a step run again takes no second branch).
-- The goal is copied from the instance's version, so the pipeline marks a conversion from the
-- row alone: goal_kind 'activity' (goal_key: the activity's lower-case name), 'open' or 'click'
-- (of a message of the same instance); converted_at is set once, by the first event in time.
-- Kept when housekeeping prunes the instance: the split's report counts them.
CREATE TABLE journey_split_entries (
  instance_id  TEXT NOT NULL,
  step_id      TEXT NOT NULL,
  panel_id     TEXT NOT NULL,
  journey_id   TEXT NOT NULL,
  contact_id   INTEGER NOT NULL,
  branch       TEXT NOT NULL,
  at           INTEGER NOT NULL,
  goal_kind    TEXT CHECK (goal_kind IN ('activity', 'open', 'click')),
  goal_key     TEXT,
  goal_until   INTEGER,
  converted_at INTEGER,
  PRIMARY KEY (instance_id, step_id)
) WITHOUT ROWID;

CREATE INDEX journey_split_entries_by_step ON journey_split_entries (journey_id, step_id, branch);

-- Goals still open, found by the contact whose activity may reach them.
CREATE INDEX journey_split_entries_open ON journey_split_entries (panel_id, contact_id) WHERE converted_at IS NULL AND goal_kind IS NOT NULL;

-- Instances that left their journey because the contact reached the journey's goal (its
-- instance is then exited): the journey page's conversions. Kept when the instance is pruned.
CREATE TABLE journey_conversions (
  instance_id TEXT PRIMARY KEY,
  panel_id    TEXT NOT NULL,
  journey_id  TEXT NOT NULL,
  contact_id  INTEGER NOT NULL,
  event_id    INTEGER,
  at          INTEGER NOT NULL
) WITHOUT ROWID;

CREATE INDEX journey_conversions_by_journey ON journey_conversions (journey_id, at);

CREATE INDEX journey_conversions_by_contact ON journey_conversions (panel_id, contact_id);
