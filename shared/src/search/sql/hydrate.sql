-- The pool's catalog fields, in one read; with $2 (the pool will be
-- reranked by a reranker that scores from the catalog, the local one) also
-- the projection's lexical document.
-- $1 product ids, $2 reads_catalog
SELECT p.product_id, p.sku, p.model, p.brand, p.title, p.domain, p.category_key, p.description,
       p.price_cents, p.currency, p.rating, p.availability, p.attributes, p.source_uri, p.revision,
       CASE WHEN $2 THEN pp.document::text END AS document
FROM catalog.products p
LEFT JOIN search.product_projection pp ON pp.product_id = p.product_id
WHERE p.product_id = ANY ($1)
