-- Lexical arm, relaxed step: the documents that hold at least k of the
-- query's n terms, written by the service (arms::at_least) as a tsquery
-- over the terms' own lexemes (plainto_tsquery, lexical_terms.sql), in
-- factored form: at least 2 of a, b, c is "(a & (b | c)) | (b & c)". The GIN
-- index finds the documents that hold enough terms, so only those are
-- fetched and ranked: holding more of the query is the pre-score,
-- ts_rank_cd orders within it, against the plain disjunction of the terms
-- ($14, "a | b | c"): cover density over the step's own query would depend
-- on how it is written.
-- $11 the step's tsquery (text), $12 the scoring budget, $13 the arm's
-- limit, $14 the ranking tsquery (text).
-- Negated terms are excluded by the eligibility predicate ($10).
WITH matched AS (
    SELECT pp.product_id, pp.document
    FROM search.product_projection pp
    WHERE pp.document @@ $11::text::tsquery
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
    LIMIT $12
)
SELECT m.product_id, ts_rank_cd(m.document, $14::text::tsquery, 32)::float8 AS score,
       (SELECT count(*) FROM matched) AS matched
FROM matched m
ORDER BY score DESC, m.product_id
LIMIT $13;
