-- Semantic arm, exact route (selective filters): cosine distance over every
-- eligible row. Ordering by an expression the HNSW index cannot serve
-- ("+ 0") keeps the planner on the filtered scan: exact recall.
-- For a query far from its domain filter (route exact_far_domain) the scan
-- runs in two halves, the rows whose product id hashes to $13 (0 or 1),
-- which migration 0024's index holds apart: on two connections they run at
-- the same time, and the caller keeps the nearest of both. $13 NULL: every
-- eligible row (the planner drops the condition for that statement).
-- The statement returns each row's distance, the sort key itself, and the
-- caller takes the score as 1 - distance: a score column beside the sort
-- key would be a second distance per scanned row, since the planner
-- computes both for every row before the sort (about a tenth of the scan).
-- $11 the query vector, $12 the arm's limit, $13 the half or NULL.
SELECT pp.product_id, (pp.embedding <=> $11) + 0 AS distance
FROM search.product_projection pp
WHERE pp.embedding IS NOT NULL
      AND ($13::int IS NULL OR (hashtext(pp.product_id) & 1) = $13)
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
ORDER BY distance, pp.product_id
LIMIT $12;
