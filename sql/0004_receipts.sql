-- 0004: receipts: append-only retrieval events and their candidate pools.
--
-- A search_event_id is a retrieval-capability handle. An event records what
-- the search did (strategy, routes, verdicts, timings, profile snapshot) and
-- what it granted (authorized_limit). An event whose authorized_limit is NULL
-- predates explicit authorization and grants nothing.
CREATE TABLE IF NOT EXISTS receipts.search_events (
    search_event_id   uuid PRIMARY KEY,
    principal         text NOT NULL,
    session_id        text,
    created_at        timestamptz NOT NULL DEFAULT now(),
    query_text        text,
    normalized_query  text,
    applied_filters   jsonb NOT NULL,
    strategy          text NOT NULL CHECK (strategy IN ('exact_identifier', 'metadata_only', 'hybrid')),
    semantic_route    text,
    eligible_estimate bigint,
    pool_size         integer NOT NULL,
    result_limit      integer NOT NULL CHECK (result_limit BETWEEN 1 AND 50),
    authorized_limit  integer CHECK (authorized_limit BETWEEN 0 AND result_limit),
    served_count      integer NOT NULL,
    rerank_status     text NOT NULL,
    models            jsonb NOT NULL,
    arms              jsonb NOT NULL,
    timings_ms        jsonb NOT NULL,
    warnings          jsonb NOT NULL,
    profile           jsonb NOT NULL
);

CREATE INDEX IF NOT EXISTS search_events_principal_idx
    ON receipts.search_events (principal, created_at);

-- One row per pool member. Two rank spaces live here and are never
-- compared: pre_rerank_rank (the fused pool, 1..pool_size) and served_rank
-- (the window the caller saw, 1..limit, NULL when not served).
CREATE TABLE IF NOT EXISTS receipts.search_candidates (
    search_event_id  uuid NOT NULL REFERENCES receipts.search_events (search_event_id),
    product_id       text NOT NULL,
    pre_rerank_rank  integer NOT NULL CHECK (pre_rerank_rank >= 1),
    lexical_rank     integer,
    lexical_score    double precision,
    trigram_rank     integer,
    trigram_score    double precision,
    semantic_rank    integer,
    semantic_score   double precision,
    rrf_score        double precision,
    rerank_score     double precision,
    final_rank       integer NOT NULL CHECK (final_rank >= 1),
    served_rank      integer CHECK (served_rank >= 1),
    granted          boolean NOT NULL,
    exact_match      boolean NOT NULL DEFAULT false,
    match_reason     text NOT NULL,
    source_uri       text NOT NULL,
    source_revision  integer NOT NULL,
    PRIMARY KEY (search_event_id, product_id),
    CHECK (NOT granted OR served_rank IS NOT NULL)
);

-- Scoped reads look up granted candidates of one event.
CREATE INDEX IF NOT EXISTS search_candidates_granted_idx
    ON receipts.search_candidates (search_event_id, product_id) WHERE granted;
