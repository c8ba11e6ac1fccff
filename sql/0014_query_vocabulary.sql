-- 0014: the catalog's vocabulary, for correcting misspelt query words
-- before the arms run (`shared/src/search/understand.rs`).
--
-- search.vocabulary holds every word of the products' searchable text
-- (brand, model, SKU, title, aliases, category, attribute values,
-- description), lower case, split at anything that is not a letter or a
-- digit, with the number of products that hold it. A query word that is
-- not in it, and that is a word (letters only), is looked up here among
-- its trigram neighbours; the closest by edit distance, then the most
-- common, replaces it for the arms and the rerank stage. The GIN trigram
-- index serves that lookup.
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
    -- Writers wait for each other; readers keep the committed words.
    LOCK TABLE search.vocabulary IN EXCLUSIVE MODE;
    DELETE FROM search.vocabulary;
    INSERT INTO search.vocabulary (word, products)
    SELECT w.word, count(DISTINCT pp.product_id)::integer
    FROM search.product_projection pp
    CROSS JOIN LATERAL regexp_split_to_table(
        lower(pp.identity_text || ' ' || pp.embedding_text), '[^[:alnum:]]+') AS w (word)
    WHERE w.word <> '' AND length(w.word) <= 64
    GROUP BY w.word;
    GET DIAGNOSTICS n = ROW_COUNT;
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
