-- Whether the query lies near a domain's products: how many of the
-- catalog's $3 nearest products (a short walk of the whole catalog's graph,
-- no filter) are in domain $2. Under a domain filter the semantic arm walks
-- that domain's own graph; a query none of whose nearest products are in
-- it lies far from every node of that graph, where a greedy walk settles
-- early, and the arm walks that graph longer (arms::semantic). Returns a
-- count, never a product: nothing here is a candidate.
-- $1 the query vector, $2 the filter's domain, $3 how many neighbours.
SELECT count(*) FILTER (WHERE near.domain = $2)
FROM (
    SELECT pp.domain
    FROM search.product_projection pp
    WHERE pp.embedding IS NOT NULL
    ORDER BY pp.embedding <=> $1
    LIMIT $3
) near;
