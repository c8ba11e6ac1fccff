-- Whether the query lies near a domain's products: how many of the
-- catalog's $3 nearest products (a short walk of the whole catalog's graph,
-- no filter) are in domain $2. Under a domain filter the semantic arm walks
-- that domain's own graph; a query none of whose nearest products are in
-- it lies far from every node of that graph, where a greedy walk settles
-- early, and the arm walks that graph longer (arms::semantic). Returns a
-- count, never a product: nothing here is a candidate.
-- In a catalog smaller than $4 products (the planner's estimate, as the
-- selectivity probe reads it) the answer is not used, and the walk does not
-- run: the condition is checked once, before it.
-- $1 the query vector, $2 the filter's domain, $3 how many neighbours,
-- $4 the catalog size from which the answer is used.
SELECT count(*) FILTER (WHERE near.domain = $2)
FROM (
    SELECT pp.domain
    FROM search.product_projection pp
    WHERE pp.embedding IS NOT NULL
    ORDER BY pp.embedding <=> $1
    LIMIT $3
) near
WHERE (SELECT greatest(c.reltuples, 0)::bigint FROM pg_catalog.pg_class c
       WHERE c.oid = 'search.product_projection'::regclass) >= $4;
