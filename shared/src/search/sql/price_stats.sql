-- The price column's statistics, as ANALYZE left them (after every load,
-- and autovacuum's): the share of products without a price, the most
-- common prices with their frequencies, the histogram's bounds over the
-- rest (equal shares of it between neighbouring bounds), and the
-- catalog's rows as the planner counts them. NULL statistics when the
-- column has none yet. The lexical arm estimates a price filter's share
-- of the catalog from them (arms::PriceStats), to choose how its
-- statements check the price.
SELECT st.null_frac::float8 AS null_frac,
       st.most_common_vals::text::bigint[] AS common_prices,
       st.most_common_freqs::float8[] AS common_freqs,
       st.histogram_bounds::text::bigint[] AS bounds,
       greatest(c.reltuples, 0)::float8 AS rows
FROM pg_class c
LEFT JOIN pg_stats st
  ON st.schemaname = 'search' AND st.tablename = 'product_projection'
 AND st.attname = 'price_cents'
WHERE c.oid = 'search.product_projection'::regclass;
