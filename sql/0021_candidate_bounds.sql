-- 0021: how each pool member stood against the bounds its query stated
-- ("under $50", "under 220 grams": search::bounds), so that a receipt
-- says why the rerank stage put one member before another with a higher
-- rerank score. Both NULL when no bound ordered the pool (none stated,
-- reranking off, or no member kept any); otherwise how many of the
-- bounds in effect the member broke and kept. The event's
-- query_understanding lists the bounds.
--
-- Adding nullable columns to the partitioned table adds them to every
-- partition without rewriting it; the runtime role's table-level SELECT
-- and INSERT (0005, 0012) cover them. Running this file again changes
-- nothing.
ALTER TABLE receipts.search_candidates
    ADD COLUMN IF NOT EXISTS bounds_broken smallint,
    ADD COLUMN IF NOT EXISTS bounds_kept smallint;
