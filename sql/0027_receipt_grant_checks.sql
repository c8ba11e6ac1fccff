-- 0027: receipts.record checks what an event grants, not only its shape.
--
-- 0026 left the runtime role one way to write a receipt, receipts.record,
-- which checked that every pool array holds one element per member but
-- stored the grant as given. Whoever held the runtime role's login could
-- therefore record an event whose granted members lie beyond its
-- authorized_limit, or a replay that names another principal's event. The
-- service never writes either; the database now refuses both, so a
-- receipt's grant always means what its authorized_limit says:
--
-- * the event carries an authorization (authorized_limit not NULL);
-- * a member is granted exactly when its served rank is within
--   authorized_limit;
-- * the served members hold the ranks 1..served_count, once each;
-- * a replay never names an event recorded for another principal.
--
-- Anything else is refused with invalid_parameter_value and nothing is
-- written. The function keeps its signature, owner and privileges (CREATE
-- OR REPLACE keeps the grants of 0026). Running this file again changes
-- nothing.

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
    -- What the event grants: every search states its authorization, and a
    -- member is granted exactly when it was served within it.
    IF p_authorized_limit IS NULL OR EXISTS (
        SELECT 1
        FROM unnest(p_served_rank, p_granted) AS m (served_rank, granted)
        WHERE m.granted IS DISTINCT FROM coalesce(m.served_rank <= p_authorized_limit, false))
    THEN
        RAISE EXCEPTION 'a receipt grants exactly its members served within authorized_limit'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    -- The served members hold the ranks 1..served_count, once each.
    IF NOT (SELECT count(s) = p_served_count
                   AND count(DISTINCT s) = count(s)
                   AND coalesce(min(s) >= 1 AND max(s) <= p_served_count, true)
            FROM unnest(p_served_rank) AS s)
    THEN
        RAISE EXCEPTION 'a receipt''s served ranks must be 1..served_count, once each'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    -- A replay never names an event of another principal. (The event it
    -- replays may have been purged since: 0013 lets a replay outlive it.)
    IF p_replays_event_id IS NOT NULL AND EXISTS (
        SELECT 1 FROM receipts.search_events e
        WHERE e.search_event_id = p_replays_event_id AND e.principal <> p_principal)
    THEN
        RAISE EXCEPTION 'a replay must name an event of its own principal'
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
