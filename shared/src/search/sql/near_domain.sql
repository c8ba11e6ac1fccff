-- Whether the query lies near a domain's products: how many of the
-- catalog's $3 nearest products (a short walk of the whole catalog's graph,
-- no filter) are in domain $2. Under a domain filter the semantic arm walks
-- that domain's own graph; a query none of whose nearest products are in
-- it lies far from every node of that graph, where a greedy walk settles
-- early, and the arm walks that graph longer or, when the domain is small
-- enough, scores its products exactly (arms::semantic). Returns a count,
-- never a product: nothing here is a candidate.
-- When that count is 0, also the domain's products by the planner's
-- statistics (its share of the catalog among the most common values,
-- times the catalog's size), NULL when the statistics do not list it or
-- migration 0024's index of the domains' vectors is not there: the arm
-- then does not scan exactly.
-- In a catalog smaller than $4 products (the planner's estimate, as the
-- selectivity probe reads it) the answer is not used, and the walk does not
-- run: the condition is checked once, before it.
-- $1 the query vector, $2 the filter's domain, $3 how many neighbours,
-- $4 the catalog size from which the answer is used.
SELECT n.near,
       CASE WHEN n.near = 0 THEN (
           SELECT round(f.freq * greatest(c.reltuples, 0))::bigint
           FROM pg_catalog.pg_stats s
           CROSS JOIN LATERAL unnest(s.most_common_vals::text::text[], s.most_common_freqs)
               AS f (val, freq)
           CROSS JOIN pg_catalog.pg_class c
           WHERE s.schemaname = 'search' AND s.tablename = 'product_projection'
             AND s.attname = 'domain' AND f.val = $2
             AND c.oid = 'search.product_projection'::regclass
             AND to_regclass('search.projection_embedded_domain_vectors_idx') IS NOT NULL
           LIMIT 1)
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
