-- 0028: a product whose text changed loses its vector until it is embedded
-- again.
--
-- An import that changed a product's embedding text (its title,
-- description, attributes, brand or model) kept the vector computed from
-- the old text, and the semantic arm went on finding the product by what it
-- used to say until `mosaic embed` ran: a "tent" query could find a product
-- now titled "laptop". search.refresh_projection now clears the vector, its
-- model and its text hash whenever the embedding text changes, so the
-- semantic arm holds only vectors of the text the catalog holds; the text
-- arms find the product at once, the semantic arm after `mosaic embed`
-- (which embeds exactly the rows without a vector). A refresh that leaves
-- the text as it was keeps the vector. The rest of the function is 0011's.
-- Running this file again changes nothing.

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
        embedding_text_hash = EXCLUDED.embedding_text_hash,
        -- A vector describes the text it was computed from: a new text
        -- leaves the row without one until `mosaic embed` computes it.
        embedding = CASE WHEN pp.embedding_text_hash = EXCLUDED.embedding_text_hash
                         THEN pp.embedding END,
        embedding_model = CASE WHEN pp.embedding_text_hash = EXCLUDED.embedding_text_hash
                               THEN pp.embedding_model END,
        embedded_text_hash = CASE WHEN pp.embedding_text_hash = EXCLUDED.embedding_text_hash
                                  THEN pp.embedded_text_hash END,
        refreshed_at = now();
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
END
$$;

REVOKE EXECUTE ON FUNCTION search.refresh_projection(text[]) FROM PUBLIC;
