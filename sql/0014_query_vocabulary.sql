-- 0014: the catalog's vocabulary, for correcting misspelt query words
-- before the arms run (`shared/src/search/understand.rs`).
--
-- search.vocabulary holds every word of letters only in the products'
-- searchable text (brand, model, SKU, title, aliases, category, attribute
-- values, description), lower case, split at anything that is not a letter
-- or a digit, with the number of products that hold it. Only such words
-- are ever corrected or proposed, so tokens with digits (SKUs, model
-- numbers: most of a large catalog's distinct tokens) are left out: 999
-- words instead of 217k at 100k generated products, and a lookup in
-- fractions of a millisecond instead of 2-7 ms. A query word that is not
-- in it, and is no English word, is looked up here among its trigram
-- neighbours; the closest by edit distance, then the most common,
-- replaces it for the text arms. The GIN trigram index serves that
-- lookup.
--
-- It is rebuilt whole by search.refresh_vocabulary() after every load and
-- import (`mosaic::catalog::load::refresh_projection`), in the loading
-- transaction: searches keep reading the previous words until it commits.
-- This file builds it once for a catalog loaded before it existed.
--
-- receipts.search_events.query_understanding records what the step did
-- for each search (its corrections and the identifiers it saw); NULL for a
-- filters-only search and for events recorded before this migration. The
-- runtime role's table-level SELECT and INSERT (0012) cover the column.
-- Running this file again changes nothing.
CREATE TABLE IF NOT EXISTS search.vocabulary (
    word     text PRIMARY KEY,
    products integer NOT NULL
);
CREATE INDEX IF NOT EXISTS vocabulary_word_trgm_idx
    ON search.vocabulary USING gin (word gin_trgm_ops);
GRANT SELECT ON search.vocabulary TO {{RUNTIME_ROLE}};

CREATE OR REPLACE FUNCTION search.refresh_vocabulary() RETURNS bigint
    LANGUAGE plpgsql AS $$
DECLARE
    n bigint;
BEGIN
    -- Writers wait for each other; readers keep the committed words. Only
    -- the words that come, go or change their count are written, so a
    -- refresh after a small import leaves the table and its indexes as
    -- they were (rewriting every row would leave the trigram index full of
    -- dead entries that every lookup scans until a vacuum).
    LOCK TABLE search.vocabulary IN EXCLUSIVE MODE;
    WITH fresh AS (
        SELECT w.word, count(DISTINCT pp.product_id)::integer AS products
        FROM search.product_projection pp
        CROSS JOIN LATERAL regexp_split_to_table(
            lower(pp.identity_text || ' ' || pp.embedding_text), '[^[:alnum:]]+') AS w (word)
        WHERE w.word ~ '^[[:alpha:]]+$' AND length(w.word) <= 64
        GROUP BY w.word
    ), gone AS (
        DELETE FROM search.vocabulary v
        WHERE NOT EXISTS (SELECT 1 FROM fresh f WHERE f.word = v.word)
    )
    INSERT INTO search.vocabulary AS v (word, products)
    SELECT f.word, f.products FROM fresh f
    ON CONFLICT (word) DO UPDATE SET products = EXCLUDED.products
        WHERE v.products <> EXCLUDED.products;
    SELECT count(*) INTO n FROM search.vocabulary;
    ANALYZE search.vocabulary;
    RETURN n;
END
$$;
REVOKE EXECUTE ON FUNCTION search.refresh_vocabulary() FROM PUBLIC;

-- A catalog loaded before this migration gets its vocabulary now.
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM search.vocabulary)
       AND EXISTS (SELECT 1 FROM search.product_projection) THEN
        PERFORM search.refresh_vocabulary();
    END IF;
END
$$;

ALTER TABLE receipts.search_events ADD COLUMN IF NOT EXISTS query_understanding jsonb;
