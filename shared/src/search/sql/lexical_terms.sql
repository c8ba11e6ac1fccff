-- Lexical arm: each substantive query term ($1) as the tsquery of its own
-- lexemes (English stemming; a stop word gives an empty query, a hyphenated
-- word the phrase of its parts), in query order, with the number of
-- products that hold it (its rarest lexeme's count in search.lexeme_stats,
-- 0 when the catalog lacks one of them) and the catalog's product count,
-- for the relaxed steps (lexical_relaxed.sql).
SELECT t.term,
       plainto_tsquery('english', t.term)::text AS query,
       (SELECT coalesce(min(coalesce(s.docs, 0)), 0)
        FROM unnest(tsvector_to_array(to_tsvector('english', t.term))) AS l (lexeme)
        LEFT JOIN search.lexeme_stats s ON s.lexeme = l.lexeme)::bigint AS products,
       coalesce((SELECT c.products FROM search.catalog_stats c), 0)::bigint AS catalog
FROM unnest($1::text[]) WITH ORDINALITY AS t (term, i)
ORDER BY t.i;
