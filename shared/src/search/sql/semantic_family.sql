-- Semantic arm, an identifier's family: the products whose identity text
-- holds the letters a query's model code or SKU starts with ("heaf" of
-- "HEAF-1072"), and the other products of the brands that make that line,
-- scored by exact distance. A code's vector lies among its product line's
-- near-identical texts, where a graph walk can settle in another line, and
-- it can lie nearer its brand's other lines than its own (the line is not
-- eligible under the filter, or the query's other words name another kind
-- of product); this statement hands the walks' merge the line and the brand.
-- The line comes from the trigram index alone, at most $14 rows of it, the
-- rest of the brand from the brand index, at most $15 rows (scan budgets,
-- like the walk's hnsw.max_scan_tuples), and the eligibility predicate is
-- applied to those rows before the LIMIT: left to itself the planner ANDs a
-- broad price filter's bitmap into the index scan (6 ms of a 7 ms statement
-- at 100k products). The budgets' LIMITs keep the filters out of the scans
-- without materialising their rows. Each row's distance is taken in its
-- scan, so the window that counts the eligible rows holds no vectors (held,
-- they spill it to disk: 5 ms of 10 for a brand's 2,149 rows, psql, 100k).
-- $11 the query vector, $12 the arm's limit, $13 the stem (letters and '-'
-- only, so no LIKE wildcard), $14 the line's budget, $15 the brand's. LIKE,
-- not a regular expression: pg_trgm takes more of a pattern's trigrams from
-- it ("oh-x": 222 index candidates against 2,728). Also returns how many
-- eligible rows the family held.
WITH line AS NOT MATERIALIZED (
    SELECT product_id, domain, category_key, brand_key, availability, in_stock, price_cents,
           rating, attributes, embedding_text, embedding <=> $11 AS distance
    FROM search.product_projection
    WHERE identity_text LIKE '%' || $13 || '%' AND embedding IS NOT NULL
    LIMIT $14
), brand AS NOT MATERIALIZED (
    SELECT product_id, domain, category_key, brand_key, availability, in_stock, price_cents,
           rating, attributes, embedding_text, embedding <=> $11 AS distance
    FROM search.product_projection
    WHERE brand_key = ANY (ARRAY(
            SELECT DISTINCT brand_key FROM (
                SELECT brand_key FROM search.product_projection
                WHERE identity_text LIKE '%' || $13 || '%' LIMIT 20) AS sample))
      AND identity_text NOT LIKE '%' || $13 || '%' AND embedding IS NOT NULL
    LIMIT $15
), hits AS NOT MATERIALIZED (
    SELECT * FROM line UNION ALL SELECT * FROM brand
)
SELECT pp.product_id, (1 - pp.distance)::float8 AS score, count(*) OVER () AS family
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
ORDER BY pp.distance, pp.product_id
LIMIT $12;
