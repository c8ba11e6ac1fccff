-- 0023: the cheaper half's graph (0022) is kept while the median stays
-- near its ceiling.
--
-- 0022 made the graph of the current ceiling on every full refresh and
-- dropped any other. A refresh that moved the median across a rounding
-- step (149.99 -> 150.01 makes the ceiling 160.00 instead of 150.00)
-- would build a new graph and drop the old one; dropping an index waits
-- for the searches under way and then holds back every search until the
-- refresh commits, and a full refresh counts the catalog's statistics
-- after it (minutes at a million products). Now a graph already there is
-- kept while the median lies between two thirds of its ceiling and the
-- ceiling: it still holds every product at or under the median, and no
-- product dearer than half again the median. Running this file again
-- changes nothing.
CREATE OR REPLACE FUNCTION search.refresh_price_indexes(min_products bigint DEFAULT 50000)
    RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    cap bigint;
    catalog_size bigint;
    median bigint;
    top bigint;
    idx text;
    stale text[];
    wanted text[] := '{}';
BEGIN
    -- Read first: an index cannot be created while a loop still reads the table.
    SELECT count(*), max(price_cents) INTO catalog_size, top FROM search.product_projection;
    IF catalog_size >= min_products THEN
        SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY price_cents) INTO median
        FROM search.product_projection;
        -- The graph there is stays while the median lies between two thirds
        -- of its ceiling and the ceiling: replacing it drops an index, which
        -- waits for the searches under way and holds back every search until
        -- the refresh commits.
        SELECT min(substr(c.relname, 29)::bigint) INTO cap
        FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
        WHERE i.indrelid = 'search.product_projection'::regclass
          AND c.relname ~ '^projection_embedding_hnsw_p_[0-9]{1,18}$'
          AND substr(c.relname, 29)::numeric BETWEEN median AND median * 1.5;
        IF cap IS NULL THEN
            cap := CASE WHEN median < 100 THEN median
                        ELSE (ceil(median::numeric / 10 ^ (length(median::text) - 2))
                              * 10 ^ (length(median::text) - 2))::bigint END;
        END IF;
        -- A ceiling at or above every price would be the whole catalog's graph.
        IF cap < top THEN
            idx := 'projection_embedding_hnsw_p_' || cap;
            wanted := wanted || idx;
            EXECUTE format(
                'CREATE INDEX IF NOT EXISTS %I ON search.product_projection '
                'USING hnsw (embedding vector_cosine_ops) WITH (m = 16, ef_construction = 200) '
                'WHERE price_cents <= %s::bigint', idx, cap);
        END IF;
    END IF;
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
