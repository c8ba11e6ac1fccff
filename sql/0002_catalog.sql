-- 0002: the catalog: products and evidence units.
--
-- product_id is the stable public identifier; sku and model are the
-- identifiers people type. Every record carries a source URI and revision so
-- that results and evidence can be attributed.
CREATE TABLE IF NOT EXISTS catalog.products (
    product_id    text PRIMARY KEY CHECK (product_id ~ '^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$'),
    sku           text NOT NULL UNIQUE CHECK (length(sku) BETWEEN 1 AND 64),
    model         text NOT NULL CHECK (length(model) BETWEEN 1 AND 128),
    brand         text NOT NULL CHECK (length(brand) BETWEEN 1 AND 128),
    title         text NOT NULL CHECK (length(title) BETWEEN 1 AND 512),
    domain        text NOT NULL,
    category_key  text NOT NULL,
    description   text NOT NULL DEFAULT '',
    price_cents   bigint NOT NULL CHECK (price_cents >= 0),
    currency      text NOT NULL DEFAULT 'USD' CHECK (currency ~ '^[A-Z]{3}$'),
    rating        real CHECK (rating BETWEEN 0 AND 5),
    review_count  integer NOT NULL DEFAULT 0 CHECK (review_count >= 0),
    availability  text NOT NULL CHECK (availability IN
                      ('in_stock', 'low_stock', 'backorder', 'preorder', 'out_of_stock', 'discontinued')),
    attributes    jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(attributes) = 'object'),
    aliases       text[] NOT NULL DEFAULT '{}',
    source_uri    text NOT NULL,
    updated_at    timestamptz NOT NULL DEFAULT now(),
    revision      integer NOT NULL DEFAULT 1 CHECK (revision >= 1)
);

CREATE TABLE IF NOT EXISTS catalog.evidence (
    evidence_id     text PRIMARY KEY CHECK (evidence_id ~ '^[A-Za-z0-9][A-Za-z0-9._:-]{0,95}$'),
    product_id      text NOT NULL REFERENCES catalog.products (product_id) ON DELETE CASCADE,
    kind            text NOT NULL CHECK (kind IN ('specification', 'review')),
    source_uri      text NOT NULL,
    source_revision integer NOT NULL DEFAULT 1 CHECK (source_revision >= 1),
    title           text NOT NULL,
    body            text NOT NULL,
    rating          real CHECK (rating BETWEEN 0 AND 5),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    document        tsvector GENERATED ALWAYS AS (
                        setweight(to_tsvector('english', title), 'A') ||
                        setweight(to_tsvector('english', body), 'B')) STORED
);

CREATE INDEX IF NOT EXISTS evidence_product_idx ON catalog.evidence (product_id, kind);
CREATE INDEX IF NOT EXISTS evidence_document_idx ON catalog.evidence USING gin (document);
