-- compare_products: the event, its granted candidates and their catalog
-- rows, in ONE statement: only products this event granted to this
-- principal come back, and nothing is retrieved anew. receipts.pool_of
-- (sql/0026) returns the pool only when the event belongs to the principal
-- and carries an explicit authorization.
--
-- $1 retrieval scope (search_event_id), $2 principal, $3 product ids (text[]).
-- The caller refuses unless every requested id comes back.
SELECT c.product_id, c.served_rank, c.pre_rerank_rank, c.final_rank,
       c.lexical_rank, c.lexical_score, c.trigram_rank, c.trigram_score,
       c.semantic_rank, c.semantic_score, c.rrf_score, c.rerank_score,
       c.exact_match, c.match_reason, c.source_revision AS served_source_revision,
       c.bounds_broken, c.bounds_kept,
       p.sku, p.model, p.brand, p.title, p.domain, p.category_key, p.price_cents,
       p.currency, p.rating, p.availability, p.attributes, p.source_uri, p.revision
FROM receipts.pool_of($1, $2) c
JOIN catalog.products p ON p.product_id = c.product_id
WHERE c.granted
  AND c.product_id = ANY ($3::text[])
ORDER BY c.served_rank, c.product_id;
