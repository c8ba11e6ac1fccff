-- Query understanding (search::understand): for each query word ($1, lower
-- case, letters only) whether the catalog's vocabulary holds it, and, when
-- it does not, its `$2` closest vocabulary words by trigram similarity with
-- the number of products that hold each. The `%` operator (at least
-- pg_trgm.similarity_threshold, set by the caller) is served by the GIN
-- trigram index on search.vocabulary; the caller counts the edits. Two
-- neighbouring letters swapped share few trigrams with the word meant
-- ("dsek" and "desk" share one of nine, similarity 0.11), so the words
-- the vocabulary holds with one such swap are looked up by equality too.
-- No eligibility here: the vocabulary only rewrites the query, and every arm
-- applies the filters to what the rewritten query matches.
SELECT q.word,
       k.known,
       n.word AS neighbour,
       n.products
FROM (SELECT DISTINCT word FROM unnest($1::text[]) AS q (word)) q
CROSS JOIN LATERAL (
    SELECT EXISTS (SELECT 1 FROM search.vocabulary v WHERE v.word = q.word) AS known
) k
LEFT JOIN LATERAL (
    (SELECT v.word, v.products
     FROM search.vocabulary v
     WHERE NOT k.known AND v.word % q.word
     ORDER BY similarity(v.word, q.word) DESC, v.products DESC, v.word
     LIMIT $2)
    UNION
    SELECT v.word, v.products
    FROM search.vocabulary v
    WHERE NOT k.known
      AND v.word IN (SELECT left(q.word, i - 1) || substr(q.word, i + 1, 1)
                            || substr(q.word, i, 1) || substr(q.word, i + 2)
                     FROM generate_series(1, length(q.word) - 1) AS i)
) n ON true;
