-- 0018: the two text arms' GIN indexes also hold the taxonomy filters.
--
-- The lexical arm's full-text match and the trigram arm's word-similarity
-- match each had an index of their own (0003), and a domain, category or
-- brand filter was applied afterwards: either by ANDing the btree bitmap
-- of every row of the domain (about 355,000 entries at a million products:
-- 57 ms of a 79 ms match for "air fryer" filtered to electronics) or by
-- fetching each text match's row and dropping the ineligible ones (22,700
-- heap rows for a misspelt "kestrl headphones" filtered to home_kitchen,
-- none of them eligible: 150-460 ms). A query's words that belong to
-- another domain than its filter (the bench's anti-correlated shape) paid
-- this in full.
--
-- With btree_gin, one GIN index holds the domain, the category and the
-- brand beside the document (or the identity text's trigrams), and the
-- index intersects the posting lists itself: 8.7 ms and 26 ms for the two
-- examples above (psql, 1M products). Without a taxonomy filter the
-- planner uses the same index for the text condition alone, as it used the
-- old one. Every arm keeps the one eligibility predicate; only the indexes
-- change, so no result changes except where a scan budget cuts a longer
-- list of matches in a different place.
--
-- btree_gin is a trusted contrib extension (PostgreSQL 13+, Aurora
-- PostgreSQL included): the database's owner may create it.
CREATE EXTENSION IF NOT EXISTS btree_gin;

CREATE INDEX IF NOT EXISTS projection_document_taxonomy_idx
    ON search.product_projection USING gin (domain, category_key, brand_key, document);
CREATE INDEX IF NOT EXISTS projection_identity_trgm_taxonomy_idx
    ON search.product_projection USING gin (domain, category_key, brand_key, identity_text gin_trgm_ops);
DROP INDEX IF EXISTS search.projection_document_idx;
DROP INDEX IF EXISTS search.projection_identity_trgm_idx;
