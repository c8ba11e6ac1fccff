-- 0020: the planner's estimate of pg_trgm's word-similarity operators.
--
-- Migration 0007 leaves identity_text without value statistics, so the
-- planner estimates `q <% identity_text` with pg_trgm's default: 1% of the
-- catalog for every query and threshold (1,000 rows at 100k products,
-- 10,000 at a million). Real matches are usually far fewer. With that
-- estimate a price filter looks worth intersecting: under
-- `price_cents <= median` the planner ANDed the price index's bitmap of
-- half the catalog into each trigram step (500,000 entries at 1M, most of
-- a 112-150 ms step), to save heap visits for matches that mostly do not
-- exist. psql, 1M, one step at the floor, "kshp 1040" / "kestrl
-- headphones" / "wireless headphones" under the median price: 112 / 117 /
-- 149 ms with the default estimate, 27 / 62 / 82 ms with this one, which
-- filters the price on each match's row instead.
--
-- contsel, PostgreSQL's default estimate for containment-like operators
-- (0.1%), keeps the intersection where it pays: under a narrow price band
-- (0.5% of the catalog) the planner still ANDs the band's small bitmap in
-- (psql at 5k, 100k and 1M: the same plans as before). No row changes;
-- only where a step's scan budget cuts a long list of matches can another
-- plan keep a different subset of them.
--
-- Only the operators' owner (whoever created the extension) may change
-- this, as with 0007's costs: the local cluster's administrator does it in
-- template1 (scripts/db.sh); on a managed database run it once as the
-- extension owner (`mosaic migrate` prints the statements). Without the
-- privilege this step leaves a notice, and searches are only slower,
-- never wrong.
DO $$
BEGIN
    ALTER OPERATOR <% (text, text) SET (RESTRICT = contsel);
    ALTER OPERATOR %> (text, text) SET (RESTRICT = contsel);
EXCEPTION WHEN insufficient_privilege THEN
    RAISE NOTICE 'pg_trgm word-similarity estimate unchanged: run as the extension owner: %',
        'ALTER OPERATOR <% (text, text) SET (RESTRICT = contsel); '
        'ALTER OPERATOR %> (text, text) SET (RESTRICT = contsel);';
END
$$;
