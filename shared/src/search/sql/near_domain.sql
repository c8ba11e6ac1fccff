-- Whether the query lies near a domain's products: how many of the
-- catalog's $3 nearest products (a short walk of the whole catalog's graph,
-- no filter) are in domain $2. Under a domain filter the semantic arm walks
-- that domain's own graph; a query none of whose nearest products are in
-- it lies far from every node of that graph, where a greedy walk settles
-- early, and the arm walks that graph longer or, when the domain is small
-- enough, scores its products exactly (arms::semantic). Returns a count,
-- never a product: nothing here is a candidate.
-- When that count is 0, also the domain's embedded products by the
-- planner's statistics: the entries of the domain's own graph (its
-- partial HNSW index, named by a hash of the domain as
-- search.refresh_domain_indexes names it, migrations 0006 and 0009),
-- which CREATE INDEX, VACUUM and ANALYZE keep; NULL when that graph or
-- migration 0024's index of the domains' vectors is not there, or its
-- size was never counted: the arm then does not scan exactly. One catalog
-- row read by its oid, so the statement plans as cheaply as the walk
-- alone (the pg_stats view cost more to plan than the walk to run).
-- In a catalog smaller than $4 products (the planner's estimate, as the
-- selectivity probe reads it) the answer is not used, and the walk does not
-- run: the condition is checked once, before it.
-- $1 the query vector, $2 the filter's domain, $3 how many neighbours,
-- $4 the catalog size from which the answer is used.
SELECT n.near,
       CASE WHEN n.near = 0 THEN (
           SELECT round(c.reltuples)::bigint
           FROM pg_catalog.pg_class c
           WHERE c.oid = to_regclass('search.projection_embedding_hnsw_d_' || substr(md5($2), 1, 16))
             AND c.reltuples >= 0
             AND to_regclass('search.projection_embedded_domain_vectors_idx') IS NOT NULL)
       END
FROM (
    SELECT count(*) FILTER (WHERE near.domain = $2) AS near
    FROM (
        SELECT pp.domain
        FROM search.product_projection pp
        WHERE pp.embedding IS NOT NULL
        ORDER BY pp.embedding <=> $1
        LIMIT $3
    ) near
    WHERE (SELECT greatest(c.reltuples, 0)::bigint FROM pg_catalog.pg_class c
           WHERE c.oid = 'search.product_projection'::regclass) >= $4
) n;
