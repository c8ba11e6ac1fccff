-- 0010: an index in the order of a filters-only search.
--
-- A search without a query (strategy metadata_only) serves the eligible
-- products in a fixed order: rating (best first, unrated last), price,
-- product id. Without an index in that order PostgreSQL read every
-- eligible row and kept the top 50 in a heap sort: psql, warm, EXPLAIN
-- ANALYZE of the statement with the service's parameters, median of
-- three, no filter / price <= median / in stock only / one category:
--   100k products:  102 / 100 / 109 / 8 ms
--   1M products:   1134 / 964 / 998 / 58 ms
-- (the 1M plans also crossed the JIT thresholds and compiled for 0.3-0.4 s
-- on a fresh connection). With this index the planner walks the order and
-- stops at the 50th eligible row; BENCHMARKS.md has the numbers after.
-- A selective filter keeps its own plan (its index, then the sort).
CREATE INDEX IF NOT EXISTS projection_metadata_order_idx ON search.product_projection
    (rating DESC NULLS LAST, price_cents, product_id);
