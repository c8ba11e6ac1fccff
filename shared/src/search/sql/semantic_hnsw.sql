-- Semantic arm, HNSW route (broad filters): approximate nearest neighbours
-- with iterative index scans (hnsw.iterative_scan, set with SET LOCAL), so
-- the filter is applied while the index is walked. relaxed_order can return
-- rows slightly out of order; the caller re-sorts the materialised top-k.
-- $11 the query vector, $12 the arm's limit.
SELECT pp.product_id, (1 - (pp.embedding <=> $11))::float8 AS score
FROM search.product_projection pp
WHERE pp.embedding IS NOT NULL
      -- eligibility: every hard filter and negated term, before any LIMIT ($1..$10; NULL = unconstrained)
      AND ($1::text IS NULL OR pp.domain = $1)
      AND ($2::text IS NULL OR pp.category_key = $2)
      AND ($3::text IS NULL OR pp.brand_key = lower($3))
      AND ($4::text[] IS NULL OR pp.availability = ANY ($4))
      AND (NOT $5::boolean OR pp.in_stock)
      AND ($6::bigint IS NULL OR pp.price_cents >= $6)
      AND ($7::bigint IS NULL OR pp.price_cents <= $7)
      AND ($8::real IS NULL OR pp.rating >= $8)
      AND ($9::jsonb IS NULL OR pp.attributes @> $9)
      AND ($10::text[] IS NULL OR NOT EXISTS (
          SELECT 1 FROM unnest($10::text[]) AS neg (word) WHERE pp.embedding_text ~* ('\m' || neg.word || '\M')))
ORDER BY pp.embedding <=> $11
LIMIT $12;
