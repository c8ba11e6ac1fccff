-- 0011: catalog feeds as they come.
--
-- 1. Attribute values may be lists (`"connectivity": ["Bluetooth 5.3", "USB-C"]`).
--    The search projection keeps every attribute as a list of values
--    (`"color": "red"` becomes `"color": ["red"]`) and every equality filter
--    is sent the same way, so one jsonb containment (`@>`, served by the
--    jsonb_path_ops GIN index) means "the attribute equals the value, or its
--    list contains the value". The catalog keeps the values as they were fed.
-- 2. Evidence `source_revision` is an opaque string (a number, a date, a
--    content hash): whatever the source system calls a revision.
-- 3. List values read as text ("Bluetooth 5.3, USB-C") in the lexical
--    document and the embedding text, not as JSON.
-- 4. In the lexical document a true flag reads as its name
--    (`"multipoint": true` as "multipoint") and a false one not at all: the
--    words "true" and "false" say nothing a shopper types, and the flag's
--    name is what a query for the feature matches. (The embedding text keeps
--    "multipoint: false", which a sentence model reads in context.)

-- Every attribute value as a list: the projection's filter form.
CREATE OR REPLACE FUNCTION search.attribute_sets(attrs jsonb) RETURNS jsonb
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT coalesce(jsonb_object_agg(key, CASE WHEN jsonb_typeof(value) = 'array' THEN value
                                               ELSE jsonb_build_array(value) END), '{}'::jsonb)
    FROM jsonb_each(attrs)
$$;

-- One attribute value as text: a list's items joined with ", ".
CREATE OR REPLACE FUNCTION search.attribute_text(v jsonb) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN jsonb_typeof(v) = 'array'
                THEN (SELECT coalesce(string_agg(item #>> '{}', ', ' ORDER BY n), '')
                      FROM jsonb_array_elements(v) WITH ORDINALITY AS e(item, n))
                ELSE v #>> '{}' END
$$;

UPDATE search.product_projection
SET attributes = search.attribute_sets(attributes)
WHERE attributes IS DISTINCT FROM search.attribute_sets(attributes);

DO $$
BEGIN
    IF (SELECT data_type FROM information_schema.columns
        WHERE table_schema = 'catalog' AND table_name = 'evidence'
          AND column_name = 'source_revision') <> 'text' THEN
        ALTER TABLE catalog.evidence DROP CONSTRAINT IF EXISTS evidence_source_revision_check;
        ALTER TABLE catalog.evidence ALTER COLUMN source_revision DROP DEFAULT;
        ALTER TABLE catalog.evidence ALTER COLUMN source_revision TYPE text
            USING source_revision::text;
        ALTER TABLE catalog.evidence ALTER COLUMN source_revision SET DEFAULT '1';
        ALTER TABLE catalog.evidence ADD CONSTRAINT evidence_source_revision_check
            CHECK (length(source_revision) BETWEEN 1 AND 128);
    END IF;
END
$$;

-- As in 0003, with the projection's attributes as lists and list values as text.
CREATE OR REPLACE FUNCTION search.refresh_projection(only_ids text[] DEFAULT NULL)
    RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    n bigint;
BEGIN
    INSERT INTO search.product_projection AS pp (
        product_id, domain, category_key, brand_key, availability, in_stock, price_cents, rating,
        attributes, document, identity_text, identifier_keys, embedding_text, embedding_text_hash,
        refreshed_at)
    SELECT p.product_id, p.domain, p.category_key, lower(p.brand), p.availability,
           p.availability IN ('in_stock', 'low_stock'), p.price_cents, p.rating,
           search.attribute_sets(p.attributes),
           setweight(to_tsvector('english', concat_ws(' ', p.brand, p.model, p.sku,
                                                     array_to_string(p.aliases, ' '))), 'A') ||
           setweight(to_tsvector('english', p.title), 'B') ||
           setweight(to_tsvector('english', concat_ws(' ', replace(p.category_key, '_', ' '),
                                                     attr.values_text)), 'C') ||
           setweight(to_tsvector('english', p.description), 'D'),
           lower(concat_ws(' ', p.brand, p.model, p.sku, p.title, array_to_string(p.aliases, ' '))),
           ARRAY[search.identifier_key(p.sku), search.identifier_key(p.model)],
           et.text, md5(et.text), now()
    FROM catalog.products p
    CROSS JOIN LATERAL (
        SELECT coalesce(string_agg(CASE jsonb_typeof(value)
                                       WHEN 'boolean' THEN CASE WHEN value = 'true' THEN replace(key, '_', ' ') END
                                       ELSE search.attribute_text(value) END,
                                   ' ' ORDER BY key), '') AS values_text,
               coalesce(string_agg(replace(key, '_', ' ') || ': ' || search.attribute_text(value),
                                   '; ' ORDER BY key), '') AS pairs_text
        FROM jsonb_each(p.attributes)
    ) attr
    CROSS JOIN LATERAL (
        SELECT concat_ws('. ', p.title, p.brand || ' ' || p.model,
                         replace(p.category_key, '_', ' '), attr.pairs_text, p.description) AS text
    ) et
    WHERE only_ids IS NULL OR p.product_id = ANY (only_ids)
    ON CONFLICT (product_id) DO UPDATE SET
        domain = EXCLUDED.domain, category_key = EXCLUDED.category_key,
        brand_key = EXCLUDED.brand_key, availability = EXCLUDED.availability,
        in_stock = EXCLUDED.in_stock, price_cents = EXCLUDED.price_cents,
        rating = EXCLUDED.rating, attributes = EXCLUDED.attributes,
        document = EXCLUDED.document, identity_text = EXCLUDED.identity_text,
        identifier_keys = EXCLUDED.identifier_keys, embedding_text = EXCLUDED.embedding_text,
        embedding_text_hash = EXCLUDED.embedding_text_hash, refreshed_at = now();
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
END
$$;

-- Catalog statistics for the rerank stage (its BM25F, `shared/src/rerank/local.rs`):
--
-- * search.lexeme_stats: for every lexeme of the lexical documents, how many
--   products hold it (inverse document frequency);
-- * search.catalog_stats: one row, the product count and the mean length
--   (positions) of each weight class of the lexical document: A identity,
--   B title, C category and attributes, D description.
--
-- Both are rebuilt whole by search.refresh_lexeme_stats() after every load
-- and import (`mosaic::catalog::load::refresh_projection`); the rerank reads
-- the rows of the query's own lexemes and the one catalog row.
CREATE TABLE IF NOT EXISTS search.lexeme_stats (
    lexeme text PRIMARY KEY,
    docs   integer NOT NULL
);
CREATE TABLE IF NOT EXISTS search.catalog_stats (
    singleton       boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    products        bigint NOT NULL,
    avg_identity    double precision NOT NULL,
    avg_title       double precision NOT NULL,
    avg_facets      double precision NOT NULL,
    avg_description double precision NOT NULL,
    refreshed_at    timestamptz NOT NULL DEFAULT now()
);
GRANT SELECT ON search.lexeme_stats, search.catalog_stats TO {{RUNTIME_ROLE}};

CREATE OR REPLACE FUNCTION search.refresh_lexeme_stats() RETURNS bigint
    LANGUAGE plpgsql AS $$
DECLARE
    n bigint;
BEGIN
    LOCK TABLE search.lexeme_stats, search.catalog_stats IN EXCLUSIVE MODE;
    DELETE FROM search.lexeme_stats;
    INSERT INTO search.lexeme_stats (lexeme, docs)
    SELECT word, ndoc FROM ts_stat('SELECT document FROM search.product_projection');
    GET DIAGNOSTICS n = ROW_COUNT;
    DELETE FROM search.catalog_stats;
    INSERT INTO search.catalog_stats (products, avg_identity, avg_title, avg_facets, avg_description)
    SELECT count(*), coalesce(avg(w.a), 0), coalesce(avg(w.b), 0),
           coalesce(avg(w.c), 0), coalesce(avg(w.d), 0)
    FROM search.product_projection pp
    CROSS JOIN LATERAL (
        SELECT count(*) FILTER (WHERE wt = 'A') AS a, count(*) FILTER (WHERE wt = 'B') AS b,
               count(*) FILTER (WHERE wt = 'C') AS c, count(*) FILTER (WHERE wt = 'D') AS d
        FROM unnest(pp.document) u, unnest(u.weights) AS wt
    ) w;
    RETURN n;
END
$$;
REVOKE EXECUTE ON FUNCTION search.refresh_lexeme_stats() FROM PUBLIC;
SELECT search.refresh_lexeme_stats();
