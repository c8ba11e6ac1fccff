-- Which of the given products pass the eligibility predicate now: a replay
-- asks it of the replayed event's pool (shared/src/replay/), so that a
-- product that left because it no longer matches the recorded filters is
-- named as such. $11 the product ids.
SELECT pp.product_id
FROM search.product_projection pp
WHERE pp.product_id = ANY ($11::text[])
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
LIMIT cardinality($11::text[]);
