-- 0007: planning the trigram arm.
--
-- 1. No value statistics for identity_text. pg_trgm estimates `<%` by
--    running word similarity against every most-common value and histogram
--    entry of the column while planning: with the default statistics target
--    that is about 200 similarity computations per planned statement (1.6 ms
--    per cascade step at 100k products), and the estimate it gave was still
--    off by two orders of magnitude. With target 1 the planner takes
--    pg_trgm's default selectivity instead, which is as good and costs
--    nothing. The other columns keep their statistics.
ALTER TABLE search.product_projection ALTER COLUMN identity_text SET STATISTICS 1;
ANALYZE search.product_projection (identity_text);

-- 2. The word-similarity operators' declared cost. PostgreSQL orders the
--    conditions of one scan by their declared cost, and pg_trgm declares the
--    functions behind `<%` and `%>` as cheap as `=`. When the trigram arm's
--    rows come from a filter index (a domain or price filter), the similarity
--    (~20 us per row at ~100 characters) was then computed for every row
--    before the eligibility conditions rejected it (mosaic bench, 100k, a
--    query about one domain filtered to another: 83 ms for one cascade step,
--    14 ms with this cost). COST 100 puts every eligibility condition first.
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
