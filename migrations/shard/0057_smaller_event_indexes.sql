-- Issue 15, decision 0034: fewer, smaller and less scattered index entries for every event the
-- pipeline stores. A pass's entries land all over an index, so storing them rewrites pages all
-- over it; that page I/O, more than the statements, was most of the pipeline's CPU.
--
-- The indexes of events after this migration and the queries that use each:
-- events_by_contact (contact_id, occurred_at, id): a contact's history page (store/events.ts
--   listEventsOf), segment probes (segment-sql.ts, INDEXED BY), journey email engagement on the
--   contact page, erasure. Without panel_id: contact ids are unique in the shard (they keep
--   their range when a panel moves, decision 0030), so the panel added 20 bytes to each entry
--   and nothing to a lookup. Readers name the panel as `+panel_id`, checked on the row.
-- events_by_uniqueid (panel_id, uniqueid, occurred_at, id) WHERE uniqueid IS NOT NULL AND
--   identity IS NULL: only events recorded without an identity (joined to a contact since or
--   not): an anonymous visitor's history, the trigger anon_profiles_join_history, erasure.
--   An event recorded with an identity and a uniqueid belongs to the identity's contact; the
--   pair is kept once in uniqueid_contacts (the pipeline adds new pairs as it stores events),
--   and a uniqueid's identified events are read among the events of each contact it was seen
--   with (listEventsOf, store/erasure.ts).
-- events_by_name (panel_id, channel, name, occurred_at, id, contact_id): segment scans and
--   retention, as before. Events of the same time now sort by id, as they arrive, instead of
--   by contact: a batch of events sharing a timestamp appends to the index instead of writing
--   a page per contact. contact_id stays in it, so segment scans still read no row.

DROP INDEX IF EXISTS events_by_contact;
CREATE INDEX events_by_contact ON events (contact_id, occurred_at, id);

CREATE TABLE IF NOT EXISTS uniqueid_contacts (
  panel_id   TEXT NOT NULL,
  uniqueid   TEXT NOT NULL,
  contact_id INTEGER NOT NULL,
  PRIMARY KEY (panel_id, uniqueid, contact_id)
) WITHOUT ROWID;

-- A contact's erasure removes its pairs.
CREATE INDEX IF NOT EXISTS uniqueid_contacts_by_contact ON uniqueid_contacts (contact_id);

INSERT INTO uniqueid_contacts (panel_id, uniqueid, contact_id)
SELECT DISTINCT panel_id, uniqueid, contact_id FROM events
WHERE uniqueid IS NOT NULL AND identity IS NOT NULL AND contact_id IS NOT NULL
ON CONFLICT DO NOTHING;

DROP INDEX IF EXISTS events_by_uniqueid;
CREATE INDEX events_by_uniqueid ON events (panel_id, uniqueid, occurred_at, id) WHERE uniqueid IS NOT NULL AND identity IS NULL;

DROP INDEX IF EXISTS events_by_name;
CREATE INDEX events_by_name ON events (panel_id, channel, name, occurred_at, id, contact_id);

-- Events still without a contact were recorded without an identity: the join reads them in the
-- partial index (the condition names it, so the planner may use it).
DROP TRIGGER IF EXISTS anon_profiles_join_history;
CREATE TRIGGER anon_profiles_join_history AFTER INSERT ON anon_profiles
WHEN NOT EXISTS (SELECT 1 FROM panels_in_transit WHERE panel_id = NEW.panel_id)
BEGIN
  UPDATE events SET contact_id = NEW.contact_id
  WHERE panel_id = NEW.panel_id AND uniqueid = NEW.uniqueid AND identity IS NULL AND contact_id IS NULL;
END;
