-- Per-domain partial HNSW indexes for the semantic arm.
--
-- A search filtered to one domain binds `domain = $1`; PostgreSQL plans each
-- search with its parameter values, so `($1 IS NULL OR domain = $1)` becomes
-- `domain = '<value>'` and the planner can walk a graph that holds only that
-- domain's products. On the whole-catalog graph the iterative scan instead
-- walks past every other domain's neighbours and discards them (mosaic
-- bench, 100k products, filter to a domain holding 13% of them, query
-- vectors from other domains: 65 ms p50 and too few rows; on the partial
-- graph 2 ms p50 and all 150 requested rows).
--
-- The set of domains is data, so the indexes are made by this function,
-- which the loaders call after every projection refresh: one index per
-- domain present, none for domains that are gone. Index names carry a hash
-- of the domain, never the domain text itself.
CREATE OR REPLACE FUNCTION search.refresh_domain_indexes() RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    d text;
    idx text;
    domains text[];
    stale text[];
    wanted text[] := '{}';
BEGIN
    -- Read first: an index cannot be created while a loop still reads the table.
    SELECT coalesce(array_agg(DISTINCT domain), '{}') INTO domains FROM search.product_projection;
    FOREACH d IN ARRAY domains LOOP
        idx := 'projection_embedding_hnsw_d_' || substr(md5(d), 1, 16);
        wanted := wanted || idx;
        EXECUTE format(
            'CREATE INDEX IF NOT EXISTS %I ON search.product_projection '
            'USING hnsw (embedding vector_cosine_ops) WHERE domain = %L', idx, d);
    END LOOP;
    SELECT coalesce(array_agg(c.relname::text), '{}') INTO stale
    FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
    WHERE i.indrelid = 'search.product_projection'::regclass
      AND c.relname LIKE 'projection\_embedding\_hnsw\_d\_%'
      AND NOT c.relname::text = ANY (wanted);
    FOREACH idx IN ARRAY stale LOOP
        EXECUTE format('DROP INDEX search.%I', idx);
    END LOOP;
    RETURN cardinality(wanted);
END
$$;

-- Only the owner (loaders) runs it; the runtime role has no use for it.
REVOKE EXECUTE ON FUNCTION search.refresh_domain_indexes() FROM PUBLIC;

SELECT search.refresh_domain_indexes();
