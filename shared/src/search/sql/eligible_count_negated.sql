-- The semantic arm's selectivity probe (`eligible_count.sql`) for a query
-- with negated words that the catalog's vocabulary can hold.
-- A count that stops at $11 eligible rows reads every row when fewer are
-- eligible: a query whose negated words exclude nearly every product would
-- test every row's text here, only to send the arm to the exact scan,
-- which tests them again. $12 holds those of the negated words that the
-- vocabulary can hold (letters only, lower case). When the vocabulary says
-- one of them is held by so many products that fewer than $11 are left,
-- the count is not taken (NULL); the third column is then the catalog's
-- size less the most products one of the words is held by, the fourth
-- that number. Both come from the tables every load and import keeps in
-- its own transaction (search.catalog_stats, search.vocabulary), so the
-- same catalog gives the same estimate. The vocabulary also reads a
-- product's identity text (its aliases, the letters of its SKU), which
-- the negation does not, so it is an estimate: it only chooses the route,
-- and the exact scan applies the predicate to every row. Otherwise the
-- row is the plain probe's (the catalog's size by the planner's estimate
-- in the second column, as there).
SELECT CASE WHEN b.known THEN NULL ELSE (SELECT count(*) FROM (
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
) probe) END,
       b.products,
       CASE WHEN b.known THEN greatest(b.held - b.most, 0) END,
       CASE WHEN b.known THEN b.most END
FROM (SELECT s.products, s.held, s.most,
             (s.held IS NOT NULL AND s.most > 0 AND s.held - s.most < $11) AS known
      FROM (SELECT (SELECT greatest(c.reltuples, 0)::bigint FROM pg_catalog.pg_class c
                    WHERE c.oid = 'search.product_projection'::regclass) AS products,
                   (SELECT cs.products::bigint FROM search.catalog_stats cs) AS held,
                   CASE WHEN $12::text[] IS NULL THEN 0 ELSE
                     (SELECT coalesce(max(v.products), 0)::bigint FROM search.vocabulary v
                      WHERE v.word = ANY ($12::text[])) END AS most) s) b;
