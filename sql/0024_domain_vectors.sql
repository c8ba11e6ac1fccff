-- 0024: an index that holds each domain's vectors, for the semantic arm's
-- exact scan of a domain filter's products.
--
-- A query none of whose nearest products lie in its domain filter's
-- domain (the anti-correlated case: "air fryer" among electronics) lies
-- far from every node of that domain's graph, where a greedy walk settles
-- in the first region it reaches; the arm walked 1,500 rows of the graph
-- to find the nearest ten, and still missed some. Scoring every product
-- of the domain is exact, but read from the table it visits each
-- product's whole row (about 4 kB at 100k products, text and all): 100-110
-- ms for the 35,000 products of one domain, three times the walk.
-- This index holds the domain, the vector and the columns the other
-- filters read (none of the text a search matches on), so the scan reads
-- the domain's vectors in index order and nothing else, when the table's
-- visibility map is current (autovacuum keeps it so): 27-31 ms for the
-- same 35,000 rows, and the walk's 32-40 ms (psql, 100k products).
-- The second key, a hash of the product id, splits each domain in two
-- halves of about the same size whatever the ids look like: the arm scans
-- them on two connections at the same time, 15-16 ms each for those
-- 35,000 rows, and keeps the nearest of both.
-- Partial like 0015's indexes: only embedded rows are candidates.
--
-- A B-tree entry holds at most 2,704 bytes: with a vector of more than 512
-- dimensions (Titan v2 and Cohere Embed give 1,024) an entry could pass
-- that, and an import would fail on it, so there the index is not made and
-- the arm keeps walking (search::arms::semantic asks whether it is there).
-- Running this file again changes nothing.
DO $$
BEGIN
    IF {{EMBEDDING_DIM}} <= 512 THEN
        CREATE INDEX IF NOT EXISTS projection_embedded_domain_vectors_idx
            ON search.product_projection (domain, (hashtext(product_id) & 1))
            INCLUDE (product_id, availability, in_stock, price_cents, rating, embedding)
            WHERE embedding IS NOT NULL;
    END IF;
END
$$;
