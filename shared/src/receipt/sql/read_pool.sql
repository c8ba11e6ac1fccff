-- explain_retrieval, 2/2: every pool member of the event, in pool order.
-- receipts.pool_of (sql/0026) repeats the event's predicate, so this
-- statement alone never reads another principal's pool.
-- $1 search_event_id, $2 principal.
SELECT c.product_id, c.pre_rerank_rank, c.served_rank, c.final_rank, c.granted,
       c.exact_match, c.match_reason, c.lexical_rank, c.lexical_score, c.trigram_rank,
       c.trigram_score, c.semantic_rank, c.semantic_score, c.rrf_score, c.rerank_score,
       c.source_uri, c.source_revision, c.bounds_broken, c.bounds_kept
FROM receipts.pool_of($1, $2) c
ORDER BY c.pre_rerank_rank, c.product_id;
