-- Selectivity probe of the semantic arm: eligible embedded rows, counted
-- only up to $11 (threshold + 1), so the probe's cost is bounded; and the
-- catalog's size by the planner's estimate (never analysed: 0), which
-- decides whether the HNSW route also walks each domain's graph. (With
-- negated words the arm sends `eligible_count_negated.sql` instead; the
-- two NULL columns keep the two statements' rows alike.)
SELECT count(*),
       (SELECT greatest(c.reltuples, 0)::bigint FROM pg_catalog.pg_class c
        WHERE c.oid = 'search.product_projection'::regclass),
       NULL::bigint, NULL::bigint
FROM (
    SELECT 1
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
    LIMIT $11
) probe;
