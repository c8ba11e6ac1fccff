-- Semantic arm, an identifier's family: the products whose identity text
-- holds the letters a query's model code or SKU starts with ("heaf" of
-- "HEAF-1072"), scored by exact distance. A code's vector lies among its
-- product line's near-identical texts, where a graph walk can settle in
-- another line; this statement hands the walk's merge the line itself.
-- The family comes from the trigram index alone, at most $14 rows of it
-- (a scan budget, like the walk's hnsw.max_scan_tuples), and the
-- eligibility predicate is applied to those rows before the LIMIT: left to
-- itself the planner ANDs a broad price filter's bitmap into the index
-- scan (6 ms of a 7 ms statement at 100k products). The budget's LIMIT
-- keeps the filters out of the scan without materialising its rows
-- (psql, 100k, a broad filter: 1.5-2.3 ms against 3.0-3.8 materialised).
-- $11 the query vector, $12 the arm's limit, $13 the stem (letters and '-'
-- only, so no LIKE wildcard), $14 the family's budget. LIKE, not a regular
-- expression: pg_trgm takes more of a pattern's trigrams from it ("oh-x":
-- 222 index candidates against 2,728). Also returns how many eligible rows
-- the family held.
WITH hits AS NOT MATERIALIZED (
    SELECT product_id, domain, category_key, brand_key, availability, in_stock, price_cents,
           rating, attributes, embedding_text, embedding
    FROM search.product_projection
    WHERE identity_text LIKE '%' || $13 || '%' AND embedding IS NOT NULL
    LIMIT $14
)
SELECT pp.product_id, (1 - (pp.embedding <=> $11))::float8 AS score, count(*) OVER () AS family
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
ORDER BY pp.embedding <=> $11, pp.product_id
LIMIT $12;
