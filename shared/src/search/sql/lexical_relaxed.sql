-- Lexical arm, relaxed step: the documents that hold at least k of the
-- query's n terms, written by the service (arms::at_least) as a tsquery
-- over the terms' own lexemes (plainto_tsquery, lexical_terms.sql), in
-- factored form: at least 2 of a, b, c is "(a & (b | c)) | (b & c)". The GIN
-- index finds the documents that hold enough terms, so only those are
-- fetched and ranked: holding more of the query is the pre-score,
-- ts_rank_cd orders within it, against the plain disjunction of the terms
-- ("a | b | c"): cover density over the step's own query would depend on
-- how it is written.
-- The disjunction leaves out the terms none of whose lexemes any match
-- holds (a domain filter's products seldom hold the words of another
-- domain): such a term takes part in no document's covers, so every score
-- is the same, but ts_rank_cd's cost grows with the query's terms, held or
-- not (2,000 matches of a 7-term query under a domain filter whose
-- products hold 3 of the terms: 20 ms of ranking against 10; BENCHMARKS.md,
-- "The back-off ranked against the terms its matches hold").
-- Past the ranking budget (the service sets it for the steps any one term
-- satisfies, 0 for the others), ts_rank against the same disjunction (the
-- terms by field weight, an eighth of ts_rank_cd's cost a document)
-- chooses which matches are ranked.
-- $11 the step's tsquery (text), $12 the scoring budget, $13 the arm's
-- limit, $14 the ranking budget (0: none), $15 the ranking terms (each a
-- term's tsquery text, in query order).
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
), counted AS (
    SELECT count(*) AS n FROM matched
), terms AS MATERIALIZED (
    -- Each term, and the disjunction of its lexemes: the parts of a
    -- hyphenated word are operands of the query wherever they stand.
    SELECT t.i, t.q,
           (SELECT string_agg('''' || l.m[1] || '''', ' | ')
            FROM regexp_matches(t.q, '''((?:[^'']|'''')*)''', 'g') AS l (m))::tsquery AS lexemes
    FROM unnest($15::text[]) WITH ORDINALITY AS t (q, i)
), ranking AS (
    SELECT coalesce(
               string_agg('(' || t.q || ')', ' | ' ORDER BY t.i)
                   FILTER (WHERE EXISTS (SELECT 1 FROM matched m WHERE m.document @@ t.lexemes)),
               string_agg('(' || t.q || ')', ' | ' ORDER BY t.i))::tsquery AS q
    FROM terms t
), ranked AS (
    -- Every match, when they are within the ranking budget (or it is 0);
    -- otherwise the best of them by ts_rank. Each branch's condition holds
    -- no column, so the branch not taken is skipped before it reads a row.
    SELECT m.product_id, m.document
    FROM matched m
    WHERE $14::bigint = 0 OR (SELECT c.n FROM counted c) <= $14::bigint
    UNION ALL
    (SELECT m.product_id, m.document
     FROM matched m
     WHERE $14::bigint > 0 AND (SELECT c.n FROM counted c) > $14::bigint
     ORDER BY ts_rank(m.document, (SELECT r.q FROM ranking r)) DESC, m.product_id
     LIMIT $14::bigint)
)
SELECT k.product_id, ts_rank_cd(k.document, (SELECT r.q FROM ranking r), 32)::float8 AS score,
       (SELECT c.n FROM counted c) AS matched
FROM ranked k
ORDER BY score DESC, k.product_id
LIMIT $13;
