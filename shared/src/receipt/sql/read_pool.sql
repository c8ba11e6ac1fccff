-- explain_retrieval, 2/2: every pool member of the event, in pool order.
-- The event predicate is repeated so this statement alone never reads
-- another principal's pool. $1 search_event_id, $2 principal. Candidates
-- join on the event's id and its partition key (the partitioned tables'
-- keys hold both), so the join names that one event and no other.
SELECT c.product_id, c.pre_rerank_rank, c.served_rank, c.final_rank, c.granted,
       c.exact_match, c.match_reason, c.lexical_rank, c.lexical_score, c.trigram_rank,
       c.trigram_score, c.semantic_rank, c.semantic_score, c.rrf_score, c.rerank_score,
       c.source_uri, c.source_revision, c.bounds_broken, c.bounds_kept
FROM receipts.search_events e
JOIN receipts.search_candidates c ON c.search_event_id = e.search_event_id AND c.event_created_at = e.created_at
WHERE e.search_event_id = $1
  AND e.principal = $2
  AND e.authorized_limit IS NOT NULL
ORDER BY c.pre_rerank_rank, c.product_id;
