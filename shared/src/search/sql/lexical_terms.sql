-- Lexical arm: each substantive query term ($1) as the tsquery of its own
-- lexemes (English stemming; a stop word gives an empty query, a hyphenated
-- word the phrase of its parts), in query order, with the number of
-- products that hold it (its rarest lexeme's count in search.lexeme_stats,
-- 0 when the catalog lacks one of them), the catalog's product count, and
-- the price range every product holding the term lies in (each lexeme's
-- holders' bounds, migration 0022, intersected: a holder of the term holds
-- every one of its lexemes; NULL: unknown), and whether some product of
-- the domain $2 may hold it (false only when one of its lexemes' holders'
-- domains, migration 0025, leaves that domain out; true for $2 NULL), for
-- the relaxed steps (lexical_relaxed.sql).
SELECT t.term,
       plainto_tsquery('english', t.term)::text AS query,
       lexemes.products,
       coalesce((SELECT c.products FROM search.catalog_stats c), 0)::bigint AS catalog,
       lexemes.min_price_cents, lexemes.max_price_cents, lexemes.in_domain
FROM unnest($1::text[]) WITH ORDINALITY AS t (term, i)
CROSS JOIN LATERAL (
    -- A lexeme the catalog lacks counts 0 products and bounds nothing.
    SELECT coalesce(min(coalesce(s.docs, 0)), 0)::bigint AS products,
           max(s.min_price_cents) AS min_price_cents, min(s.max_price_cents) AS max_price_cents,
           coalesce(bool_and($2::text IS NULL OR s.domains IS NULL OR $2::text = ANY (s.domains)),
                    true) AS in_domain
    FROM unnest(tsvector_to_array(to_tsvector('english', t.term))) AS l (lexeme)
    LEFT JOIN search.lexeme_stats s ON s.lexeme = l.lexeme
) lexemes
ORDER BY t.i;
