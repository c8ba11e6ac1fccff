-- 0017: the catalog's term statistics (search.lexeme_stats,
-- search.catalog_stats, search.vocabulary) in time linear in what changed.
--
-- Before, every load and every import recounted them over the whole
-- catalog, and the lexeme count used ts_stat, which grows faster than the
-- catalog: about 30 s at 100k products, and more than half an hour
-- without finishing at a million. Now:
--
-- * a full recount (load, or an import that rewrites a large part of the
--   catalog) groups the documents' lexemes in a hash aggregate: 1.4 s
--   instead of 30 s at 100k, and linear in the catalog;
-- * an import of a few products recounts only those: their terms are
--   counted before and after their projection rows are rebuilt, and only
--   the difference is written (search.refresh_products below). An
--   unchanged product contributes nothing; a word that leaves the last
--   product holding it leaves the table.
--
-- Both paths write only the rows whose count changes, so a refresh leaves
-- the tables and their indexes as they were where nothing changed. The
-- three tables are locked (EXCLUSIVE: searches keep reading them) before
-- the first count, so two imports apply their differences one after the
-- other. Running this file again changes nothing.

-- How many positions of each weight class a lexical document has: A
-- identity, B title, C category and attributes, D description.
CREATE OR REPLACE FUNCTION search.document_weights(doc tsvector,
    OUT a integer, OUT b integer, OUT c integer, OUT d integer)
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT (count(*) FILTER (WHERE wt = 'A'))::integer, (count(*) FILTER (WHERE wt = 'B'))::integer,
           (count(*) FILTER (WHERE wt = 'C'))::integer, (count(*) FILTER (WHERE wt = 'D'))::integer
    FROM unnest(doc) u, unnest(u.weights) AS wt
$$;

-- The distinct vocabulary words of one product (0014: letters only, lower
-- case, split at anything that is not a letter or a digit).
CREATE OR REPLACE FUNCTION search.vocabulary_words(identity_text text, embedding_text text)
    RETURNS SETOF text LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT DISTINCT w
    FROM regexp_split_to_table(lower(identity_text || ' ' || embedding_text), '[^[:alnum:]]+') AS w
    WHERE w ~ '^[[:alpha:]]+$' AND length(w) <= 64
$$;

CREATE OR REPLACE FUNCTION search.refresh_lexeme_stats() RETURNS bigint
    LANGUAGE plpgsql AS $$
DECLARE
    n bigint;
BEGIN
    LOCK TABLE search.lexeme_stats, search.catalog_stats IN EXCLUSIVE MODE;
    -- A lexeme appears once in each document that holds it.
    WITH fresh AS (
        SELECT u.lexeme, count(*)::integer AS docs
        FROM search.product_projection pp
        CROSS JOIN LATERAL unnest(pp.document) u
        GROUP BY u.lexeme
    ), gone AS (
        DELETE FROM search.lexeme_stats s
        WHERE NOT EXISTS (SELECT 1 FROM fresh f WHERE f.lexeme = s.lexeme)
    )
    INSERT INTO search.lexeme_stats AS s (lexeme, docs)
    SELECT f.lexeme, f.docs FROM fresh f
    ON CONFLICT (lexeme) DO UPDATE SET docs = EXCLUDED.docs
        WHERE s.docs <> EXCLUDED.docs;
    DELETE FROM search.catalog_stats;
    INSERT INTO search.catalog_stats (products, avg_identity, avg_title, avg_facets, avg_description)
    SELECT count(*), coalesce(avg(w.a), 0), coalesce(avg(w.b), 0),
           coalesce(avg(w.c), 0), coalesce(avg(w.d), 0)
    FROM search.product_projection pp
    CROSS JOIN LATERAL search.document_weights(pp.document) w;
    SELECT count(*) INTO n FROM search.lexeme_stats;
    RETURN n;
END
$$;
REVOKE EXECUTE ON FUNCTION search.refresh_lexeme_stats() FROM PUBLIC;

CREATE OR REPLACE FUNCTION search.refresh_vocabulary() RETURNS bigint
    LANGUAGE plpgsql AS $$
DECLARE
    n bigint;
BEGIN
    LOCK TABLE search.vocabulary IN EXCLUSIVE MODE;
    WITH fresh AS (
        SELECT w.word, count(*)::integer AS products
        FROM search.product_projection pp
        CROSS JOIN LATERAL search.vocabulary_words(pp.identity_text, pp.embedding_text) AS w (word)
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

-- Rebuilds the projection rows of the given products (all when NULL) and
-- everything derived from them: the per-domain HNSW graphs (0006), the
-- lexeme and catalog statistics (0011) and the vocabulary (0014). Returns
-- the number of projection rows written. Loads and imports call this
-- (`mosaic::catalog::load::refresh_projection`).
--
-- Products are counted by difference unless they are a quarter of the
-- catalog or more: counting a product twice (before and after) and merging
-- the difference costs a few times what one product costs in a full
-- recount, so from about a quarter on the full recount is the cheaper one.
CREATE OR REPLACE FUNCTION search.refresh_products(only_ids text[] DEFAULT NULL)
    RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    n bigint;
    catalog_products bigint;
    old_lexemes text[];
    old_docs integer[];
    old_words text[];
    old_holders integer[];
    emptied text[];
    old_n bigint;
    old_a bigint;
    old_b bigint;
    old_c bigint;
    old_d bigint;
    new_n bigint;
    new_a bigint;
    new_b bigint;
    new_c bigint;
    new_d bigint;
BEGIN
    IF only_ids IS NOT NULL THEN
        LOCK TABLE search.lexeme_stats, search.catalog_stats, search.vocabulary IN EXCLUSIVE MODE;
        SELECT products INTO catalog_products FROM search.catalog_stats;
    END IF;
    IF only_ids IS NULL OR catalog_products IS NULL
       OR cardinality(only_ids)::bigint * 4 >= catalog_products THEN
        n := search.refresh_projection(only_ids);
        PERFORM search.refresh_domain_indexes();
        PERFORM search.refresh_lexeme_stats();
        PERFORM search.refresh_vocabulary();
        RETURN n;
    END IF;

    -- The terms of these products as they stand.
    SELECT coalesce(array_agg(s.lexeme), '{}'), coalesce(array_agg(s.docs), '{}')
    INTO old_lexemes, old_docs
    FROM (SELECT u.lexeme, count(*)::integer AS docs
          FROM search.product_projection pp CROSS JOIN LATERAL unnest(pp.document) u
          WHERE pp.product_id = ANY (only_ids)
          GROUP BY u.lexeme) s;
    SELECT coalesce(array_agg(s.word), '{}'), coalesce(array_agg(s.holders), '{}')
    INTO old_words, old_holders
    FROM (SELECT w.word, count(*)::integer AS holders
          FROM search.product_projection pp
          CROSS JOIN LATERAL search.vocabulary_words(pp.identity_text, pp.embedding_text) AS w (word)
          WHERE pp.product_id = ANY (only_ids)
          GROUP BY w.word) s;
    SELECT count(*), coalesce(sum(w.a), 0), coalesce(sum(w.b), 0),
           coalesce(sum(w.c), 0), coalesce(sum(w.d), 0)
    INTO old_n, old_a, old_b, old_c, old_d
    FROM search.product_projection pp
    CROSS JOIN LATERAL search.document_weights(pp.document) w
    WHERE pp.product_id = ANY (only_ids);

    n := search.refresh_projection(only_ids);
    PERFORM search.refresh_domain_indexes();

    -- Lexemes: add the difference, drop those no product holds any more.
    WITH delta AS (
        SELECT x.lexeme, sum(x.docs)::integer AS docs
        FROM (SELECT o.lexeme, -o.docs AS docs FROM unnest(old_lexemes, old_docs) AS o (lexeme, docs)
              UNION ALL
              SELECT u.lexeme, 1
              FROM search.product_projection pp CROSS JOIN LATERAL unnest(pp.document) u
              WHERE pp.product_id = ANY (only_ids)) x
        GROUP BY x.lexeme
        HAVING sum(x.docs) <> 0
    ), applied AS (
        INSERT INTO search.lexeme_stats AS s (lexeme, docs)
        SELECT d.lexeme, d.docs FROM delta d
        ON CONFLICT (lexeme) DO UPDATE SET docs = s.docs + EXCLUDED.docs
        RETURNING s.lexeme, s.docs
    )
    SELECT coalesce(array_agg(a.lexeme), '{}') INTO emptied FROM applied a WHERE a.docs <= 0;
    DELETE FROM search.lexeme_stats WHERE lexeme = ANY (emptied);

    -- Vocabulary words, the same way.
    WITH delta AS (
        SELECT x.word, sum(x.holders)::integer AS holders
        FROM (SELECT o.word, -o.holders AS holders FROM unnest(old_words, old_holders) AS o (word, holders)
              UNION ALL
              SELECT w.word, 1
              FROM search.product_projection pp
              CROSS JOIN LATERAL search.vocabulary_words(pp.identity_text, pp.embedding_text) AS w (word)
              WHERE pp.product_id = ANY (only_ids)) x
        GROUP BY x.word
        HAVING sum(x.holders) <> 0
    ), applied AS (
        INSERT INTO search.vocabulary AS v (word, products)
        SELECT d.word, d.holders FROM delta d
        ON CONFLICT (word) DO UPDATE SET products = v.products + EXCLUDED.products
        RETURNING v.word, v.products
    )
    SELECT coalesce(array_agg(a.word), '{}') INTO emptied FROM applied a WHERE a.products <= 0;
    DELETE FROM search.vocabulary WHERE word = ANY (emptied);

    -- The product count and the mean length of each weight class.
    SELECT count(*), coalesce(sum(w.a), 0), coalesce(sum(w.b), 0),
           coalesce(sum(w.c), 0), coalesce(sum(w.d), 0)
    INTO new_n, new_a, new_b, new_c, new_d
    FROM search.product_projection pp
    CROSS JOIN LATERAL search.document_weights(pp.document) w
    WHERE pp.product_id = ANY (only_ids);
    UPDATE search.catalog_stats SET
        products = products - old_n + new_n,
        avg_identity = CASE WHEN products - old_n + new_n > 0
            THEN (avg_identity * products - old_a + new_a) / (products - old_n + new_n) ELSE 0 END,
        avg_title = CASE WHEN products - old_n + new_n > 0
            THEN (avg_title * products - old_b + new_b) / (products - old_n + new_n) ELSE 0 END,
        avg_facets = CASE WHEN products - old_n + new_n > 0
            THEN (avg_facets * products - old_c + new_c) / (products - old_n + new_n) ELSE 0 END,
        avg_description = CASE WHEN products - old_n + new_n > 0
            THEN (avg_description * products - old_d + new_d) / (products - old_n + new_n) ELSE 0 END,
        refreshed_at = now();
    RETURN n;
END
$$;
REVOKE EXECUTE ON FUNCTION search.refresh_products(text[]) FROM PUBLIC;
