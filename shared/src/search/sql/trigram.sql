-- Typo-tolerant arm, one step of its threshold cascade: pg_trgm word
-- similarity of the query against identity text (brand, model, SKU, title,
-- aliases), served by the GIN trigram index. The step's threshold is
-- pg_trgm.word_similarity_threshold, set by the caller for each step
-- (arms::trigram); a stricter threshold lets the index discard more
-- candidates before the heap recheck (~20 us of word_similarity each).
-- $11 what the step matches (the lower-cased query, or for a relaxed step of
-- a query that names a code, its codes), $12 the safety budget, $13 the
-- lower-cased query the matches are scored for.
-- The budget bounds a query of common words ("air fryer": thousands of
-- matches at 100k, nearly all tied at 1.0, at every threshold); matches past
-- it are not returned and the arm reports `budget_cut`. The cheap
-- eligibility predicates come first so that only eligible rows pay for the
-- similarity.
-- The step returns its matches unranked, with their identity texts: the
-- service computes each match's word similarity (search::trgm, the same
-- value to the bit) and keeps the best `trigram_limit`. Computing it here
-- as well would repeat the recheck's work for every match (9-10 ms of a
-- 30 ms step with 500 matches at 100k). Texts or queries outside ASCII are
-- scored here (`score`), where the database's locale defines their words.
SELECT pp.product_id, pp.identity_text,
       CASE WHEN octet_length(pp.identity_text) <> length(pp.identity_text)
                 OR octet_length($13::text) <> length($13::text)
            THEN word_similarity($13::text, pp.identity_text)::float8 END AS score
FROM search.product_projection pp
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
      AND $11 <% pp.identity_text
      -- At threshold 1 (the perfect step) a match holds every trigram of
      -- each word of $11, in practice the word itself. When the price
      -- filter admits no product holding one of those words (the holders'
      -- price bounds in search.vocabulary, migration 0022), or no holder of
      -- one lies in the domain filter's domain (the holders' domains,
      -- migration 0025; NULL: unknown), nothing eligible can match: this
      -- condition holds no column, so the planner checks it once, before
      -- the scan, and skips the scan.
      AND NOT EXISTS (
          SELECT 1 FROM search.vocabulary v
          WHERE current_setting('pg_trgm.word_similarity_threshold', true)::float8 >= 1
            AND v.word = ANY (regexp_split_to_array(lower($11::text), '[^[:alnum:]]+'))
            AND (v.min_price_cents > $7 OR v.max_price_cents < $6 OR NOT $1 = ANY (v.domains)))
LIMIT $12;
