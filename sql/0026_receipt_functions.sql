-- 0026: the runtime role reaches receipts only through three functions.
--
-- Until now the runtime role could SELECT and INSERT both receipt tables
-- (0005, 0012). The service always filtered on the principal, but the
-- database did not: whoever held the runtime role's login could read every
-- principal's queries and sessions, or write a candidate row naming an
-- existing event (its event_created_at written out by hand) and so widen a
-- grant. From here on the tables belong to the owner alone, and the runtime
-- role may only call:
--
-- * receipts.record(...): writes one new event and its whole pool in one
--   statement and returns the event's id, which it draws itself (a random
--   UUID), so no caller can name an id already recorded, and nothing can be
--   added to an event written before. The candidates take that id and the
--   event's created_at (the transaction's start). Every pool array must
--   hold one element per member.
-- * receipts.event_of(event, principal): the event, when it belongs to the
--   principal and carries an explicit authorization; no row otherwise.
-- * receipts.pool_of(event, principal): that event's pool, under the same
--   predicate.
--
-- Reading therefore takes both the event's id (a random UUID handed only to
-- its caller) and its principal: no listing, no counting, no scan of other
-- principals' receipts. The functions run as their owner, the role that
-- runs the migrations and owns the tables (SECURITY DEFINER), with a fixed
-- search_path, so a caller's objects cannot stand in for the tables or
-- operators they name. Running this file again changes nothing.

CREATE OR REPLACE FUNCTION receipts.record(
    p_principal           text,
    p_session_id          text,
    p_query_text          text,
    p_normalized_query    text,
    p_applied_filters     jsonb,
    p_strategy            text,
    p_semantic_route      text,
    p_eligible_estimate   bigint,
    p_pool_size           integer,
    p_result_limit        integer,
    p_authorized_limit    integer,
    p_served_count        integer,
    p_rerank_status       text,
    p_models              jsonb,
    p_arms                jsonb,
    p_timings_ms          jsonb,
    p_warnings            jsonb,
    p_profile             jsonb,
    p_replays_event_id    uuid,
    p_replay_profile      text,
    p_replay_ineligible   text[],
    p_query_understanding jsonb,
    -- The pool, one array element per member, in pool order.
    p_product_id          text[],
    p_pre_rerank_rank     integer[],
    p_lexical_rank        integer[],
    p_lexical_score       double precision[],
    p_trigram_rank        integer[],
    p_trigram_score       double precision[],
    p_semantic_rank       integer[],
    p_semantic_score      double precision[],
    p_rrf_score           double precision[],
    p_rerank_score        double precision[],
    p_final_rank          integer[],
    p_served_rank         integer[],
    p_granted             boolean[],
    p_exact_match         boolean[],
    p_match_reason        text[],
    p_source_uri          text[],
    p_source_revision     integer[],
    p_bounds_broken       smallint[],
    p_bounds_kept         smallint[]
) RETURNS uuid
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    -- The key holds (id, created_at); a fresh random id names one event.
    event_id uuid := gen_random_uuid();
BEGIN
    IF p_pool_size IS NULL OR EXISTS (
        SELECT 1
        FROM unnest(ARRAY[
            cardinality(p_product_id), cardinality(p_pre_rerank_rank),
            cardinality(p_lexical_rank), cardinality(p_lexical_score),
            cardinality(p_trigram_rank), cardinality(p_trigram_score),
            cardinality(p_semantic_rank), cardinality(p_semantic_score),
            cardinality(p_rrf_score), cardinality(p_rerank_score), cardinality(p_final_rank),
            cardinality(p_served_rank), cardinality(p_granted), cardinality(p_exact_match),
            cardinality(p_match_reason), cardinality(p_source_uri),
            cardinality(p_source_revision), cardinality(p_bounds_broken),
            cardinality(p_bounds_kept)]) AS n (members)
        WHERE n.members IS DISTINCT FROM p_pool_size)
    THEN
        RAISE EXCEPTION 'a receipt''s pool arrays must hold pool_size elements each'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    INSERT INTO receipts.search_events (
        search_event_id, principal, session_id, created_at, query_text, normalized_query,
        applied_filters, strategy, semantic_route, eligible_estimate, pool_size, result_limit,
        authorized_limit, served_count, rerank_status, models, arms, timings_ms, warnings, profile,
        replays_event_id, replay_profile, replay_ineligible, query_understanding)
    VALUES (
        event_id, p_principal, p_session_id, now(), p_query_text, p_normalized_query,
        p_applied_filters, p_strategy, p_semantic_route, p_eligible_estimate, p_pool_size,
        p_result_limit, p_authorized_limit, p_served_count, p_rerank_status, p_models, p_arms,
        p_timings_ms, p_warnings, p_profile, p_replays_event_id, p_replay_profile,
        p_replay_ineligible, p_query_understanding);
    INSERT INTO receipts.search_candidates (
        search_event_id, event_created_at, product_id, pre_rerank_rank, lexical_rank,
        lexical_score, trigram_rank, trigram_score, semantic_rank, semantic_score, rrf_score,
        rerank_score, final_rank, served_rank, granted, exact_match, match_reason, source_uri,
        source_revision, bounds_broken, bounds_kept)
    SELECT event_id, now(), m.*
    FROM unnest(p_product_id, p_pre_rerank_rank, p_lexical_rank, p_lexical_score,
                p_trigram_rank, p_trigram_score, p_semantic_rank, p_semantic_score, p_rrf_score,
                p_rerank_score, p_final_rank, p_served_rank, p_granted, p_exact_match,
                p_match_reason, p_source_uri, p_source_revision, p_bounds_broken,
                p_bounds_kept) AS m;
    RETURN event_id;
END
$$;

CREATE OR REPLACE FUNCTION receipts.event_of(p_event_id uuid, p_principal text)
    RETURNS SETOF receipts.search_events
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    ROWS 1
AS $$
    SELECT e.*
    FROM receipts.search_events e
    WHERE e.search_event_id = p_event_id
      AND e.principal = p_principal
      AND e.authorized_limit IS NOT NULL
$$;

-- Candidates join on the event's id and its partition key (the tables' keys
-- hold both), so the join names that one event and no other.
CREATE OR REPLACE FUNCTION receipts.pool_of(p_event_id uuid, p_principal text)
    RETURNS SETOF receipts.search_candidates
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    ROWS 50
AS $$
    SELECT c.*
    FROM receipts.search_events e
    JOIN receipts.search_candidates c
      ON c.search_event_id = e.search_event_id AND c.event_created_at = e.created_at
    WHERE e.search_event_id = p_event_id
      AND e.principal = p_principal
      AND e.authorized_limit IS NOT NULL
$$;

REVOKE ALL ON FUNCTION receipts.record(
    text, text, text, text, jsonb, text, text, bigint, integer, integer, integer, integer,
    text, jsonb, jsonb, jsonb, jsonb, jsonb, uuid, text, text[], jsonb, text[], integer[],
    integer[], double precision[], integer[], double precision[], integer[], double precision[],
    double precision[], double precision[], integer[], integer[], boolean[], boolean[], text[],
    text[], integer[], smallint[], smallint[]) FROM PUBLIC;
REVOKE ALL ON FUNCTION receipts.event_of(uuid, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION receipts.pool_of(uuid, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION receipts.record(
    text, text, text, text, jsonb, text, text, bigint, integer, integer, integer, integer,
    text, jsonb, jsonb, jsonb, jsonb, jsonb, uuid, text, text[], jsonb, text[], integer[],
    integer[], double precision[], integer[], double precision[], integer[], double precision[],
    double precision[], double precision[], integer[], integer[], boolean[], boolean[], text[],
    text[], integer[], smallint[], smallint[]) TO {{RUNTIME_ROLE}};
GRANT EXECUTE ON FUNCTION receipts.event_of(uuid, text) TO {{RUNTIME_ROLE}};
GRANT EXECUTE ON FUNCTION receipts.pool_of(uuid, text) TO {{RUNTIME_ROLE}};

-- The tables themselves, and every partition, are the owner's alone.
REVOKE ALL ON ALL TABLES IN SCHEMA receipts FROM {{RUNTIME_ROLE}};
