//! `RetrievalProfile`: every retrieval number in one place.
//!
//! Defaults are documented beside each field; every field can be overridden
//! from the environment (`MOSAIC_<FIELD>` in upper case, e.g.
//! `MOSAIC_POOL_SIZE=40`). The profile is validated at start-up and a
//! snapshot of it is stored in every receipt, so an explanation always shows
//! the numbers that produced it. No other module holds a retrieval constant.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RetrievalProfile {
    /// Candidates the lexical (full-text) arm returns at most.
    pub lexical_limit: i64,
    /// Matches the lexical arm scores at most before ranking; past it the
    /// arm reports `budget_cut`. `ts_rank_cd` costs grow with matches, not
    /// with the LIMIT, so this bounds the arm's worst case.
    pub lexical_scan_budget: i64,
    /// Matches of a lexical step that any one of the query's terms
    /// satisfies (the back-off's last steps) ranked by cover density
    /// (`ts_rank_cd`) at most: past it, the best `lexical_rank_budget` of
    /// them by `ts_rank` (the query's terms by field weight, their repeats
    /// counting less and less: about an eighth of the cost per document),
    /// the lower product id first among equals. 0: every match (up to
    /// `lexical_scan_budget`). The strict query and the steps that need
    /// more of its terms always rank every match: there the two orders
    /// part (the query's words near each other or apart), in an any-term
    /// step they agree at the top (BENCHMARKS.md, "The lexical back-off
    /// ranked within a budget").
    pub lexical_rank_budget: i64,
    /// Candidates at which the lexical arm's relaxed steps (all terms but
    /// one, half, any one) stop relaxing (1..=lexical_limit).
    pub lexical_enough: i64,
    /// Candidates the trigram arm returns at most.
    pub trigram_limit: i64,
    /// Minimum pg_trgm word similarity for a trigram candidate: the last,
    /// most relaxed threshold of the trigram cascade.
    pub trigram_floor: f64,
    /// The trigram cascade's first (strictest) word-similarity threshold.
    pub trigram_strict_threshold: f64,
    /// The cascade's middle threshold, tried when the strict step held
    /// fewer than `trigram_enough` candidates. Set strict, middle and floor
    /// equal for a single step at the floor.
    pub trigram_middle_threshold: f64,
    /// Candidates at which the cascade stops relaxing (1..=trigram_limit).
    pub trigram_enough: i64,
    /// Queries of at least this many words start the trigram arm at its
    /// floor instead of the strictest threshold (see `arms::trigram`).
    pub trigram_floor_first_words: i64,
    /// 1: a query shorter than `trigram_floor_first_words` first takes up
    /// to `trigram_limit` matches at word similarity 1.0 (every trigram of
    /// the query in one stretch of the identity text), and when that fills
    /// the limit the arm is done: no row can score higher. 0: off.
    pub trigram_perfect_first: i64,
    /// 1: a query the understanding step found spelled as written (no
    /// correction, no unknown word, no identifier) takes only the trigram
    /// arm's perfect step: up to `trigram_limit` identity texts holding the
    /// whole query (word similarity 1.0). The relaxed thresholds, which
    /// admit texts holding part of it, are for misspelt words and codes.
    /// 0: every query runs the cascade.
    pub trigram_spelled_perfect: i64,
    /// 1: a query whose misspelt words were all corrected (and that holds
    /// no unknown word and no code) is treated as spelled: the trigram arm
    /// takes its perfect step alone, for the corrected query, under
    /// `trigram_spelled_perfect`; 0: it runs the cascade.
    pub trigram_corrected_perfect: i64,
    /// 1: for a query that names a product line's code ("PXLT-3353 Mini"),
    /// the trigram arm's relaxed steps match the query's identifiers alone,
    /// and score what they find for the whole query; its perfect step keeps
    /// the whole query, and so do the relaxed steps when the identifiers
    /// match nothing and under a category or brand filter. 0: every step
    /// matches the whole query.
    pub trigram_identifier_steps: i64,
    /// Characters of the query the trigram arm reads at most (0: all):
    /// whole words while they fit, so a longer query is matched for its
    /// first words (a pasted title's brand and model), and its codes are
    /// cut the same way. The arm's receipt says when it cut
    /// (`read_chars`).
    pub trigram_query_chars: i64,
    /// Safety budget of every cascade step: matches it scores at most (in
    /// physical order); past it the arm reports `budget_cut`. Bounds the
    /// arm's worst case, queries of common words.
    pub trigram_scan_budget: i64,
    /// 1: misspelt query words are corrected against the catalog's
    /// vocabulary before the arms run (`search::understand`); 0: off.
    pub query_correction: i64,
    /// Least pg_trgm similarity of a vocabulary word to a misspelt query
    /// word for it to be considered as the correction (the edits decide).
    pub correction_min_similarity: f64,
    /// 1: when several vocabulary words are equally close to a misspelt
    /// word, the one that products hold alongside the most of the query's
    /// other words wins, then the most common; 0: the most common.
    pub correction_context: i64,
    /// Candidates the semantic arm returns at most.
    pub semantic_limit: i64,
    /// Eligible rows at or below which the semantic arm scans the eligible
    /// set exactly instead of using HNSW (exact recall for selective filters).
    pub semantic_exact_threshold: i64,
    /// `hnsw.ef_search` for the HNSW route.
    pub hnsw_ef_search: i64,
    /// `hnsw.max_scan_tuples` for iterative scans on the HNSW route.
    pub hnsw_max_scan_tuples: i64,
    /// Rows the HNSW route's walk of the whole catalog's graph returns
    /// (semantic_limit..=hnsw_max_scan_tuples); the arm keeps the best
    /// `semantic_limit` of them by exact distance. Past `hnsw_ef_search`
    /// the iterative scan walks on beyond its first candidate list.
    pub semantic_overfetch: i64,
    /// 0: off. Otherwise, when the filters hold the search to no domain or
    /// category, the HNSW route also walks each domain's own graph (the
    /// per-domain indexes) with this `hnsw.ef_search`, each walk looking
    /// no further than `semantic_domain_walk_tuples` allows, and keeps the
    /// best `semantic_limit` rows of all the walks by exact distance.
    pub semantic_domain_walk_ef: i64,
    /// `hnsw.max_scan_tuples` of each domain walk: graph elements a walk
    /// visits before it stops looking further (it then returns the rest of
    /// what it met, nearest first). The first candidate list is always
    /// walked whole; past it, a walk under a filter resumes from the
    /// nearest elements it left aside until the budget is spent. 1: each
    /// walk ends at its first candidate list, whatever the filters leave
    /// of it.
    pub semantic_domain_walk_tuples: i64,
    /// 0: off. Otherwise, under a domain filter in a catalog of
    /// `semantic_domain_walk_min_rows` products or more, when none of the
    /// query's `semantic_far_domain_check_rows` nearest products (a short
    /// walk of the whole catalog's graph) are in that domain, the walk of
    /// the domain's graph returns this many rows
    /// (semantic_overfetch..=hnsw_max_scan_tuples; route `hnsw_long_walk`),
    /// and the arm keeps the best `semantic_limit` of them by exact
    /// distance; unless `semantic_far_exact_max_rows` has the domain scored
    /// exactly instead.
    pub semantic_far_domain_overfetch: i64,
    /// 0: off. Otherwise, for a query none of whose nearest products are in
    /// its domain filter's domain (the check above), when that domain holds
    /// at most this many embedded products (its graph's entries in the
    /// planner's statistics), the arm
    /// scores every eligible row of it exactly instead of walking its graph
    /// (route `exact_far_domain`): exact recall, for what the long walk
    /// costs. The scan reads an index that holds the domains' vectors
    /// (migration 0024), in two halves that run on two connections when the
    /// search has a fourth lane; only under filters that index holds (no
    /// category, brand, attribute or negated word).
    pub semantic_far_exact_max_rows: i64,
    /// Nearest products of the whole catalog that check looks at
    /// (1..=semantic_limit).
    pub semantic_far_domain_check_rows: i64,
    /// `hnsw.ef_search` of the check's walk (1..=1000).
    pub semantic_far_domain_check_ef: i64,
    /// Products in the catalog (the planner's row estimate of the
    /// projection) below which the domain walks are left out: one walk of
    /// a smaller catalog's graph already finds its true neighbours.
    pub semantic_domain_walk_min_rows: i64,
    /// 0: no bound. Otherwise the domain walks run only in a catalog of at
    /// most this many domains: each is a walk of its own graph in every
    /// search they serve, so a catalog of more domains walks only the whole
    /// catalog's graph (route `hnsw`) rather than paying for one walk a
    /// domain.
    pub semantic_domain_walk_max_domains: i64,
    /// 0: off. Otherwise, when the HNSW route's walk stops short of the
    /// limit (its scan met `hnsw_max_scan_tuples`) and more than this many
    /// rows are eligible, the graph is walked again with this scan budget
    /// (hnsw_max_scan_tuples+1..=10,000,000) before an exact scan is
    /// considered (route `hnsw_underfilled_then_long_walk`): the walk then
    /// visits fewer rows than the exact scan would. Where fewer rows are
    /// eligible, or the second walk also stops short, the exact scan
    /// completes the arm as before.
    pub semantic_refill_scan_tuples: i64,
    /// `hnsw.scan_mem_multiplier` of that second walk (1..=1000): the
    /// memory its scan may hold, in multiples of `work_mem`, so that the
    /// scan budget and not the memory ends it.
    pub semantic_refill_mem_multiplier: i64,
    /// 0: off. Otherwise, for a query that carries a model code or SKU with
    /// a stem (its letters before the first digit: "heaf" of "HEAF-1072"),
    /// the HNSW route also scores by exact distance up to this many
    /// products whose identity text holds the stem (0..=10,000), and keeps
    /// the nearest of them and the walks' rows. A code's vector lies among
    /// its product line's near-identical texts, where a walk can settle in
    /// another line.
    pub semantic_identifier_family: i64,
    /// 0: off. Otherwise, where the identifier's family is scored, up to
    /// this many other products of the brands that make its line (the
    /// brands of its first 20 products) are scored by exact distance too
    /// (0..=10,000). A code's vector can lie nearer its brand's other
    /// lines than its own: the line is not eligible under the filter, or
    /// the query's other words name another kind of product.
    pub semantic_identifier_brand: i64,
    /// Reciprocal rank fusion constant k.
    pub rrf_k: f64,
    /// Fused candidates kept in the pool (and receipt).
    pub pool_size: usize,
    /// Pool members sent to the reranker.
    pub rerank_candidates: usize,
    /// Reranker deadline; after it the fused order is kept.
    pub rerank_deadline_ms: u64,
    /// 1: the rerank stage puts the pool members that keep the numeric
    /// bounds the query states ("under $50", "under 220 grams", "rated 4.5
    /// or better"; `search::bounds`) before those that break them, the
    /// reranker's order standing within each; 0: the reranker's order alone.
    pub rerank_stated_bounds: i64,
    /// Query embedding deadline; after it the semantic arm is skipped.
    pub embed_deadline_ms: u64,
    /// Longest accepted query, in characters.
    pub max_query_chars: usize,
    /// Database connections one search may run its arms on (1..=4). The
    /// search's own connection is always one of them; the others are taken
    /// from the pool only when it can hand them over without waiting, so a
    /// one-connection pool (a Lambda container) or a busy server runs every
    /// arm on the search's connection, pipelined in one transaction. A
    /// fourth connection carries the semantic arm's walks of each domain's
    /// graph beside its main walk; a search whose filters rule those walks
    /// out (a domain or category), or whose context last saw the catalog
    /// below `semantic_domain_walk_min_rows`, takes no more than three.
    pub arm_connections: usize,
    /// Default number of results.
    pub default_limit: i64,

    // Bounds on what one request may cost and how long its traces live.
    /// Negated words (`-word`) one query may hold; more is a 400. Each one
    /// is a case-insensitive whole-word regular expression evaluated against
    /// every eligible row's text in every arm's statement, so a query's cost
    /// grows with their number times the eligible set.
    pub max_negated_terms: usize,
    /// Server-side bound of every statement an operation runs (`SET LOCAL
    /// statement_timeout` in its transaction): the arms, hydration, the
    /// receipt write and the scoped reads. A statement past it fails and the
    /// operation answers 503; the server stops it even if the client is gone.
    pub statement_timeout_ms: u64,
    /// Deadline of one whole operation (local server, API Gateway and
    /// AgentCore alike). Past it the answer is 503 and the statement in flight is
    /// cancelled and its connection closed ([`crate::db::Conn`]).
    /// The Lambda function timeout must leave a margin above it.
    pub request_deadline_ms: u64,
    /// Days a receipt (event and candidates) is kept. `mosaic receipts
    /// purge` drops the day partitions older than this; scoped calls on a
    /// purged event get the generic 404.
    pub receipt_retention_days: u32,
}

impl Default for RetrievalProfile {
    fn default() -> Self {
        Self {
            lexical_limit: 120,
            // mosaic bench (BENCHMARKS.md): 500 budget-cut 37/200 unfiltered queries at 10k, 5000 raised p95; 2000 kept.
            // At 100k the arm's cost is linear in the budget (heap fetch + ts_rank_cd, ~15 us per
            // match): direct arm SQL p95 unfiltered 22 ms at 2000, 18 at 1000, 12 at 500; but 500
            // cut typo recovery@10 of the lexical arm from 46% to 34% in `mosaic eval` (5k), so 2000 kept.
            lexical_scan_budget: 2_000,
            // Four times the arm's limit, chosen before measuring. `mosaic bench --sweep rank` at
            // 100k, 200 queries a shape against ranking every match: no score list differed at
            // 240, 480 or 960; the anti-correlated shape's arm p95 on the queries past 240 matches
            // 18.7 -> 15.2 ms at 480; at 1M no list differed and no change was measurable.
            // `mosaic eval`: the same on both catalogs. The bound on every step changed 18 of 200
            // unfiltered lists at 100k and lowered the foreign catalog's serving nDCG@10
            // 0.690 -> 0.687, so it holds for any-term steps alone.
            lexical_rank_budget: 480,
            // The served window's default (default_limit): a relaxed step that can fill the first
            // page ends the relaxation; not tuned on an evaluation set.
            lexical_enough: 10,
            trigram_limit: 80,
            trigram_floor: 0.45,
            // Threshold cascade, measured on mosaic_bench_100000 with the arm's SQL (2 cores, other
            // builds running): 100 brand+model queries with one character deleted. Single step at
            // 0.45/0.55/0.6/0.7: target in the top 80 for 99/99/99/98, rows 78.7/58/33.7/6.9, p50
            // 49/16/11/3.2 ms, p95 126/106/38/8 ms. The physical-order budget this replaces
            // (160/500/1000/2000 matches at 0.45) found the target for only 26/66/73/85.
            // Cascade 0.7 > 0.55 > 0.45 (union of the steps, budget 1000): 99/100 for every enough.
            trigram_strict_threshold: 0.7,
            trigram_middle_threshold: 0.55,
            // Same probe, enough 1/10/20/80: p50 3.3/19/25/33 ms, p95 9/43/53/74 ms. `mosaic eval`
            // (5k): enough 1 lost trigram-only nDCG@10 0.590 -> 0.532 and serving 0.926 -> 0.916
            // (the close matches alone are too few); 10 and 20 kept 0.590 / 0.926-0.927. Later,
            // enough 5 / 3: trigram-only 0.584 / 0.569, serving 0.926 / 0.923; trigram-only per
            // intent, exact SKU 0.999 -> 0.982 / 0.975, exact model 0.943 -> 0.934 / 0.869, typo
            // 0.832 -> 0.821 / 0.789: a model's siblings come from the relaxed steps.
            trigram_enough: 10,
            // Descriptions are 4+ words; identities and category words are 1-3. At 100k an eight-word
            // description paid three GIN scans (7 + 14 + 18 ms, psql) for no match at any threshold.
            // `mosaic eval` (5k, 350 judged queries): every metric of every variant unchanged.
            trigram_floor_first_words: 4,
            // `mosaic bench --sweep perfect` (100k, 200 queries per shape, off and on interleaved):
            // trigram arm p50 unfiltered 16.9 -> 13.3 ms, category-word queries 30.1 -> 10.2 ms
            // (broad 40.5 -> 21.4); the perfect step served 28/200 unfiltered queries alone, and no
            // query's top-80 similarity scores changed. `mosaic eval` (5k): serving nDCG@10 0.927
            // either way; only ties among equal scores are chosen differently.
            trigram_perfect_first: 1,
            // `mosaic eval`, both catalogs, one run each way: the foreign catalog's serving nDCG@10
            // 0.630 -> 0.662 and RRF 0.607 -> 0.656 (its short queries 0.551 -> 0.682: "extra-wide
            // running shoes" no longer fuses titles that hold only "running shoes"); the sample
            // catalog's 2,100 lists all unchanged. Chosen by what the arm is for, not tuned: there
            // is no number in it. Needs `query_correction` (it says which words are spelled).
            trigram_spelled_perfect: 1,
            // Chosen by what the arm is for, as above: the corrected words are the catalog's own.
            // `mosaic eval`, both catalogs, one run each way: no list of any variant changed; see
            // EVALUATION.md and BENCHMARKS.md, "The trigram arm for a corrected query".
            trigram_corrected_perfect: 1,
            // Chosen by what the relaxed steps are for (near-spellings of a code), not tuned:
            // there is no number in it. See EVALUATION.md and BENCHMARKS.md, "The trigram arm's
            // relaxed steps for a code".
            trigram_identifier_steps: 1,
            // A bound, not a tuned number: the import's longest identity field but the title
            // (`model`, 128 characters). psql, the trigram step's condition alone: at 5k products
            // the planner computes every row's similarity instead of scanning the GIN index once
            // the query holds about 470 distinct trigrams (500 random letters: 0.4 s a step, 2.4 s
            // for the arm through the service; 450: 0.7 ms). No query of either evaluation catalog
            // that reaches the arm is longer than 98 characters, so no list changes.
            trigram_query_chars: 128,
            // Bounds common words ("air fryer" matches thousands at every threshold): category-word
            // queries p50/p95 85/158 ms without it, 31/47 with 1000, 18/32 with 500. A cut step holds
            // the limit, so the cascade stops there; stricter steps' rows are kept. Against no budget
            // (same cascade), the top-80 similarity scores are identical for 93/100 brand+model
            // typos (the rest differ only below 0.55; target found 99/100 either way), 99/100
            // brand+noun typos and 96/100 category-word queries; 500 gave 93/98/85.
            // Then (floor-first for long queries, arms on three connections), `mosaic bench --sweep
            // trigram` at 100k, 200 queries per shape, against an unbounded cascade: budget 250/500/1000
            // gave arm p95 unfiltered 33/38/55 ms, broad 49/48/59, and differing top-80 score lists
            // for 16/5/3 (unfiltered) and 10/5/3 (broad) of 200 queries; 500 kept.
            trigram_scan_budget: 500,
            query_correction: 1,
            // pg_trgm's own default (0.3) misses one-letter slips of short words ("pus" / "plus":
            // 0.29); the edit limit, not this, decides what is corrected.
            correction_min_similarity: 0.25,
            // Chosen by what a tie-break is for, not tuned: there is no number in it. "Paperlane
            // Staning Desk": "staying" (4,297 products) and "standing" (3,225) are one edit away;
            // no product holds "staying" with "paperlane" or "desk". See EVALUATION.md.
            correction_context: 1,
            semantic_limit: 150,
            // mosaic bench (BENCHMARKS.md): 10000 gave recall 1.0 but 33-70 ms arm p50 at 10k; 1000 kept.
            semantic_exact_threshold: 1_000,
            // mosaic bench (BENCHMARKS.md): 40/100/200 moved recall@10 only 0.87-0.90 (hashing vectors) at ~equal cost.
            // Then with the local model's vectors at 10k, recall@10 unfiltered/broad/anti-correlated
            // 0.869/0.906/0.941 at 200, 0.958/0.928/0.986 at 400 (semantic arm p50 3.8 -> 5.9 ms); at
            // 800 the planner sorts every row exactly instead (recall 1.0, arm p50 22 ms). At 100k
            // (hashing vectors, paired runs) 400 raised recall 0.648 -> 0.824 unfiltered and 0.490 ->
            // 0.638 anti-correlated for +2 ms semantic p50, totals within noise. 400 kept.
            // 100k with the local model (`--sweep semantic`, three graph builds): 0.865-0.905 at
            // 400, 0.918-0.950 at 800 for +1.5-3.5 ms arm p50; the planner walks the graph at 800
            // there, so larger catalogs should set 800 through MOSAIC_HNSW_EF_SEARCH. At 10k, 800
            // makes the planner sort instead (above); 800 as the default cost +10 ms total p50 under
            // a broad filter at 10k and +3 ms unfiltered at 100k (paired runs, hashing vectors).
            hnsw_ef_search: 400,
            hnsw_max_scan_tuples: 20_000,
            // `mosaic bench --sweep semantic`, 100k, local model, 100 queries per shape: 400 / 800 /
            // 1500 rows gave recall@10 0.877 / 0.919 / 0.920 unfiltered (0.877 with 150) for arm p50
            // 10.5 / 15.4 / 22.4 ms (9.6); a longer walk stays in the cluster it settled in. Off.
            semantic_overfetch: 150,
            // Same sweep: domain walks at 40 / 100 / 200 gave recall@10 0.980 / 0.991 / 0.991
            // unfiltered (0.877 without). Full runs at 100k with the local model, walks off / at 40
            // / at 100 alternated (BENCHMARKS.md, "Walking each domain's graph"): recall@10 0.877 /
            // 0.980 / 0.991 unfiltered, 0.873 / 0.964 / 0.976 broad; semantic arm p50 unfiltered
            // +14 / +21 ms, search p50 +10-13 / +20-24 ms. 40: most of the recall for two thirds
            // of the cost. Left out under a domain or category filter (the selective shape paid
            // +18-26 ms for no recall before) and below 50,000 products: at 10k one walk already
            // has recall 1.0, so smaller catalogs pay nothing.
            semantic_domain_walk_ef: 40,
            // `mosaic bench --sweep walks`, 100k, local model, 100 queries per shape: walking on to
            // 2,000 elements raised the broad filter's recall@10 0.944 -> 0.963 for +2-4 ms arm
            // p50 (unfiltered: the same statements); with hashing vectors 0.898 -> 0.900 for +6 ms.
            // Kept at 1 then: the unfiltered and broad recall targets needed more than this gave.
            // Later, on a graph build where the broad filter's recall@10 was 0.978 (`--sweep walks`,
            // local model, 100 queries per shape), 1 / 100 / 250 / 500 / 1,000 / 2,000 gave 0.978 /
            // 0.978 / 0.978 / 0.987 / 0.988 / 0.988 (model codes 0.952 -> 0.988: a code's walk of
            // the domain's graph reaches the eligible products of the brand's other lines) for arm
            // p50 16.8 / 16.7 / 15.3 / 17.7 / 19.2 / 20.3 ms; with hashing vectors 0.954 -> 0.955
            // at 500 for +0.8 ms (2,000: +5.4). The walk's first candidate list already visits a
            // few hundred elements, and pgvector checks the budget only when the scan resumes: 100
            // and 250 end where 1 does, 500 lets it resume about once. Unfiltered walks fill their
            // first list and never resume. Paired runs (BENCHMARKS.md, "Domain walks that resume
            // under a filter"): the broad shape within the runs' drift at 100k and 1M. 500 kept.
            semantic_domain_walk_tuples: 500,
            // `mosaic bench --sweep far`, 100k, local model, 100 anti-correlated queries (a domain
            // filter away from the query): recall@10 0.868 off, 0.977 at 1,000 rows, 0.983 at
            // 1,500 (whatever the walk's ef_search, 200-1000); semantic arm p50 5.2 -> 17-22 ms
            // for those searches. Full runs with hashing vectors (ABBA): that shape's recall@10
            // 0.761 -> 0.912 and search p50 20-21 -> 35-36 ms. Only queries none of whose ten
            // nearest products lie in the filter's domain pay it; the others pay the check.
            semantic_far_domain_overfetch: 1_500,
            // psql, 100k products (hashing vectors), a home-and-kitchen product's vector under the
            // electronics filter (35,486 products): the exact scan from migration 0024's index took
            // 27-31 ms in one statement and 15-16 ms for each half, the 1,500-row walk 32-40 ms;
            // the scan's cost grows with the domain's rows (0.8 us each) and the walk's does not.
            // 40,000: about where the whole scan costs the database what the walk does at its
            // longest (hashing vectors give it no shortcut). Paired runs at 100k (BENCHMARKS.md,
            // "A far domain scored exactly"), anti-correlated shape: with hashing vectors search
            // p50 -3.4 to -5.3 ms, p95 -1.2 to -3.7 ms; with the local model's vectors, whose walk
            // is shorter (15 ms in psql), recall@10 0.972 -> 0.990 for about +2 ms p50 and +4-6 ms
            // p95. 0 walks as before.
            semantic_far_exact_max_rows: 40_000,
            // The check: ten nearest products, found by a walk at pgvector's default ef_search.
            // Its answer is used only when it is zero, so it needs no more precision than that.
            semantic_far_domain_check_rows: 10,
            semantic_far_domain_check_ef: 40,
            semantic_domain_walk_min_rows: 50_000,
            // Twice the domains of the catalogs the walks were measured on (four): each walk costs
            // 2.5-3 ms in psql at 100k (hashing vectors, a domain of 29,000-35,000 products), and
            // four of them +10-13 ms on the search's p50 (above). Past it the cost of the walks
            // grows with the catalog's taxonomy rather than with its size.
            semantic_domain_walk_max_domains: 8,
            // A tenth of a million-product catalog. psql, 1M products (hashing vectors), the eight
            // searches of a `mosaic bench` broad run whose walk stopped short (price <= the median,
            // queries for laptops and standing desks, none of which is that cheap): the exact scan
            // over the 500,000 eligible rows took 1.7-3.7 s; a walk with a budget of 100,000
            // filled all eight in 150-410 ms (200,000: the same rows and times).
            semantic_refill_scan_tuples: 100_000,
            // With 4 MB of work_mem, at 1x the scan ran out of memory first and stopped short
            // (59 of 150 rows for "laptop"); 4x filled all eight, 8x leaves room.
            semantic_refill_mem_multiplier: 8,
            // `mosaic bench --sweep family`, 100k, local model, 100 queries per shape: recall@10
            // unfiltered 0.961 off, 0.974 at 250 rows, 0.981 at 1,000 and at 4,000 (model numbers
            // 0.896 -> 0.976), broad 0.944 -> 0.963 -> 0.971 -> 0.971; a line there holds 400-600
            // products, so 1,000 reads each whole and bounds the statement where lines are longer
            // (1M). Only queries with a code's stem pay it: one statement in the walks' round trip,
            // 1.5-2.3 ms in psql at 100k, 3-12 ms warm at 1M (1,000 of a 4,000-product line; the
            // arm's p50 on code queries +10-12 ms in paired runs, recall@10 +0.035). The 5k
            // evaluation catalogs: the same lists with and without it.
            semantic_identifier_family: 1_000,
            // Off: at 100k with the local model 4,000 rows (a whole brand there) take recall@10
            // 0.981 -> 0.997 unfiltered and 0.971 -> 0.995 broad, but cost code queries 7-12 ms at
            // the semantic arm's p50 and the shapes 3-8 ms at total p50 (paired runs, hashing
            // vectors), for lists the evaluation catalogs do not change.
            semantic_identifier_brand: 0,
            rrf_k: 60.0,
            pool_size: 50,
            rerank_candidates: 50,
            rerank_deadline_ms: 1_500,
            // On: a stated bound is what the caller asked for. A rule, not a weight (nothing to
            // fit); `make eval`: sample lists unchanged (no sample query states one), foreign
            // serving nDCG@10 in EVALUATION.md ("Bounds the query states").
            rerank_stated_bounds: 1,
            embed_deadline_ms: 2_000,
            max_query_chars: 1_000,
            default_limit: 10,
            // mosaic bench, 100k products: three connections overlap the arms on two cores; see
            // BENCHMARKS.md for the p95 with one and with three. A fourth for the semantic arm's
            // domain walks (catalogs from 50,000 products), three runs each alternated: arms p50
            // unfiltered 19.0-23.5 -> 17.7-19.8 ms, broad 23.0-28.0 -> 20.1-22.1; searches/s at
            // concurrency 32 69.2 -> 70.3 (BENCHMARKS.md, "The domain walks on a lane of their own").
            arm_connections: 4,
            // The eligibility predicate alone over all 5k sample products (psql, two runs): 0 negated
            // words 0.7 ms, 1: 35-80 ms, 2: 47-55, 5: 156-165, 10: 208-238, 30: 600 ms, 100: 20-22 s,
            // 300: 43-59 s. The cost is about 4 us per word and row examined, and past 32 distinct
            // words PostgreSQL's cache of compiled regular expressions thrashes and every row
            // recompiles them (the cliff between 30 and 100). Real exclusion lists are short
            // ("headphones -wired -refurbished"); 10 leaves room for any list a person types, stays
            // far below the cliff, and bounds a broad statement at 100k products to a few seconds,
            // under `statement_timeout_ms`. See BENCHMARKS.md.
            max_negated_terms: 10,
            // At 1M products on two cores the whole search's p99 is 1.45 s (BENCHMARKS.md); a single
            // statement past 5 s means an unhealthy or locked database, not a slow query, and one such
            // statement still leaves the request deadline room for the receipt write.
            statement_timeout_ms: 5_000,
            // Above one full statement bound plus the rerank deadline and embedding, below the
            // Lambda function timeout in template.yaml (15 s) by a margin for the answer.
            request_deadline_ms: 10_000,
            // A month: long enough to explain and audit a session's searches, short enough that
            // a caller's query texts and session ids do not accumulate.
            receipt_retention_days: 30,
        }
    }
}

/// An environment setting as configured: trimmed, and `None` when unset or
/// empty (the template writes empty strings for parameters left blank).
pub fn setting(get: impl Fn(&str) -> Option<String>, var: &str) -> Option<String> {
    get(var)
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty())
}

/// Reads an on/off environment setting: unset or empty is `false`;
/// `true`/`1` and `false`/`0` (any case); anything else is an error naming
/// the variable.
pub fn flag(var: &str, value: Option<&str>) -> Result<bool, String> {
    match value.map(|v| v.trim().to_ascii_lowercase()).as_deref() {
        None | Some("") | Some("false") | Some("0") => Ok(false),
        Some("true") | Some("1") => Ok(true),
        Some(other) => Err(format!("{var}={other:?}: use `true` or `false`")),
    }
}

/// Fields whose addition changed what a search does, with the value that
/// does what searches did before them: a receipt recorded without the field
/// is replayed with it.
const BEFORE_THE_FIELD: [(&str, i64); 17] = [
    // Every match of a lexical step was ranked by cover density.
    ("lexical_rank_budget", 0),
    // The reranker's order stood alone.
    ("rerank_stated_bounds", 0),
    // Short queries went straight to the trigram cascade.
    ("trigram_perfect_first", 0),
    // Queries spelled as written ran the whole trigram cascade.
    ("trigram_spelled_perfect", 0),
    // A corrected query ran the trigram cascade.
    ("trigram_corrected_perfect", 0),
    // Every trigram step matched the whole query.
    ("trigram_identifier_steps", 0),
    // The trigram arm read the whole query.
    ("trigram_query_chars", 0),
    // Queries reached the arms as written.
    ("query_correction", 0),
    // Ties between equally close corrections went to the most common word.
    ("correction_context", 0),
    // One walk of one graph.
    ("semantic_domain_walk_ef", 0),
    // Every domain's graph was walked, however many there were.
    ("semantic_domain_walk_max_domains", 0),
    // Domain walks ended at their first candidate list.
    ("semantic_domain_walk_tuples", 1),
    // A domain filter's graph was walked like any other.
    ("semantic_far_domain_overfetch", 0),
    // A query far from its domain filter walked that domain's graph.
    ("semantic_far_exact_max_rows", 0),
    // A walk that stopped short was completed by the exact scan.
    ("semantic_refill_scan_tuples", 0),
    // A code's product line was left to the walks.
    ("semantic_identifier_family", 0),
    // The family stopped at the code's own line.
    ("semantic_identifier_brand", 0),
];

impl RetrievalProfile {
    /// Whether the domain walks may run in a catalog of `domains` domains
    /// (`semantic_domain_walk_max_domains`, 0: no bound).
    pub fn walks_domains(&self, domains: usize) -> bool {
        let max = self.semantic_domain_walk_max_domains;
        max == 0 || i64::try_from(domains).is_ok_and(|n| n <= max)
    }

    /// Defaults with `MOSAIC_*` environment overrides applied and validated.
    pub fn from_env() -> Result<Self, String> {
        Self::from_lookup(|k| std::env::var(k).ok())
    }

    /// As [`from_env`](Self::from_env) with an explicit variable lookup.
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<Self, String> {
        let mut value = serde_json::to_value(Self::default()).map_err(|e| e.to_string())?;
        let obj = value
            .as_object_mut()
            .expect("the profile serialises to an object");
        for (key, slot) in obj.iter_mut() {
            let var = format!("MOSAIC_{}", key.to_uppercase());
            if let Some(raw) = get(&var) {
                let parsed: serde_json::Value = serde_json::from_str(raw.trim())
                    .map_err(|_| format!("{var}={raw:?} is not a number"))?;
                if !parsed.is_number() {
                    return Err(format!("{var}={raw:?} is not a number"));
                }
                *slot = parsed;
            }
        }
        let profile: Self =
            serde_json::from_value(value).map_err(|e| format!("retrieval profile: {e}"))?;
        profile.validate()?;
        Ok(profile)
    }

    pub fn validate(&self) -> Result<(), String> {
        let checks: [(bool, &str); 48] = [
            (
                (1..=1000).contains(&self.lexical_limit),
                "lexical_limit must be 1..1000",
            ),
            (
                self.lexical_scan_budget >= self.lexical_limit,
                "lexical_scan_budget must be >= lexical_limit",
            ),
            (
                self.lexical_rank_budget == 0
                    || (self.lexical_limit..=self.lexical_scan_budget)
                        .contains(&self.lexical_rank_budget),
                "lexical_rank_budget must be 0 or lexical_limit..=lexical_scan_budget",
            ),
            (
                (1..=self.lexical_limit).contains(&self.lexical_enough),
                "lexical_enough must be 1..lexical_limit",
            ),
            (
                (0..=1).contains(&self.query_correction),
                "query_correction must be 0 or 1",
            ),
            (
                (0..=1).contains(&self.correction_context),
                "correction_context must be 0 or 1",
            ),
            (
                (0.05..=1.0).contains(&self.correction_min_similarity),
                "correction_min_similarity must be 0.05..1",
            ),
            (
                (1..=1000).contains(&self.trigram_limit),
                "trigram_limit must be 1..1000",
            ),
            (
                (0.0..=1.0).contains(&self.trigram_floor),
                "trigram_floor must be 0..1",
            ),
            (
                self.trigram_floor <= self.trigram_middle_threshold
                    && self.trigram_middle_threshold <= self.trigram_strict_threshold
                    && self.trigram_strict_threshold <= 1.0,
                "trigram thresholds must satisfy floor <= middle <= strict <= 1",
            ),
            (
                (1..=self.trigram_limit).contains(&self.trigram_enough),
                "trigram_enough must be 1..=trigram_limit",
            ),
            (
                self.trigram_floor_first_words >= 1,
                "trigram_floor_first_words must be >= 1",
            ),
            (
                (0..=1).contains(&self.trigram_perfect_first),
                "trigram_perfect_first must be 0 or 1",
            ),
            (
                (0..=1).contains(&self.rerank_stated_bounds),
                "rerank_stated_bounds must be 0 or 1",
            ),
            (
                (0..=1).contains(&self.trigram_spelled_perfect),
                "trigram_spelled_perfect must be 0 or 1",
            ),
            (
                (0..=1).contains(&self.trigram_corrected_perfect),
                "trigram_corrected_perfect must be 0 or 1",
            ),
            (
                (0..=1).contains(&self.trigram_identifier_steps),
                "trigram_identifier_steps must be 0 or 1",
            ),
            (
                (0..=self.max_query_chars as i64).contains(&self.trigram_query_chars),
                "trigram_query_chars must be 0..=max_query_chars",
            ),
            (
                self.trigram_scan_budget >= self.trigram_limit,
                "trigram_scan_budget must be >= trigram_limit",
            ),
            (
                (1..=1000).contains(&self.semantic_limit),
                "semantic_limit must be 1..1000",
            ),
            (
                self.semantic_exact_threshold >= 0,
                "semantic_exact_threshold must be >= 0",
            ),
            (
                (1..=1000).contains(&self.hnsw_ef_search),
                "hnsw_ef_search must be 1..1000",
            ),
            (
                self.hnsw_max_scan_tuples >= self.semantic_limit,
                "hnsw_max_scan_tuples must be >= semantic_limit",
            ),
            (
                (self.semantic_limit..=self.hnsw_max_scan_tuples)
                    .contains(&self.semantic_overfetch),
                "semantic_overfetch must be semantic_limit..=hnsw_max_scan_tuples",
            ),
            (
                (0..=1000).contains(&self.semantic_domain_walk_ef),
                "semantic_domain_walk_ef must be 0..1000",
            ),
            (
                (1..=self.hnsw_max_scan_tuples).contains(&self.semantic_domain_walk_tuples),
                "semantic_domain_walk_tuples must be 1..=hnsw_max_scan_tuples",
            ),
            (
                self.semantic_far_domain_overfetch == 0
                    || (self.semantic_overfetch..=self.hnsw_max_scan_tuples)
                        .contains(&self.semantic_far_domain_overfetch),
                "semantic_far_domain_overfetch must be 0 or semantic_overfetch..=hnsw_max_scan_tuples",
            ),
            (
                self.semantic_far_exact_max_rows >= 0,
                "semantic_far_exact_max_rows must be >= 0",
            ),
            (
                (1..=self.semantic_limit).contains(&self.semantic_far_domain_check_rows),
                "semantic_far_domain_check_rows must be 1..=semantic_limit",
            ),
            (
                (1..=1000).contains(&self.semantic_far_domain_check_ef),
                "semantic_far_domain_check_ef must be 1..=1000",
            ),
            (
                self.semantic_domain_walk_min_rows >= 0,
                "semantic_domain_walk_min_rows must be >= 0",
            ),
            (
                self.semantic_domain_walk_max_domains >= 0,
                "semantic_domain_walk_max_domains must be >= 0",
            ),
            (
                self.semantic_refill_scan_tuples == 0
                    || (self.hnsw_max_scan_tuples + 1..=10_000_000)
                        .contains(&self.semantic_refill_scan_tuples),
                "semantic_refill_scan_tuples must be 0 or hnsw_max_scan_tuples+1..=10000000",
            ),
            (
                (1..=1000).contains(&self.semantic_refill_mem_multiplier),
                "semantic_refill_mem_multiplier must be 1..=1000",
            ),
            (
                (0..=10_000).contains(&self.semantic_identifier_family),
                "semantic_identifier_family must be 0..=10000",
            ),
            (
                (0..=10_000).contains(&self.semantic_identifier_brand),
                "semantic_identifier_brand must be 0..=10000",
            ),
            (self.rrf_k > 0.0, "rrf_k must be positive"),
            (
                (50..=500).contains(&self.pool_size),
                "pool_size must be 50..500 (a served window can hold 50)",
            ),
            (
                self.rerank_candidates <= self.pool_size,
                "rerank_candidates must be <= pool_size",
            ),
            (
                (1..=50).contains(&self.default_limit),
                "default_limit must be 1..50",
            ),
            (
                (1..=4).contains(&self.arm_connections),
                "arm_connections must be 1..4",
            ),
            (
                self.max_negated_terms <= 100,
                "max_negated_terms must be 0..100",
            ),
            (
                (100..=600_000).contains(&self.statement_timeout_ms),
                "statement_timeout_ms must be 100..600000",
            ),
            (
                (100..=900_000).contains(&self.request_deadline_ms),
                "request_deadline_ms must be 100..900000",
            ),
            (
                (1..=600_000).contains(&self.embed_deadline_ms),
                "embed_deadline_ms must be 1..600000",
            ),
            (
                (1..=600_000).contains(&self.rerank_deadline_ms),
                "rerank_deadline_ms must be 1..600000",
            ),
            (
                (1..=crate::http::MAX_BODY).contains(&self.max_query_chars),
                "max_query_chars must be 1..65536 (a request body's limit)",
            ),
            (
                (1..=3650).contains(&self.receipt_retention_days),
                "receipt_retention_days must be 1..3650",
            ),
        ];
        match checks.iter().find(|(ok, _)| !ok) {
            Some((_, msg)) => Err(format!("invalid retrieval profile: {msg}")),
            None => Ok(()),
        }
    }

    /// The snapshot stored in receipts.
    pub fn snapshot(&self) -> serde_json::Value {
        serde_json::to_value(self).expect("the profile serialises")
    }

    /// This profile with every field a receipt's `snapshot` recorded put
    /// back, validated. A field the snapshot lacks (it predates the field)
    /// keeps this profile's value, unless [`BEFORE_THE_FIELD`] names the
    /// value that behaves as searches did before it existed; a snapshot
    /// that is not an object changes nothing.
    pub fn with_snapshot(&self, snapshot: &serde_json::Value) -> Result<Self, String> {
        let mut value = self.snapshot();
        if let (Some(fields), Some(recorded)) = (value.as_object_mut(), snapshot.as_object()) {
            for (key, slot) in fields.iter_mut() {
                if let Some(v) = recorded.get(key) {
                    *slot = v.clone();
                } else if let Some((_, before)) =
                    BEFORE_THE_FIELD.iter().find(|(field, _)| field == key)
                {
                    *slot = serde_json::Value::from(*before);
                }
            }
        }
        let profile: Self = serde_json::from_value(value)
            .map_err(|e| format!("recorded retrieval profile: {e}"))?;
        profile.validate()?;
        Ok(profile)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn environment_overrides_apply_and_are_validated() {
        let p = RetrievalProfile::from_lookup(|k| (k == "MOSAIC_POOL_SIZE").then(|| "80".into()))
            .unwrap();
        assert_eq!(p.pool_size, 80);
        let err = RetrievalProfile::from_lookup(|k| (k == "MOSAIC_POOL_SIZE").then(|| "10".into()))
            .unwrap_err();
        assert!(err.contains("pool_size"));
        let err = RetrievalProfile::from_lookup(|k| (k == "MOSAIC_RRF_K").then(|| "sixty".into()))
            .unwrap_err();
        assert!(err.contains("MOSAIC_RRF_K"));
        for (key, value, field) in [
            ("MOSAIC_RERANK_DEADLINE_MS", "0", "rerank_deadline_ms"),
            ("MOSAIC_EMBED_DEADLINE_MS", "0", "embed_deadline_ms"),
            ("MOSAIC_MAX_QUERY_CHARS", "100000", "max_query_chars"),
        ] {
            let err =
                RetrievalProfile::from_lookup(|k| (k == key).then(|| value.into())).unwrap_err();
            assert!(err.contains(field), "{key}={value}: {err}");
        }
    }

    #[test]
    fn a_recorded_snapshot_is_put_back_over_the_missing_fields() {
        let recorded = serde_json::json!({"pool_size": 80, "rrf_k": 10.0, "retired_field": 1});
        let p = RetrievalProfile::default()
            .with_snapshot(&recorded)
            .unwrap();
        assert_eq!((p.pool_size, p.rrf_k), (80, 10.0));
        assert_eq!(p.lexical_limit, RetrievalProfile::default().lexical_limit);
        // A snapshot from before a field that changed behaviour replays as
        // searches ran then.
        assert_eq!(p.semantic_far_domain_overfetch, 0);
        assert_eq!(p.semantic_far_exact_max_rows, 0);
        assert_eq!(p.rerank_stated_bounds, 0);
        assert_eq!(p.semantic_domain_walk_tuples, 1);
        assert_eq!(p.lexical_rank_budget, 0);
        assert_eq!(p.semantic_refill_scan_tuples, 0);
        assert_eq!(p.semantic_identifier_family, 0);
        assert_eq!(p.semantic_domain_walk_ef, 0);
        assert_eq!(p.query_correction, 0);
        assert_eq!(p.trigram_perfect_first, 0);
        assert_eq!(p.trigram_spelled_perfect, 0);
        assert_eq!(p.trigram_identifier_steps, 0);
        // Also where the running profile turns the field on.
        let on = RetrievalProfile {
            semantic_identifier_brand: 4_000,
            ..Default::default()
        };
        let p = on.with_snapshot(&recorded).unwrap();
        assert_eq!(p.semantic_identifier_brand, 0);
        // A snapshot that has the field keeps what it recorded.
        let later = serde_json::json!({"semantic_domain_walk_ef": 40, "query_correction": 1});
        let p = RetrievalProfile::default().with_snapshot(&later).unwrap();
        assert_eq!((p.semantic_domain_walk_ef, p.query_correction), (40, 1));
        let bad = serde_json::json!({"pool_size": 10});
        assert!(RetrievalProfile::default()
            .with_snapshot(&bad)
            .unwrap_err()
            .contains("pool_size"));
    }

    #[test]
    fn the_second_walk_is_off_at_zero_and_otherwise_longer_than_the_first() {
        let with = |tuples: i64, memory: i64| RetrievalProfile {
            semantic_refill_scan_tuples: tuples,
            semantic_refill_mem_multiplier: memory,
            ..Default::default()
        };
        assert!(with(0, 1).validate().is_ok());
        assert!(with(20_001, 1000).validate().is_ok());
        for (tuples, memory) in [(20_000, 8), (10_000_001, 8), (100_000, 0), (100_000, 1001)] {
            assert!(
                with(tuples, memory).validate().is_err(),
                "{tuples} {memory}"
            );
        }
    }

    #[test]
    fn the_lexical_ranking_budget_is_off_at_zero_and_otherwise_between_limit_and_scan_budget() {
        let get = |raw: &'static str| {
            move |k: &str| (k == "MOSAIC_LEXICAL_RANK_BUDGET").then(|| raw.to_string())
        };
        for (raw, want) in [("0", 0), ("120", 120), ("2000", 2_000)] {
            let p = RetrievalProfile::from_lookup(get(raw)).unwrap();
            assert_eq!(p.lexical_rank_budget, want);
        }
        for raw in ["-1", "119", "2001"] {
            let err = RetrievalProfile::from_lookup(get(raw)).unwrap_err();
            assert!(err.contains("lexical_rank_budget"), "{raw}: {err}");
        }
    }

    #[test]
    fn the_far_domain_walk_is_off_at_zero_and_otherwise_bounded() {
        let get = |raw: &'static str| {
            move |k: &str| (k == "MOSAIC_SEMANTIC_FAR_DOMAIN_OVERFETCH").then(|| raw.to_string())
        };
        let p = RetrievalProfile::from_lookup(get("0")).unwrap();
        assert_eq!(p.semantic_far_domain_overfetch, 0);
        for raw in ["100", "149", "20001"] {
            let err = RetrievalProfile::from_lookup(get(raw)).unwrap_err();
            assert!(
                err.contains("semantic_far_domain_overfetch"),
                "{raw}: {err}"
            );
        }
    }

    #[test]
    fn the_trigram_cascade_is_overridable_and_validated() {
        let p = RetrievalProfile::from_lookup(|k| match k {
            "MOSAIC_TRIGRAM_STRICT_THRESHOLD" => Some("0.8".into()),
            "MOSAIC_TRIGRAM_ENOUGH" => Some("20".into()),
            _ => None,
        })
        .unwrap();
        assert_eq!((p.trigram_strict_threshold, p.trigram_enough), (0.8, 20));
        // A single step at the floor is allowed.
        RetrievalProfile::from_lookup(|k| match k {
            "MOSAIC_TRIGRAM_STRICT_THRESHOLD" | "MOSAIC_TRIGRAM_MIDDLE_THRESHOLD" => {
                Some("0.45".into())
            }
            _ => None,
        })
        .unwrap();
        for (var, raw) in [
            ("MOSAIC_TRIGRAM_MIDDLE_THRESHOLD", "0.9"),
            ("MOSAIC_TRIGRAM_FLOOR", "0.6"),
            ("MOSAIC_TRIGRAM_STRICT_THRESHOLD", "1.5"),
        ] {
            let err =
                RetrievalProfile::from_lookup(|k| (k == var).then(|| raw.into())).unwrap_err();
            assert!(err.contains("trigram thresholds"), "{var}={raw}: {err}");
        }
        for raw in ["0", "81"] {
            let err = RetrievalProfile::from_lookup(|k| {
                (k == "MOSAIC_TRIGRAM_ENOUGH").then(|| raw.into())
            })
            .unwrap_err();
            assert!(err.contains("trigram_enough"), "{raw}: {err}");
        }
    }
}
