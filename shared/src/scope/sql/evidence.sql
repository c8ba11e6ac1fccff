-- get_product_evidence: the grant check and the evidence read, in ONE
-- statement, so nothing can change between them.
--
-- $1 retrieval scope (search_event_id), $2 principal, $3 product_id,
-- $4 the question's substantive terms joined with " or " (websearch syntax),
-- $5 the same terms as text[] (trigram signal), $6 kind prior for reviews,
-- $7 kind prior for specifications, $8 how many units at most.
--
-- `granted` is one row when the event belongs to the principal, carries an
-- explicit authorization (receipts.pool_of, sql/0026), and granted the
-- product, and the catalog still holds the product (as compare requires);
-- no row otherwise. It is LEFT JOINed to the ranked units, so "granted, no
-- evidence" is one row with NULL unit columns, and "not granted" is no row
-- at all.
--
-- score = ts_rank_cd(OR over the terms; normalised to 0..1)
--       + 0.5 * mean over terms of pg_trgm word_similarity(term, title+body)
--       + kind prior.
-- The OR query is the back-off: a conversational question matches a unit
-- that contains any one substantive term; units matching more terms, closer
-- together, rank higher.
WITH granted AS (
    SELECT c.product_id
    FROM receipts.pool_of($1, $2) c
    JOIN catalog.products p ON p.product_id = c.product_id
    WHERE c.product_id = $3
      AND c.granted
), q AS (
    SELECT websearch_to_tsquery('english', $4) AS tsq
), terms AS (
    -- English stop words carry no signal; drop them from the trigram mean.
    SELECT t FROM unnest($5::text[]) AS t WHERE length(to_tsvector('english', t)) > 0
), scored AS (
    SELECT ev.evidence_id, ev.kind, ev.title, ev.body, ev.rating, ev.source_uri,
           ev.source_revision, ev.updated_at,
           ev.document @@ q.tsq AS matched,
           ts_rank_cd(ev.document, q.tsq, 32)::float8 AS text_rank,
           coalesce((SELECT avg(word_similarity(terms.t, ev.title || ' ' || ev.body))
                     FROM terms), 0)::float8 AS similarity,
           (CASE ev.kind WHEN 'review' THEN $6::float8 ELSE $7::float8 END) AS kind_prior
    FROM granted g
    JOIN catalog.evidence ev ON ev.product_id = g.product_id
    CROSS JOIN q
), top AS (
    SELECT s.*, s.text_rank + 0.5 * s.similarity + s.kind_prior AS score
    FROM scored s
    ORDER BY score DESC, s.evidence_id
    LIMIT $8
)
SELECT g.product_id, t.evidence_id, t.kind, t.title, t.body, t.rating, t.source_uri,
       t.source_revision, t.updated_at, t.score, t.text_rank, t.similarity, t.kind_prior,
       CASE WHEN t.matched
            THEN ts_headline('english', t.body, q.tsq,
                             'StartSel=**, StopSel=**, MaxWords=35, MinWords=12, MaxFragments=2')
       END AS snippet
FROM granted g
CROSS JOIN q
LEFT JOIN top t ON true
ORDER BY t.score DESC NULLS LAST, t.evidence_id;
