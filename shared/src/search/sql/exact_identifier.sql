-- Exact-identifier strategy: eligible products whose normalised SKU or model
-- equals the normalised query. $11 the normalised query key.
-- The matches are found through the GIN index on identifier_keys alone and
-- the eligibility predicate is applied to them (a handful of rows) before
-- the LIMIT. Left to itself the planner estimates 0.5% of the table for an
-- array containment (every key is unique, so there are no element
-- statistics) and either walks the primary key in order testing every row
-- (~100 ms at 100k products for a key that matches nothing) or ANDs the
-- bitmap of a broad filter's index (~8 ms); this way it is < 1 ms.
WITH hits AS MATERIALIZED (
    SELECT * FROM search.product_projection WHERE identifier_keys @> ARRAY[$11::text]
)
SELECT pp.product_id
FROM hits pp
WHERE true
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
ORDER BY pp.product_id
LIMIT 5;
