-- 0003: the search projection: one denormalised row per product.
--
-- The three candidate arms read only this table. It carries the filter
-- columns (so every eligibility predicate is evaluated in the same scan as
-- the ranking), a weighted tsvector for the lexical arm, lower-cased identity
-- text for the trigram arm, normalised identifiers for exact matching, and
-- the embedding for the semantic arm.
--
-- {{EMBEDDING_DIM}} is replaced by the migration runner with the configured
-- embedding dimension (384 for the local model, 1024 for Titan v2 / Cohere).
CREATE TABLE IF NOT EXISTS search.product_projection (
    product_id          text PRIMARY KEY REFERENCES catalog.products (product_id) ON DELETE CASCADE,
    -- filter columns
    domain              text NOT NULL,
    category_key        text NOT NULL,
    brand_key           text NOT NULL,          -- lower(brand)
    availability        text NOT NULL,
    in_stock            boolean NOT NULL,
    price_cents         bigint NOT NULL,
    rating              real,
    attributes          jsonb NOT NULL,
    -- lexical arm: identity fields weigh A, title B, taxonomy and attributes C, description D
    document            tsvector NOT NULL,
    -- trigram arm: brand, model, sku, title, aliases
    identity_text       text NOT NULL,
    -- exact-identifier strategy: sku and model, lower case, letters and digits only
    identifier_keys     text[] NOT NULL,
    -- semantic arm
    embedding_text      text NOT NULL,
    embedding_text_hash text NOT NULL,
    embedding           vector({{EMBEDDING_DIM}}),
    embedding_model     text,
    embedded_text_hash  text,
    refreshed_at        timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX IF NOT EXISTS projection_document_idx
    ON search.product_projection USING gin (document);
CREATE INDEX IF NOT EXISTS projection_identity_trgm_idx
    ON search.product_projection USING gin (identity_text gin_trgm_ops);
CREATE INDEX IF NOT EXISTS projection_identifier_keys_idx
    ON search.product_projection USING gin (identifier_keys);
CREATE INDEX IF NOT EXISTS projection_embedding_hnsw_idx
    ON search.product_projection USING hnsw (embedding vector_cosine_ops) WITH (m = 16, ef_construction = 64);
CREATE INDEX IF NOT EXISTS projection_category_idx ON search.product_projection (category_key);
CREATE INDEX IF NOT EXISTS projection_domain_idx ON search.product_projection (domain);
CREATE INDEX IF NOT EXISTS projection_brand_idx ON search.product_projection (brand_key);
CREATE INDEX IF NOT EXISTS projection_price_idx ON search.product_projection (price_cents);
CREATE INDEX IF NOT EXISTS projection_rating_idx ON search.product_projection (rating);
CREATE INDEX IF NOT EXISTS projection_availability_idx ON search.product_projection (availability);
CREATE INDEX IF NOT EXISTS projection_attributes_idx
    ON search.product_projection USING gin (attributes jsonb_path_ops);

-- Normalises an identifier the way the exact-identifier strategy compares
-- them: lower case, letters and digits only ("WH-1000 XM5" -> "wh1000xm5").
CREATE OR REPLACE FUNCTION search.identifier_key(t text) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN regexp_replace(lower(t), '[^[:alnum:]]+', '', 'g');

-- Rebuilds projection rows from the catalog (all rows, or the given ids).
-- Rows whose embedding text did not change keep their embedding; the
-- embedding job picks up the others by comparing the text hashes.
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
           p.availability IN ('in_stock', 'low_stock'), p.price_cents, p.rating, p.attributes,
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
        SELECT coalesce(string_agg(value, ' ' ORDER BY key), '') AS values_text,
               coalesce(string_agg(replace(key, '_', ' ') || ': ' || value, '; ' ORDER BY key), '') AS pairs_text
        FROM jsonb_each_text(p.attributes)
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
