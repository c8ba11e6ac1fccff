//! The three candidate arms and the two non-hybrid strategies' queries.
//!
//! Each arm is one SQL file in `sql/` with the shared eligibility predicate
//! inside its WHERE clause, so no filter is ever simulated by discarding rows
//! after a LIMIT. Each arm reports how complete its answer is:
//!
//! * `full`: it returned its limit;
//! * `exhausted`: fewer eligible matches exist than its limit;
//! * `budget_cut`: a scan budget stopped it before it could know.
//!
//! This module holds what the arms share (their results and modes, the
//! eligibility parameters, the SQL, the arms' settings) and the exact-
//! identifier and filters-only queries; each arm has its own module:
//! `lexical` (the strict match and its back-off), `trigram` (the threshold
//! cascade) and `semantic` (the routes of the vector search).

use super::fusion::Arm;
use super::request::Filters;
use super::trgm::WordSimilarity;
use crate::profile::RetrievalProfile;
use pgvector::Vector;
use serde::Serialize;
use tokio_postgres::types::{Kind, ToSql, Type};
use tokio_postgres::GenericClient;

mod lexical;
mod semantic;
mod trigram;

pub use lexical::*;
pub use semantic::*;
pub use trigram::*;

/// A statement parameter with its declared type. Every statement of the
/// search path goes out this way (`query_typed`): parse, bind and execute
/// of the unnamed statement in one round trip, where an undeclared one
/// costs a round trip to prepare a named statement first.
pub type Typed<'a> = (&'a (dyn ToSql + Sync), Type);

/// The types of the eligibility parameters `$1..$10`, as the predicate
/// casts them (`sql/eligibility.sql`).
const ELIGIBILITY_TYPES: [Type; 10] = [
    Type::TEXT,
    Type::TEXT,
    Type::TEXT,
    Type::TEXT_ARRAY,
    Type::BOOL,
    Type::INT8,
    Type::INT8,
    Type::FLOAT4,
    Type::JSONB,
    Type::TEXT_ARRAY,
];

/// pgvector's `vector`, for a query vector parameter. An extension type's
/// OID differs from database to database, so it is declared as 0
/// (unspecified) and the server takes it from the statement (`embedding <=>
/// $11`); the name is what the `Vector` encoder checks.
pub fn vector_type() -> Type {
    Type::new("vector".into(), 0, Kind::Simple, "public".into())
}

pub const ELIGIBILITY_SQL: &str = include_str!("../sql/eligibility.sql");
pub const LEXICAL_SQL: &str = include_str!("../sql/lexical.sql");
pub const LEXICAL_RELAXED_SQL: &str = include_str!("../sql/lexical_relaxed.sql");
pub const LEXICAL_TERMS_SQL: &str = include_str!("../sql/lexical_terms.sql");
pub const TRIGRAM_SQL: &str = include_str!("../sql/trigram.sql");
pub const ELIGIBLE_COUNT_SQL: &str = include_str!("../sql/eligible_count.sql");
pub const ELIGIBLE_COUNT_NEGATED_SQL: &str = include_str!("../sql/eligible_count_negated.sql");
pub const SEMANTIC_EXACT_SQL: &str = include_str!("../sql/semantic_exact.sql");
pub const SEMANTIC_HNSW_SQL: &str = include_str!("../sql/semantic_hnsw.sql");
pub const DOMAINS_SQL: &str = include_str!("../sql/domains.sql");
pub const NEAR_DOMAIN_SQL: &str = include_str!("../sql/near_domain.sql");
pub const SEMANTIC_FAMILY_SQL: &str = include_str!("../sql/semantic_family.sql");
pub const EXACT_IDENTIFIER_SQL: &str = include_str!("../sql/exact_identifier.sql");
pub const METADATA_ONLY_SQL: &str = include_str!("../sql/metadata_only.sql");
pub const ELIGIBLE_AMONG_SQL: &str = include_str!("../sql/eligible_among.sql");
pub const PRICE_STATS_SQL: &str = include_str!("../sql/price_stats.sql");
/// The pool's catalog fields, the eligibility checked again (hydration).
pub const HYDRATE_SQL: &str = include_str!("../sql/hydrate.sql");

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Full,
    Exhausted,
    BudgetCut,
    /// The arm did not run (no query text, or no query vector).
    Skipped,
}

/// One arm's ranked candidates (rank = index + 1) and its account of itself.
#[derive(Debug, Clone, Serialize)]
pub struct ArmResult {
    #[serde(skip)]
    pub candidates: Vec<(String, f64)>,
    pub returned: usize,
    pub limit: i64,
    pub verdict: Verdict,
    /// What the arm did: its lexical mode, trigram threshold, semantic
    /// route, or why it was skipped.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mode: Option<ArmMode>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub eligible_estimate: Option<i64>,
    /// The semantic arm: the most products one of the query's negated
    /// words is held by (the catalog's vocabulary), when that left at most
    /// `semantic_exact_threshold` products. The arm then took the exact
    /// route without counting the eligible rows, and `eligible_estimate`
    /// is the catalog's size less this number; absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub held_by_a_negated_word: Option<i64>,
    /// The semantic arm: how many eligible products of the query's code's
    /// product line and of the line's brands it scored by exact distance
    /// beside the walks (`semantic_identifier_family`,
    /// `semantic_identifier_brand`); absent when it did not look (the
    /// setting off, no code with a stem in the query, or the exact route).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub identifier_family: Option<i64>,
    /// The semantic arm: how many domains' graphs it walked beside the
    /// whole catalog's (`semantic_domain_walk_ef`); absent when it walked
    /// none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub domain_walks: Option<usize>,
    /// The semantic arm: the catalog's domains, when there were more than
    /// `semantic_domain_walk_max_domains` and it walked none of their
    /// graphs for that reason; absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub domains_not_walked: Option<usize>,
    /// The lane those walks ran on: the arm's own, or a fourth lane
    /// (`arm_connections` 4); absent when it walked no domain's graph.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub walks_connection: Option<usize>,
    /// The lane the code's family ran on: the arm's own, after the walk,
    /// or, when the arm walked no domain's graph, the walks' lane (a fourth
    /// lane, beside the walk); absent when it scored no family.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub family_connection: Option<usize>,
    /// The lane the second half of a far domain's exact scan ran on (route
    /// `exact_far_domain`): a fourth lane, beside the first half on the
    /// arm's own, or the arm's own, after it; absent on other routes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub half_connection: Option<usize>,
    /// The trigram arm: the codes its relaxed steps matched instead of the
    /// whole query (`trigram_identifier_steps`); absent when they matched
    /// the whole query or did not run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub matched_codes: Option<String>,
    /// The trigram arm: how many characters of the query (and of its codes)
    /// it read, when the query was longer than `trigram_query_chars`;
    /// absent when it read all of it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read_chars: Option<usize>,
    /// The lexical arm: `true` when its statements checked the price
    /// filter on each match's row rather than through the price index, as
    /// the filter admits enough of a large catalog ([`PriceShare`]); the
    /// same matches either way. Absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub price_checked_on_rows: Option<bool>,
    /// The lexical arm: the most matches one of its any-term steps had
    /// when that was more than `lexical_rank_budget`, so that `ts_rank`
    /// chose which of them `ts_rank_cd` ranked; absent when every step
    /// ranked all its matches.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prescored_matches: Option<i64>,
    /// The lane (0 = the search's own connection) the arm ran on; see
    /// [`super::lanes`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub connection: Option<usize>,
    /// `reader` when the arm ran on the read pool (a replica); absent when
    /// it ran on the writer ([`crate::Ctx::read_pool`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pool: Option<&'static str>,
    /// The semantic arm: the catalog's product count its probe read (not
    /// part of the receipt; the context remembers it, [`crate::CatalogSize`]).
    #[serde(skip)]
    pub catalog_rows: Option<i64>,
    /// The semantic arm: how many domains it listed, when it listed them
    /// (not part of the receipt; the context remembers it).
    #[serde(skip)]
    pub catalog_domains: Option<usize>,
    /// The semantic arm: whether its code's family went to the walks'
    /// client rather than its own (see [`semantic_on`]).
    #[serde(skip)]
    pub family_on_walks: bool,
    pub ms: f64,
}

/// The lexical arm's query: as written, or relaxed to the documents that
/// hold at least `required` of the query's `of` terms (named
/// `backoff_any_term` when one is enough), or, for a query naming a
/// product-line code some products hold, to the documents holding the code
/// and at least `required` of the query's `of` other terms (named
/// `backoff_code_only` when the code alone is enough). After those, a
/// query with a code backs off to `required` of its other terms or the code
/// (`Backoff`: `of` the other terms, `required` two or more; or any one of
/// the `of` other terms that fewer products hold than the arm ranks).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LexicalMode {
    Strict,
    Backoff { required: usize, of: usize },
    CodeBackoff { required: usize, of: usize },
}

/// The semantic arm's route, chosen on selectivity.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SemanticRoute {
    Exact,
    Hnsw,
    /// The walk of the whole catalog's graph and of each domain's graph
    /// (`semantic_domain_walk_ef`), merged by exact distance.
    HnswDomainWalks,
    /// A domain filter's graph walked longer (`semantic_far_domain_overfetch`
    /// rows): none of the query's nearest products are in that domain.
    HnswLongWalk,
    /// None of the query's nearest products are in the domain filter's
    /// domain, which holds at most `semantic_far_exact_max_rows` products:
    /// every eligible row of it scored exactly instead of the long walk.
    ExactFarDomain,
    /// The HNSW scan stopped short of the limit; an exact scan completed it.
    HnswUnderfilledThenExact,
    /// The HNSW scan stopped short of the limit; a second walk with a
    /// larger scan budget (`semantic_refill_scan_tuples`) completed it.
    HnswUnderfilledThenLongWalk,
}

/// Why an arm did not run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SkipReason {
    /// Switched off (an evaluation variant).
    Disabled,
    /// The trigram arm: the query cannot name an identity.
    DescriptiveQuery,
    /// The semantic arm: no query vector (no model, or embedding failed).
    NoQueryVector,
}

/// What an arm did, as its diagnostics and receipt name it (`mode`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ArmMode {
    Lexical(LexicalMode),
    /// The trigram cascade's threshold that served last.
    Trigram(f64),
    Semantic(SemanticRoute),
    Skipped(SkipReason),
}

impl std::fmt::Display for ArmMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let name = match self {
            ArmMode::Trigram(threshold) => return write!(f, "threshold_{threshold}"),
            ArmMode::Lexical(LexicalMode::Backoff { required, of }) if *required > 1 => {
                return write!(f, "backoff_{required}_of_{of}_terms")
            }
            ArmMode::Lexical(LexicalMode::CodeBackoff { required, of }) if *required > 0 => {
                return write!(f, "backoff_code_and_{required}_of_{of}_terms")
            }
            ArmMode::Lexical(LexicalMode::Strict) => "strict",
            ArmMode::Lexical(LexicalMode::Backoff { .. }) => "backoff_any_term",
            ArmMode::Lexical(LexicalMode::CodeBackoff { .. }) => "backoff_code_only",
            ArmMode::Semantic(SemanticRoute::Exact) => "exact",
            ArmMode::Semantic(SemanticRoute::Hnsw) => "hnsw",
            ArmMode::Semantic(SemanticRoute::HnswDomainWalks) => "hnsw_domain_walks",
            ArmMode::Semantic(SemanticRoute::HnswLongWalk) => "hnsw_long_walk",
            ArmMode::Semantic(SemanticRoute::ExactFarDomain) => "exact_far_domain",
            ArmMode::Semantic(SemanticRoute::HnswUnderfilledThenExact) => {
                "hnsw_underfilled_then_exact"
            }
            ArmMode::Semantic(SemanticRoute::HnswUnderfilledThenLongWalk) => {
                "hnsw_underfilled_then_long_walk"
            }
            ArmMode::Skipped(SkipReason::Disabled) => "disabled",
            ArmMode::Skipped(SkipReason::DescriptiveQuery) => "descriptive_query",
            ArmMode::Skipped(SkipReason::NoQueryVector) => "no_query_vector",
        };
        f.write_str(name)
    }
}

impl Serialize for ArmMode {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// The three arms' results of one search; none for a metadata-only one.
/// Serialised as an object keyed by arm name, in name order.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ArmResults {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lexical: Option<ArmResult>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub semantic: Option<ArmResult>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trigram: Option<ArmResult>,
}

impl ArmResults {
    /// One arm's result, when the arms ran.
    pub fn get(&self, arm: Arm) -> Option<&ArmResult> {
        match arm {
            Arm::Lexical => self.lexical.as_ref(),
            Arm::Trigram => self.trigram.as_ref(),
            Arm::Semantic => self.semantic.as_ref(),
        }
    }
}

/// `results[arm]`: the arm's result; panics for a metadata-only search,
/// whose arms did not run.
impl std::ops::Index<Arm> for ArmResults {
    type Output = ArmResult;

    fn index(&self, arm: Arm) -> &ArmResult {
        self.get(arm)
            .unwrap_or_else(|| panic!("the {} arm did not run", arm.name()))
    }
}

impl ArmResult {
    pub fn skipped(limit: i64, why: SkipReason) -> Self {
        let mode = Some(ArmMode::Skipped(why));
        Self::new(Vec::new(), limit, Verdict::Skipped, mode, 0.0)
    }

    /// An arm that ranked `candidates` since `started`; `budget_cut` when it
    /// stopped at its scan budget: the answer may be full, but it is not
    /// known to be the best `limit`.
    fn ranked(
        candidates: Vec<(String, f64)>,
        limit: i64,
        budget_cut: bool,
        mode: ArmMode,
        started: std::time::Instant,
    ) -> Self {
        let v = match budget_cut {
            true => Verdict::BudgetCut,
            false => verdict(candidates.len(), limit),
        };
        Self::new(candidates, limit, v, Some(mode), ms_since(started))
    }

    fn new(
        candidates: Vec<(String, f64)>,
        limit: i64,
        verdict: Verdict,
        mode: Option<ArmMode>,
        ms: f64,
    ) -> Self {
        ArmResult {
            returned: candidates.len(),
            candidates,
            limit,
            verdict,
            mode,
            eligible_estimate: None,
            held_by_a_negated_word: None,
            identifier_family: None,
            domain_walks: None,
            domains_not_walked: None,
            walks_connection: None,
            family_connection: None,
            half_connection: None,
            matched_codes: None,
            read_chars: None,
            price_checked_on_rows: None,
            prescored_matches: None,
            connection: None,
            pool: None,
            catalog_rows: None,
            catalog_domains: None,
            family_on_walks: false,
            ms,
        }
    }
}

/// Applies the arms' session settings for the current transaction only
/// (`set_config(..., true)` is `SET LOCAL`; outside a transaction it would
/// do nothing): HNSW `ef_search`, iterative scans with relaxed order and
/// their tuple budget, the trigram similarity floor and the statement
/// timeout; and `synchronize_seqscans` off.
///
/// A scan budget keeps the first matches a scan returns. A bitmap scan
/// returns them in the table's physical order; a sequential scan (the
/// planner's choice for a back-off step whose terms most documents hold,
/// at a million products) starts where the last scan of the table
/// reported being (where its `LIMIT` stopped it, or where a concurrent
/// scan is), once the table is larger than a quarter of `shared_buffers`:
/// the same search would then rank other matches on every run (measured at
/// 1M, the lexical arm's any-term step of a six-term query: four runs one
/// after another, four different top-120 lists). Off, every sequential
/// scan starts at the table's first block, and a budget cuts the same
/// matches on every run, whatever else is running.
pub async fn apply_settings<C: GenericClient>(
    tx: &C,
    profile: &RetrievalProfile,
) -> Result<(), tokio_postgres::Error> {
    let text = |v: &dyn std::fmt::Display| v.to_string();
    let (ef, tuples, floor, timeout) = (
        text(&profile.hnsw_ef_search),
        text(&profile.hnsw_max_scan_tuples),
        text(&profile.trigram_floor),
        text(&profile.statement_timeout_ms),
    );
    tx.execute_typed(
        "SELECT set_config('hnsw.ef_search', $1, true), set_config('hnsw.iterative_scan', 'relaxed_order', true),
                set_config('hnsw.max_scan_tuples', $2, true),
                set_config('pg_trgm.word_similarity_threshold', $3, true),
                set_config('statement_timeout', $4, true),
                set_config('synchronize_seqscans', 'off', true)",
        &[
            (&ef, Type::TEXT),
            (&tuples, Type::TEXT),
            (&floor, Type::TEXT),
            (&timeout, Type::TEXT),
        ],
    )
    .await?;
    Ok(())
}

/// An attribute filter in the projection's form (migration 0011): every
/// value as a one-item list, so that `attributes @> $9` holds when the
/// product's value equals it or its list contains it.
fn attribute_sets(want: &serde_json::Map<String, serde_json::Value>) -> serde_json::Value {
    want.iter()
        .map(|(k, v)| (k.clone(), serde_json::Value::Array(vec![v.clone()])))
        .collect::<serde_json::Map<_, _>>()
        .into()
}

/// Whether a query can be about a product's identity (brand, model, SKU,
/// title words), which is all the trigram arm matches: at most three words,
/// or a word that mixes letters and digits (a model or SKU, perhaps
/// misspelt). A longer query of plain words describes a need; the trigram
/// arm has nothing to match it against and would only add look-alike noise.
pub fn identity_query(q: &str) -> bool {
    let words: Vec<&str> = q.split_whitespace().collect();
    words.len() <= 3 || words.iter().any(|w| super::understand::is_identifier(w))
}

/// Bound parameters $1..$10 of the eligibility predicate.
#[derive(Clone)]
pub struct Eligibility {
    domain: Option<String>,
    category_key: Option<String>,
    brand: Option<String>,
    availability: Option<Vec<String>>,
    in_stock_only: bool,
    min_price: Option<i64>,
    max_price: Option<i64>,
    min_rating: Option<f32>,
    attributes: Option<serde_json::Value>,
    /// The negated words as one alternation ([`negated_pattern`]), the
    /// one element of the predicate's `$10`.
    negated: Option<Vec<String>>,
    /// Those of the negated words the catalog's vocabulary can hold
    /// (letters only), lower case: the semantic arm's probe looks up how
    /// many products hold them. Never part of the predicate.
    negated_vocabulary: Option<Vec<String>>,
    /// The price filter's estimated share of the catalog, when known: it
    /// chooses how the lexical arm's statements check the price
    /// ([`PriceShare::checks_rows`]). Never part of the predicate.
    price_share: Option<PriceShare>,
}

/// The negated terms (`-word`, as [`lexical_terms`] keeps them: letters,
/// digits, `-` and `.`) as one alternation, `(?:wired|v2\.1)`, which the
/// predicate matches as a whole word, case aside: a row is excluded when
/// any of the words stands in its text. One expression reads each row's
/// text once, where one a word read it once per word (2.5–3.3x less time
/// for ten words, the same for one; BENCHMARKS.md, "Negated words").
pub(crate) fn negated_pattern(negated: &[String]) -> String {
    let mut words: Vec<String> = Vec::with_capacity(negated.len());
    for n in negated {
        let word = n.trim_start_matches('-').to_lowercase().replace('.', "\\.");
        if !words.contains(&word) {
            words.push(word);
        }
    }
    format!("(?:{})", words.join("|"))
}

/// The negated terms (as [`lexical_terms`] keeps them) that the catalog's
/// vocabulary can hold, lower case, each once: words of letters alone
/// (`search.vocabulary_words`). A word with a digit, `-` or `.` is left
/// out: the vocabulary holds none.
fn vocabulary_words(negated: &[String]) -> Vec<String> {
    let mut words: Vec<String> = Vec::with_capacity(negated.len());
    for n in negated {
        let word = n.trim_start_matches('-').to_lowercase();
        if word.chars().all(char::is_alphabetic) && !words.contains(&word) {
            words.push(word);
        }
    }
    words
}

impl Eligibility {
    /// The filters alone (no query text).
    pub fn new(f: &Filters) -> Self {
        Self::with_query(f, None)
    }

    /// The filters plus the query's negated terms, which every arm excludes.
    pub fn with_query(f: &Filters, query: Option<&str>) -> Self {
        let terms = query.map(lexical_terms).filter(|t| !t.negated.is_empty());
        let negated = terms.as_ref().map(|t| vec![negated_pattern(&t.negated)]);
        let negated_vocabulary = terms
            .map(|t| vocabulary_words(&t.negated))
            .filter(|w| !w.is_empty());
        Eligibility {
            domain: f.domain.clone(),
            category_key: f.category_key.clone(),
            brand: f.brand.clone(),
            availability: f.availability.clone(),
            in_stock_only: f.in_stock_only,
            min_price: f.min_price_cents,
            max_price: f.max_price_cents,
            min_rating: f.min_rating,
            attributes: f.attributes.as_ref().map(attribute_sets),
            negated,
            negated_vocabulary,
            price_share: None,
        }
    }

    /// The negated words the catalog's vocabulary can hold, lower case
    /// (`None`: no such word).
    pub fn negated_vocabulary(&self) -> &Option<Vec<String>> {
        &self.negated_vocabulary
    }

    /// The same filters, with the price filter's estimated share of the
    /// catalog ([`crate::PriceStatsCache::share`]).
    pub fn with_price_share(mut self, share: Option<PriceShare>) -> Self {
        self.price_share = share;
        self
    }

    /// Whether a price filter is set.
    pub fn filters_price(&self) -> bool {
        self.min_price.is_some() || self.max_price.is_some()
    }

    /// Whether a product priced within `held` (lowest, highest; `None`:
    /// unknown) can meet the price filter: false only when the whole range
    /// lies outside it.
    pub fn admits_some_price(&self, (lowest, highest): (Option<i64>, Option<i64>)) -> bool {
        let too_dear = matches!((lowest, self.max_price), (Some(l), Some(m)) if l > m);
        let too_cheap = matches!((highest, self.min_price), (Some(h), Some(m)) if h < m);
        !(too_dear || too_cheap)
    }

    /// `$1..$10` followed by the arm's own parameters.
    pub fn params<'a>(&'a self, extra: &[&'a (dyn ToSql + Sync)]) -> Vec<&'a (dyn ToSql + Sync)> {
        let mut p: Vec<&(dyn ToSql + Sync)> = vec![
            &self.domain,
            &self.category_key,
            &self.brand,
            &self.availability,
            &self.in_stock_only,
            &self.min_price,
            &self.max_price,
            &self.min_rating,
            &self.attributes,
            &self.negated,
        ];
        p.extend_from_slice(extra);
        p
    }

    /// `$1..$10` with their types, followed by the arm's own parameters.
    pub fn typed<'a>(&'a self, extra: &[Typed<'a>]) -> Vec<Typed<'a>> {
        let mut p: Vec<Typed<'a>> = self
            .params(&[])
            .into_iter()
            .zip(ELIGIBILITY_TYPES)
            .collect();
        p.extend_from_slice(extra);
        p
    }
}

pub(crate) fn ms_since(t: std::time::Instant) -> f64 {
    (t.elapsed().as_secs_f64() * 1000.0 * 100.0).round() / 100.0
}

fn verdict(returned: usize, limit: i64) -> Verdict {
    if returned as i64 >= limit {
        Verdict::Full
    } else {
        Verdict::Exhausted
    }
}

/// The arms' candidate order: score descending, ties by product id.
fn best_first(a: &(String, f64), b: &(String, f64)) -> std::cmp::Ordering {
    b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0))
}

/// Eligible products whose SKU or model equals the query (normalised).
pub async fn exact_identifier<C: GenericClient>(
    db: &C,
    elig: &Eligibility,
    query: &str,
) -> Result<Vec<String>, tokio_postgres::Error> {
    let key = crate::catalog::load::identifier_key(query);
    if key.len() < 3 {
        return Ok(Vec::new());
    }
    product_ids(db, EXACT_IDENTIFIER_SQL, elig, (&key, Type::TEXT)).await
}

/// Eligible products in deterministic order, for filter-only requests.
pub async fn metadata_only<C: GenericClient>(
    db: &C,
    elig: &Eligibility,
    pool: i64,
) -> Result<Vec<String>, tokio_postgres::Error> {
    product_ids(db, METADATA_ONLY_SQL, elig, (&pool, Type::INT8)).await
}

/// Which of `ids` pass the eligibility predicate now, in id order (a replay
/// asks it of the recorded pool, [`crate::replay`]).
pub async fn eligible_among<C: GenericClient>(
    db: &C,
    elig: &Eligibility,
    ids: &[String],
) -> Result<Vec<String>, tokio_postgres::Error> {
    product_ids(db, ELIGIBLE_AMONG_SQL, elig, (&ids, Type::TEXT_ARRAY)).await
}

/// An arm statement's rows as candidates: the product id (first column)
/// and its score (second).
pub fn scored(rows: &[tokio_postgres::Row]) -> Vec<(String, f64)> {
    rows.iter().map(|r| (r.get(0), r.get(1))).collect()
}

/// The exact route's rows (`SEMANTIC_EXACT_SQL`: the product id and the
/// cosine distance it sorts by) as candidates, each scored `1 - distance`:
/// the same double the other semantic statements compute in SQL.
pub fn scored_by_distance(rows: &[tokio_postgres::Row]) -> Vec<(String, f64)> {
    rows.iter()
        .map(|r| (r.get(0), 1.0 - r.get::<_, f64>(1)))
        .collect()
}

/// The first column of a statement that takes the eligibility parameters
/// and one more (`$11`).
async fn product_ids<C: GenericClient>(
    db: &C,
    sql: &str,
    elig: &Eligibility,
    extra: Typed<'_>,
) -> Result<Vec<String>, tokio_postgres::Error> {
    let rows = db.query_typed(sql, &elig.typed(&[extra])).await?;
    Ok(rows.iter().map(|r| r.get(0)).collect())
}

#[cfg(test)]
mod tests {
    use super::lexical::LEXICAL_PRICE_ON_ROWS;
    use super::*;

    #[test]
    fn only_queries_that_can_name_an_identity_go_to_the_trigram_arm() {
        assert!(identity_query("kshp 1040"));
        assert!(identity_query("wired headphones"));
        assert!(identity_query("Basecamp Co BCBH-1707 Pro"));
        assert!(identity_query(
            "ultrawide moniter with usb c charging for my laptop ZX9"
        ));
        assert!(!identity_query(
            "something to keep drinks cold on a long hike"
        ));
        assert!(!identity_query("hedphones with a 5 year warrenty"));
    }

    #[test]
    fn negated_words_make_one_alternation() {
        let terms = lexical_terms("kettle -Wired -v2.1 -wired -max-cushion");
        assert_eq!(
            negated_pattern(&terms.negated),
            r"(?:wired|v2\.1|max-cushion)"
        );
        let elig = Eligibility::with_query(&Filters::default(), Some("kettle -wired"));
        assert_eq!(elig.negated, Some(vec!["(?:wired)".to_string()]));
        assert!(Eligibility::with_query(&Filters::default(), Some("kettle"))
            .negated
            .is_none());
    }

    #[test]
    fn the_vocabulary_is_asked_only_for_negated_words_of_letters() {
        let elig = Eligibility::with_query(
            &Filters::default(),
            Some("kettle -Wired -v2.1 -wired -max-cushion -Küche"),
        );
        assert_eq!(
            elig.negated_vocabulary(),
            &Some(vec!["wired".to_string(), "küche".to_string()])
        );
        let codes = Eligibility::with_query(&Filters::default(), Some("kettle -v2 -wi-fi"));
        assert!(codes.negated.is_some());
        assert_eq!(codes.negated_vocabulary(), &None);
    }

    #[test]
    fn every_arm_carries_the_whole_eligibility_predicate() {
        let start = ELIGIBILITY_SQL
            .find("      -- eligibility")
            .expect("marker");
        let block = ELIGIBILITY_SQL[start..].trim_end().trim_end_matches(';');
        let on_rows = price_on_rows(block);
        for (name, sql) in [
            ("lexical", LEXICAL_SQL),
            ("lexical_relaxed", LEXICAL_RELAXED_SQL),
            ("lexical, price on rows", &LEXICAL_PRICE_ON_ROWS[0]),
            ("lexical_relaxed, price on rows", &LEXICAL_PRICE_ON_ROWS[1]),
            ("trigram", TRIGRAM_SQL),
            ("eligible_count", ELIGIBLE_COUNT_SQL),
            ("eligible_count_negated", ELIGIBLE_COUNT_NEGATED_SQL),
            ("semantic_exact", SEMANTIC_EXACT_SQL),
            ("semantic_hnsw", SEMANTIC_HNSW_SQL),
            ("semantic_family", SEMANTIC_FAMILY_SQL),
            ("exact_identifier", EXACT_IDENTIFIER_SQL),
            ("metadata_only", METADATA_ONLY_SQL),
            ("eligible_among", ELIGIBLE_AMONG_SQL),
            ("hydrate", HYDRATE_SQL),
        ] {
            let block = match name.ends_with("price on rows") {
                true => on_rows.as_str(),
                false => block,
            };
            // Comments may name a LIMIT; only the statement's own count.
            let (sql, block) = (without_comments(sql), without_comments(block));
            let at = sql
                .find(&block)
                .unwrap_or_else(|| panic!("{name} lacks the eligibility predicate"));
            // Hydration reads the pool by id, without a LIMIT; every other
            // statement has one, and the predicate comes before the last,
            // the one that bounds its result. (An earlier LIMIT is a scan
            // budget: it bounds the rows read, as `hnsw.max_scan_tuples`
            // bounds a walk, and the predicate then filters those rows.)
            match (name, sql.rfind("LIMIT")) {
                ("hydrate", limit) => assert_eq!(limit, None, "hydrate has no LIMIT"),
                (_, Some(limit)) => assert!(
                    at < limit,
                    "{name}: eligibility must come before the result's LIMIT"
                ),
                (_, None) => panic!("{name} has no LIMIT"),
            }
        }
    }

    /// `sql` without its `--` comments.
    fn without_comments(sql: &str) -> String {
        sql.lines()
            .map(|l| l.split_once("--").map_or(l, |(code, _)| code))
            .collect::<Vec<_>>()
            .join("\n")
    }

    #[test]
    fn the_limit_check_reads_code_not_comments() {
        let sql = "SELECT 1 -- before any LIMIT\nFROM t\nWHERE x";
        assert_eq!(without_comments(sql).find("LIMIT"), None);
        assert!(without_comments("SELECT 1 LIMIT 3 -- x").contains("LIMIT 3"));
    }

    #[test]
    fn the_declared_eligibility_types_are_the_predicates_casts() {
        // Every `$n::type` of the predicate, in the SQL's own spelling.
        let cast = |n: usize| {
            let at = ELIGIBILITY_SQL
                .find(&format!("${n}::"))
                .unwrap_or_else(|| panic!("${n} has no cast"));
            let rest = &ELIGIBILITY_SQL[at + format!("${n}::").len()..];
            let end = rest
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '[' || c == ']'))
                .unwrap_or(rest.len());
            rest[..end].to_string()
        };
        let names = [
            (Type::TEXT, "text"),
            (Type::TEXT_ARRAY, "text[]"),
            (Type::BOOL, "boolean"),
            (Type::INT8, "bigint"),
            (Type::FLOAT4, "real"),
            (Type::JSONB, "jsonb"),
        ];
        let spelled = |t: &Type| names.iter().find(|(k, _)| k == t).map_or("?", |(_, n)| n);
        for (i, t) in ELIGIBILITY_TYPES.iter().enumerate() {
            assert_eq!(spelled(t), cast(i + 1), "${}", i + 1);
        }
    }
}
