-- The pool's catalog fields, in one read; with $12 (the pool will be
-- reranked by a reranker that scores from the catalog, the local one) also
-- the projection's lexical document.
-- The arms found the pool in earlier statements, each on its own snapshot,
-- and a catalog import may have committed since: `eligible` checks the
-- eligibility predicate again on the rows read here, which are the values
-- served, and the service drops a member that no longer passes it as it
-- drops one deleted meanwhile (an import writes the catalog and the
-- projection in one transaction, so the two agree on this snapshot). The
-- predicate is a column, not a condition: as a condition the planner would
-- read the filters' indexes across the catalog instead of the pool's rows.
-- $1..$10 the eligibility parameters, $11 product ids, $12 reads_catalog
SELECT p.product_id, p.sku, p.model, p.brand, p.title, p.domain, p.category_key, p.description,
       p.price_cents, p.currency, p.rating, p.availability, p.attributes, p.source_uri, p.revision,
       CASE WHEN $12 THEN pp.document::text END AS document,
       coalesce(true
      -- eligibility: every hard filter and negated term, before any LIMIT ($1..$10; NULL = unconstrained)
      AND ($1::text IS NULL OR pp.domain = $1)
      AND ($2::text IS NULL OR pp.category_key = $2)
      AND ($3::text IS NULL OR pp.brand_key = lower($3))
      AND ($4::text[] IS NULL OR pp.availability = ANY ($4))
      AND (NOT $5::boolean OR pp.in_stock)
      AND ($6::bigint IS NULL OR pp.price_cents >= $6)
      AND ($7::bigint IS NULL OR pp.price_cents <= $7)
      AND ($8::real IS NULL OR pp.rating >= $8)
      AND ($9::jsonb IS NULL OR pp.attributes @> $9)
      AND ($10::text[] IS NULL OR NOT EXISTS (
          SELECT 1 FROM unnest($10::text[]) AS neg (word) WHERE pp.embedding_text ~* ('\m' || neg.word || '\M'))), false) AS eligible
FROM catalog.products p
LEFT JOIN search.product_projection pp ON pp.product_id = p.product_id
WHERE p.product_id = ANY ($11)
