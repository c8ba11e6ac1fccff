-- Lexical arm: PostgreSQL full-text search over the weighted tsvector.
-- $11 the websearch query, $12 the scoring budget, $13 the arm's limit.
-- Negated terms are excluded by the eligibility predicate ($10).
-- Matches are capped at the scoring budget before ts_rank_cd runs, because
-- ranking cost grows with the number of matches, not with the LIMIT.
-- The tsquery is written inline (not in a CTE) so that the planner sees the
-- constant and estimates its matches from the tsvector statistics: behind a
-- CTE it guessed 0.5% of the table and ANDed a broad filter's index bitmap
-- in (price <= median: +10 ms at 100k products).
WITH matched AS (
    SELECT pp.product_id, pp.document
    FROM search.product_projection pp
    WHERE pp.document @@ websearch_to_tsquery('english', $11)
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
      -- A query without "or" or negation needs every one of its lexemes
      -- (the quoted words of its tsquery; outside them, no '|' or '!').
      -- When the price filter admits no product holding one of them (the
      -- holders' price bounds in search.lexeme_stats, migration 0022), or
      -- no holder of one lies in the domain filter's domain (the holders'
      -- domains, migration 0025; NULL: unknown), nothing eligible can
      -- match: this condition holds no column, so the planner checks it
      -- once, before the scan, and skips the scan.
      AND NOT EXISTS (
          SELECT 1
          FROM (SELECT websearch_to_tsquery('english', $11)::text AS q) w
          CROSS JOIN LATERAL regexp_matches(w.q, '''((?:[^'']|'''')*)''', 'g') AS l (m)
          JOIN search.lexeme_stats s
            ON s.lexeme = replace(replace(l.m[1], '''''', ''''), '\\', '\')
          WHERE (s.min_price_cents > $7 OR s.max_price_cents < $6 OR NOT $1 = ANY (s.domains))
            AND regexp_replace(w.q, '''(?:[^'']|'''')*''', '', 'g') !~ '[|!]')
    LIMIT $12
)
SELECT m.product_id, ts_rank_cd(m.document, websearch_to_tsquery('english', $11), 32)::float8 AS score,
       (SELECT count(*) FROM matched) AS matched
FROM matched m
ORDER BY score DESC, m.product_id
LIMIT $13;
