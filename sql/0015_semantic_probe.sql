-- 0015: indexes that answer the semantic arm's selectivity probe alone.
--
-- The probe (shared/src/search/sql/eligible_count.sql) counts eligible
-- embedded rows up to the exact-scan threshold + 1. Without a filter the
-- planner read them with a sequential scan, whose ring buffer keeps none
-- of the ~500 pages it touches at 100k products in shared buffers, and
-- under a price filter it built a bitmap of every row in the price range
-- before counting 1001 of them; under a domain filter it scanned the
-- table until 1001 rows of the domain had passed. psql, EXPLAIN ANALYZE,
-- 100k products, no filter / price <= $50 / one domain: 2.6 / 7-9 /
-- 6-14 ms.
-- With these partial indexes (only embedded rows) the count is an
-- index-only scan in each of the three: 0.25 ms. Other filters keep
-- their plans.
CREATE INDEX IF NOT EXISTS projection_embedded_price_idx ON search.product_projection
    (price_cents) WHERE embedding IS NOT NULL;
CREATE INDEX IF NOT EXISTS projection_embedded_domain_idx ON search.product_projection
    (domain) WHERE embedding IS NOT NULL;
