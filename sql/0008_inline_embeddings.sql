-- 0008: keep each product's embedding in its projection row.
--
-- pgvector stores a vector out of line (TOAST) by default, and a 384-float
-- vector (1.5 kB) plus the row's text pushed every row past the 2 kB TOAST
-- threshold: every distance the exact route computed, and every score of an
-- HNSW result, first fetched the vector through the TOAST index (mosaic
-- bench, 10k products: an exact scan over 909 eligible rows took 7-9 ms,
-- 2.3-3.4 ms with the vectors in the rows). PLAIN storage keeps the vector
-- in the row, and a 4 kB TOAST target keeps the rest of a typical row
-- (tsvector, texts) in it too, so the lexical arm's tsvectors do not move
-- out instead. A row takes about 2.6 kB, three to a page.
--
-- This applies to every row written from now on (loads, refreshes, the
-- embedding job). Rows written before keep their out-of-line vectors until
-- they are rewritten; `VACUUM FULL search.product_projection` rewrites them
-- all at once (it locks the table while it runs).
ALTER TABLE search.product_projection ALTER COLUMN embedding SET STORAGE PLAIN;
ALTER TABLE search.product_projection SET (toast_tuple_target = 4080);
