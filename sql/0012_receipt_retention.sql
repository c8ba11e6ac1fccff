-- 0012: receipts are kept for a set time, and dropping old ones is cheap.
--
-- Both receipt tables are partitioned by UTC day: an event by its
-- created_at, a candidate by its event's created_at (event_created_at,
-- which defaults to now() and so equals the event's own created_at when
-- both are written in one transaction, as every receipt is). Expiring a day
-- drops two partitions instead of deleting rows.
--
-- receipts.purge(retention_days) (owner role only: `mosaic receipts purge`,
-- or pg_cron in AWS) drops every day partition that ended more than
-- retention_days days ago, deletes expired rows that sit in the default
-- partitions, and creates the day partitions of the coming week. A row with
-- no day partition of its own lands in the default partition, so a write
-- never fails for want of a partition.
--
-- Existing receipts are moved into the new tables with their rows
-- unchanged. Running this file again changes nothing: every step checks
-- what is already there.

-- Creates the day partitions of both tables for first_day..last_day
-- (inclusive) that do not exist yet. A day whose rows already sit in a
-- default partition is skipped (PostgreSQL would refuse the partition);
-- purge deletes those rows once they expire. Returns the days created.
CREATE OR REPLACE FUNCTION receipts.ensure_day_partitions(first_day date, last_day date)
RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
    d       date := first_day;
    lo      timestamptz;
    hi      timestamptz;
    created integer := 0;
BEGIN
    WHILE d <= last_day LOOP
        lo := d::timestamp AT TIME ZONE 'UTC';
        hi := (d + 1)::timestamp AT TIME ZONE 'UTC';
        IF to_regclass(format('receipts.search_events_p%s', to_char(d, 'YYYYMMDD'))) IS NULL
           AND NOT EXISTS (SELECT 1 FROM receipts.search_events_default
                           WHERE created_at >= lo AND created_at < hi)
           AND NOT EXISTS (SELECT 1 FROM receipts.search_candidates_default
                           WHERE event_created_at >= lo AND event_created_at < hi) THEN
            EXECUTE format('CREATE TABLE receipts.%I PARTITION OF receipts.search_events FOR VALUES FROM (%L) TO (%L)',
                           'search_events_p' || to_char(d, 'YYYYMMDD'), lo, hi);
            EXECUTE format('CREATE TABLE receipts.%I PARTITION OF receipts.search_candidates FOR VALUES FROM (%L) TO (%L)',
                           'search_candidates_p' || to_char(d, 'YYYYMMDD'), lo, hi);
            created := created + 1;
        END IF;
        d := d + 1;
    END LOOP;
    RETURN created;
END
$$;

-- Drops the receipts older than retention_days whole UTC days (a receipt
-- lives at least retention_days and less than retention_days + 1 days,
-- plus the time until the next purge), then prepares the coming week.
CREATE OR REPLACE FUNCTION receipts.purge(retention_days integer)
RETURNS TABLE (dropped_days integer, deleted_events bigint, deleted_candidates bigint, created_days integer)
LANGUAGE plpgsql AS $$
DECLARE
    today  date := (now() AT TIME ZONE 'UTC')::date;
    cutoff date;
    part   record;
BEGIN
    IF retention_days IS NULL OR retention_days < 1 THEN
        RAISE EXCEPTION 'retention_days must be at least 1, not %', retention_days;
    END IF;
    cutoff := today - retention_days;
    dropped_days := 0;
    -- Candidates first: they reference the events.
    FOR part IN
        SELECT c.relname AS events_part, 'search_candidates_' || substr(c.relname, 15) AS candidates_part
        FROM pg_inherits i
        JOIN pg_class c ON c.oid = i.inhrelid
        WHERE i.inhparent = 'receipts.search_events'::regclass
          AND c.relname ~ '^search_events_p[0-9]{8}$'
          AND to_date(substr(c.relname, 16), 'YYYYMMDD') < cutoff
        ORDER BY 1
    LOOP
        EXECUTE format('DROP TABLE IF EXISTS receipts.%I', part.candidates_part);
        -- A referenced partition leaves through DETACH, which checks that
        -- no candidate still points into it (none can: its day's candidate
        -- partition is gone), and is then dropped.
        EXECUTE format('ALTER TABLE receipts.search_events DETACH PARTITION receipts.%I', part.events_part);
        EXECUTE format('DROP TABLE receipts.%I', part.events_part);
        dropped_days := dropped_days + 1;
    END LOOP;
    DELETE FROM receipts.search_candidates_default
     WHERE event_created_at < cutoff::timestamp AT TIME ZONE 'UTC';
    GET DIAGNOSTICS deleted_candidates = ROW_COUNT;
    DELETE FROM receipts.search_events_default
     WHERE created_at < cutoff::timestamp AT TIME ZONE 'UTC';
    GET DIAGNOSTICS deleted_events = ROW_COUNT;
    created_days := receipts.ensure_day_partitions(today, today + 7);
    RETURN NEXT;
END
$$;

DO $$
BEGIN
    IF (SELECT c.relkind FROM pg_class c WHERE c.oid = 'receipts.search_events'::regclass) = 'p' THEN
        RETURN;  -- already partitioned
    END IF;

    ALTER TABLE receipts.search_candidates RENAME TO search_candidates_unpartitioned;
    ALTER TABLE receipts.search_events RENAME TO search_events_unpartitioned;
    ALTER INDEX receipts.search_events_principal_idx RENAME TO search_events_unpartitioned_principal_idx;
    ALTER INDEX receipts.search_candidates_granted_idx RENAME TO search_candidates_unpartitioned_granted_idx;

    CREATE TABLE receipts.search_events (
        search_event_id   uuid NOT NULL,
        principal         text NOT NULL,
        session_id        text,
        created_at        timestamptz NOT NULL DEFAULT now(),
        query_text        text,
        normalized_query  text,
        applied_filters   jsonb NOT NULL,
        strategy          text NOT NULL CHECK (strategy IN ('exact_identifier', 'metadata_only', 'hybrid')),
        semantic_route    text,
        eligible_estimate bigint,
        pool_size         integer NOT NULL,
        result_limit      integer NOT NULL CHECK (result_limit BETWEEN 1 AND 50),
        authorized_limit  integer CHECK (authorized_limit BETWEEN 0 AND result_limit),
        served_count      integer NOT NULL,
        rerank_status     text NOT NULL,
        models            jsonb NOT NULL,
        arms              jsonb NOT NULL,
        timings_ms        jsonb NOT NULL,
        warnings          jsonb NOT NULL,
        profile           jsonb NOT NULL,
        -- The partition key must be part of every unique constraint; the
        -- id alone is a random UUID.
        PRIMARY KEY (search_event_id, created_at)
    ) PARTITION BY RANGE (created_at);
    CREATE TABLE receipts.search_events_default PARTITION OF receipts.search_events DEFAULT;
    CREATE INDEX search_events_principal_idx ON receipts.search_events (principal, created_at);

    -- event_created_at is the event's created_at: it must be written in
    -- the event's transaction (the default, now(), is the transaction's
    -- start time), and the foreign key holds it to that.
    CREATE TABLE receipts.search_candidates (
        search_event_id  uuid NOT NULL,
        event_created_at timestamptz NOT NULL DEFAULT now(),
        product_id       text NOT NULL,
        pre_rerank_rank  integer NOT NULL CHECK (pre_rerank_rank >= 1),
        lexical_rank     integer,
        lexical_score    double precision,
        trigram_rank     integer,
        trigram_score    double precision,
        semantic_rank    integer,
        semantic_score   double precision,
        rrf_score        double precision,
        rerank_score     double precision,
        final_rank       integer NOT NULL CHECK (final_rank >= 1),
        served_rank      integer CHECK (served_rank >= 1),
        granted          boolean NOT NULL,
        exact_match      boolean NOT NULL DEFAULT false,
        match_reason     text NOT NULL,
        source_uri       text NOT NULL,
        source_revision  integer NOT NULL,
        PRIMARY KEY (search_event_id, product_id, event_created_at),
        FOREIGN KEY (search_event_id, event_created_at)
            REFERENCES receipts.search_events (search_event_id, created_at),
        CHECK (NOT granted OR served_rank IS NOT NULL)
    ) PARTITION BY RANGE (event_created_at);
    CREATE TABLE receipts.search_candidates_default PARTITION OF receipts.search_candidates DEFAULT;
    CREATE INDEX search_candidates_granted_idx
        ON receipts.search_candidates (search_event_id, product_id) WHERE granted;

    -- The existing receipts, each in the partition of its day.
    PERFORM receipts.ensure_day_partitions(d, d)
       FROM (SELECT DISTINCT (created_at AT TIME ZONE 'UTC')::date AS d
               FROM receipts.search_events_unpartitioned) days;
    INSERT INTO receipts.search_events SELECT * FROM receipts.search_events_unpartitioned;
    INSERT INTO receipts.search_candidates (
        search_event_id, event_created_at, product_id, pre_rerank_rank, lexical_rank, lexical_score,
        trigram_rank, trigram_score, semantic_rank, semantic_score, rrf_score, rerank_score, final_rank,
        served_rank, granted, exact_match, match_reason, source_uri, source_revision)
    SELECT c.search_event_id, e.created_at, c.product_id, c.pre_rerank_rank, c.lexical_rank, c.lexical_score,
           c.trigram_rank, c.trigram_score, c.semantic_rank, c.semantic_score, c.rrf_score, c.rerank_score,
           c.final_rank, c.served_rank, c.granted, c.exact_match, c.match_reason, c.source_uri, c.source_revision
      FROM receipts.search_candidates_unpartitioned c
      JOIN receipts.search_events_unpartitioned e USING (search_event_id);
    DROP TABLE receipts.search_candidates_unpartitioned;
    DROP TABLE receipts.search_events_unpartitioned;
END
$$;

SELECT receipts.ensure_day_partitions((now() AT TIME ZONE 'UTC')::date,
                                      (now() AT TIME ZONE 'UTC')::date + 7);

-- The runtime role appends and reads through the parent tables (which is
-- all partition routing needs); it cannot delete, drop or purge.
GRANT SELECT, INSERT ON receipts.search_events, receipts.search_candidates TO {{RUNTIME_ROLE}};
REVOKE ALL ON FUNCTION receipts.ensure_day_partitions(date, date) FROM PUBLIC;
REVOKE ALL ON FUNCTION receipts.purge(integer) FROM PUBLIC;
