-- 0022: a maximum price that excludes what the query names.
--
-- Two parts, both about a search such as "laptop" under a price no laptop
-- has: the semantic arm's graphs (1) and what the text arms know of the
-- prices of a word's holders (2).
--
-- 1. An HNSW graph of the catalog's cheaper half, for maximum prices.
--
-- A search with a maximum price walks the whole catalog's graph and
-- discards the products that cost more. When everything near the query
-- costs more ("laptop" under the median price: the cheapest laptop costs
-- three times the median), the walk meets thousands of ineligible products
-- before it finds enough eligible ones, and it stops at its scan budget
-- with too few rows. At a million products the semantic arm then walked
-- again with five times the budget (150-400 ms) and still found only about
-- half of the nearest eligible products (recall@10 0.1-0.8 against an exact
-- scan under the same filter).
--
-- A graph that holds only the products at or below a price (a ceiling)
-- has no such region: the laptops are not in it. PostgreSQL plans each search
-- with its parameter values, so `($7 IS NULL OR price_cents <= $7)` becomes
-- `price_cents <= <value>`, which implies the partial index's predicate
-- whenever the filter's maximum is at or below the ceiling; the planner
-- then walks the smallest graph that can serve the filter (pgvector's
-- cost grows with the graph). The rows are the same filter's rows: a
-- ceiling graph changes which products the walk meets first, never which
-- products are eligible.
--
-- The ceiling is the catalog's median price rounded up to two significant
-- figures (140.99 -> 150.00), so that a catalog whose prices drift a
-- little keeps its graph: one graph of about half the catalog, which
-- serves every maximum price at or under the median. A maximum above it
-- walks the whole catalog's graph as before. Graphs at each quartile were
-- measured too (mosaic bench, a million products, BENCHMARKS.md "A maximum
-- price that excludes what the query names"): the three of them, 3 GB,
-- crowded the whole catalog's and the domains' graphs out of a 6 GB buffer
-- cache and made unfiltered searches 1.6 times slower at p95.
-- The ceiling is data, so this function makes the index, and every full
-- projection refresh calls it: the graph of the current ceiling, none for
-- a ceiling that is gone. An import refreshed by difference adds its
-- products to the graph when they are under the ceiling and moves no
-- ceiling. Like the domain graphs, it is made when the catalog is loaded,
-- and fills as the products are embedded. Below `min_products` products
-- (50,000 by default, where the semantic arm starts walking each domain's
-- graph as well) there is none: a walk of a smaller catalog's graph meets
-- its eligible rows soon enough, and every graph costs each product write.
CREATE OR REPLACE FUNCTION search.refresh_price_indexes(min_products bigint DEFAULT 50000)
    RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    cap bigint;
    ceilings bigint[] := '{}';
    catalog_size bigint;
    top bigint;
    idx text;
    stale text[];
    wanted text[] := '{}';
BEGIN
    -- Read first: an index cannot be created while a loop still reads the table.
    SELECT count(*), max(price_cents) INTO catalog_size, top FROM search.product_projection;
    IF catalog_size >= min_products THEN
        SELECT coalesce(array_agg(DISTINCT r.rounded ORDER BY r.rounded), '{}') INTO ceilings
        FROM (SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY price_cents) AS q
              FROM search.product_projection) s
        CROSS JOIN LATERAL (
            SELECT CASE WHEN s.q < 100 THEN s.q
                        ELSE (ceil(s.q::numeric / 10 ^ (length(s.q::text) - 2))
                              * 10 ^ (length(s.q::text) - 2))::bigint END AS rounded
        ) r
        -- A ceiling at or above every price would be the whole catalog's graph.
        WHERE r.rounded < top;
    END IF;
    FOREACH cap IN ARRAY ceilings LOOP
        idx := 'projection_embedding_hnsw_p_' || cap;
        wanted := wanted || idx;
        EXECUTE format(
            'CREATE INDEX IF NOT EXISTS %I ON search.product_projection '
            'USING hnsw (embedding vector_cosine_ops) WITH (m = 16, ef_construction = 200) '
            'WHERE price_cents <= %s::bigint', idx, cap);
    END LOOP;
    SELECT coalesce(array_agg(c.relname::text), '{}') INTO stale
    FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
    WHERE i.indrelid = 'search.product_projection'::regclass
      AND c.relname LIKE 'projection\_embedding\_hnsw\_p\_%'
      AND NOT c.relname::text = ANY (wanted);
    FOREACH idx IN ARRAY stale LOOP
        EXECUTE format('DROP INDEX search.%I', idx);
    END LOOP;
    RETURN cardinality(wanted);
END
$$;

REVOKE EXECUTE ON FUNCTION search.refresh_price_indexes(bigint) FROM PUBLIC;

-- 2. The price range of each lexeme's and each vocabulary word's holders.
--
-- The same search's text arms match the word in thousands of products and
-- check each one's price to keep none ("camera" at a million products,
-- every camera dearer than the filter allows: 80-150 ms in each text arm).
-- search.lexeme_stats and search.vocabulary now keep the lowest and highest
-- price among the products holding each lexeme (in the lexical document)
-- and each word (in the identity or description text). A step whose every
-- match must hold a word none of whose holders the price filter admits can
-- match nothing eligible, and the arms skip it without reading an index
-- (lexical.sql, lexical_relaxed.sql through arms::Relaxation, trigram.sql).
-- The bounds are exact after a full refresh; a refresh by difference only
-- widens them (a product that leaves, or costs more, leaves them as they
-- were), so they always hold every holder's price, and a skipped step is
-- always one that would have found nothing the filter admits. NULL means
-- unknown and skips nothing.
ALTER TABLE search.lexeme_stats
    ADD COLUMN IF NOT EXISTS min_price_cents bigint,
    ADD COLUMN IF NOT EXISTS max_price_cents bigint;
ALTER TABLE search.vocabulary
    ADD COLUMN IF NOT EXISTS min_price_cents bigint,
    ADD COLUMN IF NOT EXISTS max_price_cents bigint;

-- As in 0017, with the price bounds.

CREATE OR REPLACE FUNCTION search.refresh_lexeme_stats() RETURNS bigint
    LANGUAGE plpgsql AS $$
DECLARE
    n bigint;
BEGIN
    LOCK TABLE search.lexeme_stats, search.catalog_stats IN EXCLUSIVE MODE;
    -- A lexeme appears once in each document that holds it.
    WITH fresh AS (
        SELECT u.lexeme, count(*)::integer AS docs,
               min(pp.price_cents) AS min_price_cents, max(pp.price_cents) AS max_price_cents
        FROM search.product_projection pp
        CROSS JOIN LATERAL unnest(pp.document) u
        GROUP BY u.lexeme
    ), gone AS (
        DELETE FROM search.lexeme_stats s
        WHERE NOT EXISTS (SELECT 1 FROM fresh f WHERE f.lexeme = s.lexeme)
    )
    INSERT INTO search.lexeme_stats AS s (lexeme, docs, min_price_cents, max_price_cents)
    SELECT f.lexeme, f.docs, f.min_price_cents, f.max_price_cents FROM fresh f
    ON CONFLICT (lexeme) DO UPDATE SET docs = EXCLUDED.docs,
        min_price_cents = EXCLUDED.min_price_cents, max_price_cents = EXCLUDED.max_price_cents
        WHERE (s.docs, s.min_price_cents, s.max_price_cents)
              IS DISTINCT FROM (EXCLUDED.docs, EXCLUDED.min_price_cents, EXCLUDED.max_price_cents);
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
        SELECT w.word, count(*)::integer AS products,
               min(pp.price_cents) AS min_price_cents, max(pp.price_cents) AS max_price_cents
        FROM search.product_projection pp
        CROSS JOIN LATERAL search.vocabulary_words(pp.identity_text, pp.embedding_text) AS w (word)
        GROUP BY w.word
    ), gone AS (
        DELETE FROM search.vocabulary v
        WHERE NOT EXISTS (SELECT 1 FROM fresh f WHERE f.word = v.word)
    )
    INSERT INTO search.vocabulary AS v (word, products, min_price_cents, max_price_cents)
    SELECT f.word, f.products, f.min_price_cents, f.max_price_cents FROM fresh f
    ON CONFLICT (word) DO UPDATE SET products = EXCLUDED.products,
        min_price_cents = EXCLUDED.min_price_cents, max_price_cents = EXCLUDED.max_price_cents
        WHERE (v.products, v.min_price_cents, v.max_price_cents)
              IS DISTINCT FROM (EXCLUDED.products, EXCLUDED.min_price_cents, EXCLUDED.max_price_cents);
    SELECT count(*) INTO n FROM search.vocabulary;
    ANALYZE search.vocabulary;
    RETURN n;
END
$$;
REVOKE EXECUTE ON FUNCTION search.refresh_vocabulary() FROM PUBLIC;

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
        PERFORM search.refresh_price_indexes();
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
    -- Price bounds only widen here (a product that leaves or costs more
    -- leaves them as they were): they hold every holder's price, and the
    -- next full refresh makes them exact again.
    WITH delta AS (
        SELECT x.lexeme, sum(x.docs)::integer AS docs,
               min(x.price_cents) AS min_price_cents, max(x.price_cents) AS max_price_cents
        FROM (SELECT o.lexeme, -o.docs AS docs, NULL::bigint AS price_cents
              FROM unnest(old_lexemes, old_docs) AS o (lexeme, docs)
              UNION ALL
              SELECT u.lexeme, 1, pp.price_cents
              FROM search.product_projection pp CROSS JOIN LATERAL unnest(pp.document) u
              WHERE pp.product_id = ANY (only_ids)) x
        GROUP BY x.lexeme
        HAVING sum(x.docs) <> 0 OR count(x.price_cents) > 0
    ), applied AS (
        INSERT INTO search.lexeme_stats AS s (lexeme, docs, min_price_cents, max_price_cents)
        SELECT d.lexeme, d.docs, d.min_price_cents, d.max_price_cents FROM delta d
        ON CONFLICT (lexeme) DO UPDATE SET docs = s.docs + EXCLUDED.docs,
            min_price_cents = CASE WHEN s.min_price_cents IS NOT NULL
                THEN least(s.min_price_cents, EXCLUDED.min_price_cents) END,
            max_price_cents = CASE WHEN s.max_price_cents IS NOT NULL
                THEN greatest(s.max_price_cents, EXCLUDED.max_price_cents) END
        RETURNING s.lexeme, s.docs
    )
    SELECT coalesce(array_agg(a.lexeme), '{}') INTO emptied FROM applied a WHERE a.docs <= 0;
    DELETE FROM search.lexeme_stats WHERE lexeme = ANY (emptied);

    -- Vocabulary words, the same way.
    WITH delta AS (
        SELECT x.word, sum(x.holders)::integer AS holders,
               min(x.price_cents) AS min_price_cents, max(x.price_cents) AS max_price_cents
        FROM (SELECT o.word, -o.holders AS holders, NULL::bigint AS price_cents
              FROM unnest(old_words, old_holders) AS o (word, holders)
              UNION ALL
              SELECT w.word, 1, pp.price_cents
              FROM search.product_projection pp
              CROSS JOIN LATERAL search.vocabulary_words(pp.identity_text, pp.embedding_text) AS w (word)
              WHERE pp.product_id = ANY (only_ids)) x
        GROUP BY x.word
        HAVING sum(x.holders) <> 0 OR count(x.price_cents) > 0
    ), applied AS (
        INSERT INTO search.vocabulary AS v (word, products, min_price_cents, max_price_cents)
        SELECT d.word, d.holders, d.min_price_cents, d.max_price_cents FROM delta d
        ON CONFLICT (word) DO UPDATE SET products = v.products + EXCLUDED.products,
            min_price_cents = CASE WHEN v.min_price_cents IS NOT NULL
                THEN least(v.min_price_cents, EXCLUDED.min_price_cents) END,
            max_price_cents = CASE WHEN v.max_price_cents IS NOT NULL
                THEN greatest(v.max_price_cents, EXCLUDED.max_price_cents) END
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

-- As in 0009. A million products' ceiling graph takes minutes to build
-- (half a million graph nodes); product writes wait for it. The
-- statistics are counted again, with their price bounds.
SET LOCAL maintenance_work_mem = '1GB';
SELECT search.refresh_price_indexes();
SELECT search.refresh_lexeme_stats();
SELECT search.refresh_vocabulary();
