-- The query's lexemes (English stems, as the lexical documents hold them)
-- with the number of products holding each, and the catalog's statistics
-- (product count, mean length of each field of the lexical document), for
-- the rerank stage. No row when the query has no lexeme.
-- $1 the query without its negated terms
SELECT q.lexeme,
       coalesce(s.docs, 0)::float8 AS docs,
       c.products::float8, c.avg_identity, c.avg_title, c.avg_facets, c.avg_description
FROM unnest(tsvector_to_array(to_tsvector('english', $1))) AS q(lexeme)
CROSS JOIN search.catalog_stats c
LEFT JOIN search.lexeme_stats s ON s.lexeme = q.lexeme
ORDER BY q.lexeme
