-- 0019: an index of the embedded rows by category and price, for the
-- semantic arm under a category filter.
--
-- A category filter with a price band (a shop's usual facet pair) had no
-- index of its own: the planner ANDed the bitmap of every row of the
-- category with the bitmap of every embedded row of the price band. At a
-- million products that is 32,000 and 244,000 entries, 57 ms, paid twice
-- per search: by the semantic arm's selectivity probe (62 ms to count
-- 1001 rows) and again by its nearest-neighbour statement, which the
-- planner answers by sorting the ~10,000 eligible rows (85 ms; psql,
-- EXPLAIN ANALYZE, "headphones" at 35-65% of its price range).
-- With this index the probe is an index-only scan (0.5 ms) and the
-- statement reads the eligible rows straight from it (27 ms). A category
-- filter without a price range uses the same index by its first column.
-- Partial like 0015's indexes: only embedded rows are candidates of the
-- semantic arm.
CREATE INDEX IF NOT EXISTS projection_embedded_category_price_idx ON search.product_projection
    (category_key, price_cents) WHERE embedding IS NOT NULL;
