-- 0016: a search candidate must belong to a recorded search event, checked
-- once per write instead of once per row.
--
-- Migration 0012 kept the foreign key from receipts.search_candidates to
-- receipts.search_events, both partitioned by day. PostgreSQL checks such a
-- key with one query per inserted row against the partitioned events table,
-- and a search writes its whole pool (50 candidates) in one statement:
-- psql, EXPLAIN ANALYZE of that insert at 100k products, the key's trigger
-- took 8-14 ms of the statement's 9-16 ms; the receipt write was the
-- largest stage after the arms (6.6 ms p50 of a 38 ms search).
--
-- The same rule, as statement triggers with transition tables:
--
-- * after an insert into search_candidates, every (search_event_id,
--   event_created_at) among the new rows must name an existing event
--   (one query for the whole statement: 0.2 ms for 50 rows);
-- * after a delete from search_events, no candidate may still name a
--   deleted event (only the owner deletes: receipts.purge removes a day's
--   candidates before its events).
--
-- The runtime role may only select and insert receipts (0005, 0012), so no
-- write of the service can change an event's key or delete it. Running this
-- file again changes nothing.

CREATE OR REPLACE FUNCTION receipts.candidates_name_events() RETURNS trigger
    LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (
        SELECT 1 FROM new_candidates n
        WHERE NOT EXISTS (
            SELECT 1 FROM receipts.search_events e
            WHERE e.search_event_id = n.search_event_id
              AND e.created_at = n.event_created_at))
    THEN
        RAISE EXCEPTION 'a search candidate names no recorded search event'
            USING ERRCODE = 'foreign_key_violation';
    END IF;
    RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION receipts.events_keep_their_candidates() RETURNS trigger
    LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (
        SELECT 1 FROM old_events o
        JOIN receipts.search_candidates c
          ON c.search_event_id = o.search_event_id
         AND c.event_created_at = o.created_at)
    THEN
        RAISE EXCEPTION 'a deleted search event still has candidates'
            USING ERRCODE = 'foreign_key_violation';
    END IF;
    RETURN NULL;
END
$$;

DROP TRIGGER IF EXISTS candidates_name_events ON receipts.search_candidates;
CREATE TRIGGER candidates_name_events
    AFTER INSERT ON receipts.search_candidates
    REFERENCING NEW TABLE AS new_candidates
    FOR EACH STATEMENT EXECUTE FUNCTION receipts.candidates_name_events();

DROP TRIGGER IF EXISTS events_keep_their_candidates ON receipts.search_events;
CREATE TRIGGER events_keep_their_candidates
    AFTER DELETE ON receipts.search_events
    REFERENCING OLD TABLE AS old_events
    FOR EACH STATEMENT EXECUTE FUNCTION receipts.events_keep_their_candidates();

-- The triggers above hold the rule now; the per-row key goes.
DO $$
DECLARE
    fk name;
BEGIN
    FOR fk IN
        SELECT con.conname FROM pg_constraint con
        WHERE con.conrelid = 'receipts.search_candidates'::regclass
          AND con.contype = 'f'
          AND con.confrelid = 'receipts.search_events'::regclass
    LOOP
        EXECUTE format('ALTER TABLE receipts.search_candidates DROP CONSTRAINT %I', fk);
    END LOOP;
END
$$;
