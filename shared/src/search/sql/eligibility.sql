-- The eligibility predicate shared by every arm, copied verbatim into each
-- arm's WHERE clause (a unit test checks the copies). Parameters:
-- $1 domain, $2 category_key, $3 brand, $4 availability[], $5 in_stock_only,
-- $6 min_price_cents, $7 max_price_cents, $8 min_rating, $9 attributes (jsonb
-- containment), $10 the query's negated words ("-wired" excludes every
-- product whose text has the word "wired"; matched as whole words, case
-- aside, without stemming or stop words, so "-down" and "-lined" mean
-- exactly those words), which the service passes as one element, their
-- alternation `(?:wired|lined)`: one expression reads each row's text once
-- for every word. A NULL parameter constrains nothing.
SELECT count(*) FROM search.product_projection pp WHERE true
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
          SELECT 1 FROM unnest($10::text[]) AS neg (word) WHERE pp.embedding_text ~* ('\m' || neg.word || '\M')));
