-- The catalog's domains, one index probe each (a loose scan of the domain
-- index): the semantic arm walks each domain's own graph. None while the
-- projection holds fewer than $1 rows by the planner's estimate (never
-- analysed: 0 rows), a one-time filter: the loose scan then does not run.
WITH RECURSIVE d (domain) AS (
    (SELECT pp.domain FROM search.product_projection pp ORDER BY pp.domain LIMIT 1)
    UNION ALL
    SELECT (SELECT pp.domain FROM search.product_projection pp
            WHERE pp.domain > d.domain ORDER BY pp.domain LIMIT 1)
    FROM d WHERE d.domain IS NOT NULL
)
SELECT domain FROM d
WHERE domain IS NOT NULL
  AND (SELECT greatest(c.reltuples, 0)::bigint FROM pg_catalog.pg_class c
       WHERE c.oid = 'search.product_projection'::regclass) >= $1::bigint;
