-- The catalog's domains, one index probe each (a loose scan of the domain
-- index): the semantic arm walks each domain's own graph.
WITH RECURSIVE d (domain) AS (
    (SELECT pp.domain FROM search.product_projection pp ORDER BY pp.domain LIMIT 1)
    UNION ALL
    SELECT (SELECT pp.domain FROM search.product_projection pp
            WHERE pp.domain > d.domain ORDER BY pp.domain LIMIT 1)
    FROM d WHERE d.domain IS NOT NULL
)
SELECT domain FROM d WHERE domain IS NOT NULL;
