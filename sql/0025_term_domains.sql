-- 0025: the domains each lexeme's and each word's holders lie in.
--
-- Under a domain filter, the lexical arm's relaxed steps (at least k of
-- the query's terms, then any one of them) searched the GIN index for
-- every term of the query, including the terms no product of that domain
-- holds. A descriptive query under another domain's filter ("Ergonomic
-- Chair easing lower back pain at a desk" among outdoor products, a
-- million products) holds none of its seven terms there, yet each k-of-n
-- step merged the seven terms' posting lists across the whole catalog and
-- checked every document on them against the step's query: about 10 ms
-- for six of seven, 30 for four of seven and 7 for any one, to find
-- nothing (BENCHMARKS.md, "A term the filter's domain does not hold").
--
-- search.lexeme_stats now keeps, beside each lexeme's price bounds (0022),
-- the domains its holders lie in. A term none of whose holders lies in the
-- filter's domain stands in each step as a lexeme no document holds, as a
-- term no eligible price admits already does (arms::Relaxation): the
-- steps, their order and their modes stay those of the catalog's counts,
-- each step matches the same eligible products, and GIN, which starts a
-- scan from the entries a match needs, finds a step that needs more terms
-- than the domain's products hold from the stand-ins' empty entries
-- without reading a posting list. The strict query skips its scan when
-- one of the lexemes it needs has no holder in the domain (lexical.sql).
--
-- search.vocabulary keeps its words' domains the same way, for the trigram
-- arm's perfect step: a category word the filter's domain lacks ("Air
-- Purifier" among electronics) made that step scan the trigram index for
-- the domain's products holding every trigram of "purifier", 20-50 ms at a
-- million products, to find none; the step now skips its scan, as for a
-- word the price filter prices out (trigram.sql).
--
-- Each set is exact after a full refresh and only widens on a refresh by
-- difference, like the price bounds: a skipped term is always one no
-- product of the domain holds. A lexeme or word held in more than 32
-- domains keeps none (NULL: unknown, nothing skipped), so that a catalog whose top-level
-- taxonomy is wide stores no long lists for its common words; 32 is a
-- bound on storage, not a tuning of results (a NULL set changes no step's
-- matches).
-- Running this file again changes nothing.

ALTER TABLE search.lexeme_stats ADD COLUMN IF NOT EXISTS domains text[];
ALTER TABLE search.vocabulary ADD COLUMN IF NOT EXISTS domains text[];

-- The distinct domains of `domains`, sorted; NULL past 32 of them.
CREATE OR REPLACE FUNCTION search.domain_set(domains text[]) RETURNS text[]
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN count(*) <= 32 THEN coalesce(array_agg(d ORDER BY d), '{}') END
    FROM (SELECT DISTINCT d FROM unnest(domains) AS u (d)) s
$$;
REVOKE EXECUTE ON FUNCTION search.domain_set(text[]) FROM PUBLIC;

-- As in 0022, with the domains.

CREATE OR REPLACE FUNCTION search.refresh_lexeme_stats() RETURNS bigint
    LANGUAGE plpgsql AS $$
DECLARE
    n bigint;
BEGIN
    LOCK TABLE search.lexeme_stats, search.catalog_stats IN EXCLUSIVE MODE;
    -- A lexeme appears once in each document that holds it. Counted by
    -- lexeme and domain first (a hash aggregate, as before), then by lexeme.
    WITH by_domain AS (
        SELECT u.lexeme, pp.domain, count(*)::integer AS docs,
               min(pp.price_cents) AS min_price_cents, max(pp.price_cents) AS max_price_cents
        FROM search.product_projection pp
        CROSS JOIN LATERAL unnest(pp.document) u
        GROUP BY u.lexeme, pp.domain
    ), fresh AS (
        SELECT b.lexeme, sum(b.docs)::integer AS docs,
               min(b.min_price_cents) AS min_price_cents, max(b.max_price_cents) AS max_price_cents,
               CASE WHEN count(*) <= 32 THEN array_agg(b.domain ORDER BY b.domain) END AS domains
        FROM by_domain b
        GROUP BY b.lexeme
    ), gone AS (
        DELETE FROM search.lexeme_stats s
        WHERE NOT EXISTS (SELECT 1 FROM fresh f WHERE f.lexeme = s.lexeme)
    )
    INSERT INTO search.lexeme_stats AS s (lexeme, docs, min_price_cents, max_price_cents, domains)
    SELECT f.lexeme, f.docs, f.min_price_cents, f.max_price_cents, f.domains FROM fresh f
    ON CONFLICT (lexeme) DO UPDATE SET docs = EXCLUDED.docs,
        min_price_cents = EXCLUDED.min_price_cents, max_price_cents = EXCLUDED.max_price_cents,
        domains = EXCLUDED.domains
        WHERE (s.docs, s.min_price_cents, s.max_price_cents, s.domains)
              IS DISTINCT FROM (EXCLUDED.docs, EXCLUDED.min_price_cents, EXCLUDED.max_price_cents,
                                EXCLUDED.domains);
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
    WITH by_domain AS (
        SELECT w.word, pp.domain, count(*)::integer AS products,
               min(pp.price_cents) AS min_price_cents, max(pp.price_cents) AS max_price_cents
        FROM search.product_projection pp
        CROSS JOIN LATERAL search.vocabulary_words(pp.identity_text, pp.embedding_text) AS w (word)
        GROUP BY w.word, pp.domain
    ), fresh AS (
        SELECT b.word, sum(b.products)::integer AS products,
               min(b.min_price_cents) AS min_price_cents, max(b.max_price_cents) AS max_price_cents,
               CASE WHEN count(*) <= 32 THEN array_agg(b.domain ORDER BY b.domain) END AS domains
        FROM by_domain b
        GROUP BY b.word
    ), gone AS (
        DELETE FROM search.vocabulary v
        WHERE NOT EXISTS (SELECT 1 FROM fresh f WHERE f.word = v.word)
    )
    INSERT INTO search.vocabulary AS v (word, products, min_price_cents, max_price_cents, domains)
    SELECT f.word, f.products, f.min_price_cents, f.max_price_cents, f.domains FROM fresh f
    ON CONFLICT (word) DO UPDATE SET products = EXCLUDED.products,
        min_price_cents = EXCLUDED.min_price_cents, max_price_cents = EXCLUDED.max_price_cents,
        domains = EXCLUDED.domains
        WHERE (v.products, v.min_price_cents, v.max_price_cents, v.domains)
              IS DISTINCT FROM (EXCLUDED.products, EXCLUDED.min_price_cents, EXCLUDED.max_price_cents,
                                EXCLUDED.domains);
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
    -- Price bounds and domains only widen here (a product that leaves,
    -- costs more or changes domain leaves them as they were): they hold
    -- every holder's price and domain, and the next full refresh makes them
    -- exact again. A lexeme these products add no holder to keeps its
    -- domains (the delta's set is empty); one whose domains are unknown
    -- (NULL) stays unknown.
    WITH delta AS (
        SELECT x.lexeme, sum(x.docs)::integer AS docs,
               min(x.price_cents) AS min_price_cents, max(x.price_cents) AS max_price_cents,
               search.domain_set(coalesce(array_agg(x.domain) FILTER (WHERE x.domain IS NOT NULL),
                                          '{}')) AS domains
        FROM (SELECT o.lexeme, -o.docs AS docs, NULL::bigint AS price_cents, NULL::text AS domain
              FROM unnest(old_lexemes, old_docs) AS o (lexeme, docs)
              UNION ALL
              SELECT u.lexeme, 1, pp.price_cents, pp.domain
              FROM search.product_projection pp CROSS JOIN LATERAL unnest(pp.document) u
              WHERE pp.product_id = ANY (only_ids)) x
        GROUP BY x.lexeme
        HAVING sum(x.docs) <> 0 OR count(x.price_cents) > 0
    ), applied AS (
        INSERT INTO search.lexeme_stats AS s (lexeme, docs, min_price_cents, max_price_cents, domains)
        SELECT d.lexeme, d.docs, d.min_price_cents, d.max_price_cents, d.domains FROM delta d
        ON CONFLICT (lexeme) DO UPDATE SET docs = s.docs + EXCLUDED.docs,
            min_price_cents = CASE WHEN s.min_price_cents IS NOT NULL
                THEN least(s.min_price_cents, EXCLUDED.min_price_cents) END,
            max_price_cents = CASE WHEN s.max_price_cents IS NOT NULL
                THEN greatest(s.max_price_cents, EXCLUDED.max_price_cents) END,
            domains = CASE WHEN s.domains IS NOT NULL AND EXCLUDED.domains IS NOT NULL
                THEN search.domain_set(s.domains || EXCLUDED.domains) END
        RETURNING s.lexeme, s.docs
    )
    SELECT coalesce(array_agg(a.lexeme), '{}') INTO emptied FROM applied a WHERE a.docs <= 0;
    DELETE FROM search.lexeme_stats WHERE lexeme = ANY (emptied);

    -- Vocabulary words, the same way.
    WITH delta AS (
        SELECT x.word, sum(x.holders)::integer AS holders,
               min(x.price_cents) AS min_price_cents, max(x.price_cents) AS max_price_cents,
               search.domain_set(coalesce(array_agg(x.domain) FILTER (WHERE x.domain IS NOT NULL),
                                          '{}')) AS domains
        FROM (SELECT o.word, -o.holders AS holders, NULL::bigint AS price_cents, NULL::text AS domain
              FROM unnest(old_words, old_holders) AS o (word, holders)
              UNION ALL
              SELECT w.word, 1, pp.price_cents, pp.domain
              FROM search.product_projection pp
              CROSS JOIN LATERAL search.vocabulary_words(pp.identity_text, pp.embedding_text) AS w (word)
              WHERE pp.product_id = ANY (only_ids)) x
        GROUP BY x.word
        HAVING sum(x.holders) <> 0 OR count(x.price_cents) > 0
    ), applied AS (
        INSERT INTO search.vocabulary AS v (word, products, min_price_cents, max_price_cents, domains)
        SELECT d.word, d.holders, d.min_price_cents, d.max_price_cents, d.domains FROM delta d
        ON CONFLICT (word) DO UPDATE SET products = v.products + EXCLUDED.products,
            min_price_cents = CASE WHEN v.min_price_cents IS NOT NULL
                THEN least(v.min_price_cents, EXCLUDED.min_price_cents) END,
            max_price_cents = CASE WHEN v.max_price_cents IS NOT NULL
                THEN greatest(v.max_price_cents, EXCLUDED.max_price_cents) END,
            domains = CASE WHEN v.domains IS NOT NULL AND EXCLUDED.domains IS NOT NULL
                THEN search.domain_set(v.domains || EXCLUDED.domains) END
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

-- The sets are counted once, for the catalog as it stands.
SELECT search.refresh_lexeme_stats();
SELECT search.refresh_vocabulary();
