-- 0007: planning the trigram arm.
--
-- 1. No value statistics for identity_text. pg_trgm estimates `<%` by
--    running word similarity against the column's most-common values and
--    histogram entries while planning: with the default statistics target
--    that cost 1.8-2.3 ms of planning per cascade step at 100k products
--    (psql, EXPLAIN SUMMARY), 0.1-0.2 ms with target 1, where the planner
--    takes pg_trgm's default selectivity instead. The other columns keep
--    their statistics.
ALTER TABLE search.product_projection ALTER COLUMN identity_text SET STATISTICS 1;
ANALYZE search.product_projection (identity_text);

-- 2. The word-similarity operators' declared cost. PostgreSQL orders the
--    conditions of one scan by their declared cost, and pg_trgm declares the
--    functions behind `<%` and `%>` as cheap as `=`. In a plan that checks
--    both the eligibility conditions and the similarity as filters of one
--    scan, the similarity (~20 us per row at ~100 characters) then ran
--    before a domain condition could reject the row. COST 100 puts every
--    eligibility condition first (tests/search.rs checks the order).
--
--    Only the functions' owner (whoever created the extension) may change
--    this. The local cluster's administrator does it in template1
--    (scripts/db.sh); on a managed database run it once as the extension
--    owner (see the README). Without the privilege this step leaves a
--    notice, `mosaic migrate` prints the statements, and searches are only
--    slower, never wrong.
DO $$
BEGIN
    ALTER FUNCTION word_similarity_op(text, text) COST 100;
    ALTER FUNCTION word_similarity_commutator_op(text, text) COST 100;
EXCEPTION WHEN insufficient_privilege THEN
    RAISE NOTICE 'pg_trgm word-similarity cost unchanged: run as the extension owner: %',
        'ALTER FUNCTION word_similarity_op(text, text) COST 100; '
        'ALTER FUNCTION word_similarity_commutator_op(text, text) COST 100;';
END
$$;
