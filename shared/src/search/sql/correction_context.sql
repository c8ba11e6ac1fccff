-- Query understanding (search::understand): whether some product holds
-- vocabulary word $1 alongside query word $2, each read as plainto_tsquery
-- reads it (stemmed; a stop word drops out, and then the other word alone
-- decides). Asked only to settle a tie between corrections of a misspelt
-- word that are equally close to it: the one that products hold with more
-- of the query's other words wins. The caller turns sequential scans off
-- for these statements (SET LOCAL, set back in the same round trip), so
-- the documents' GIN index answers, even for two common words that no
-- product holds together. It returns no product, and applies no
-- eligibility: like the vocabulary, it only rewrites the query, and every
-- arm applies the filters to what the rewritten query matches.
SELECT EXISTS (
    SELECT 1
    FROM search.product_projection pp
    WHERE pp.document @@ (plainto_tsquery('english', $1) && plainto_tsquery('english', $2))
);
