-- explain_retrieval, 1/2: the event, if it belongs to the principal and
-- carries an explicit authorization (receipts.event_of, sql/0026).
-- $1 search_event_id, $2 principal.
SELECT search_event_id, created_at, query_text, normalized_query, applied_filters,
       strategy, semantic_route, eligible_estimate, arms, profile, timings_ms, warnings,
       result_limit, authorized_limit, session_id, rerank_status, models, pool_size,
       served_count, replays_event_id, replay_profile, replay_ineligible, query_understanding
FROM receipts.event_of($1, $2);
