//! The three candidate arms and the two non-hybrid strategies' queries.
//!
//! Each arm is one SQL file in `sql/` with the shared eligibility predicate
//! inside its WHERE clause, so no filter is ever simulated by discarding rows
//! after a LIMIT. Each arm reports how complete its answer is:
//!
//! * `full`: it returned its limit;
//! * `exhausted`: fewer eligible matches exist than its limit;
//! * `budget_cut`: a scan budget stopped it before it could know.

use super::fusion::Arm;
use super::request::Filters;
use super::trgm::WordSimilarity;
use crate::profile::RetrievalProfile;
use pgvector::Vector;
use serde::Serialize;
use tokio_postgres::types::{Kind, ToSql, Type};
use tokio_postgres::GenericClient;

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

pub const ELIGIBILITY_SQL: &str = include_str!("sql/eligibility.sql");
pub const LEXICAL_SQL: &str = include_str!("sql/lexical.sql");
pub const LEXICAL_RELAXED_SQL: &str = include_str!("sql/lexical_relaxed.sql");
pub const LEXICAL_TERMS_SQL: &str = include_str!("sql/lexical_terms.sql");
pub const TRIGRAM_SQL: &str = include_str!("sql/trigram.sql");
pub const ELIGIBLE_COUNT_SQL: &str = include_str!("sql/eligible_count.sql");
pub const SEMANTIC_EXACT_SQL: &str = include_str!("sql/semantic_exact.sql");
pub const SEMANTIC_HNSW_SQL: &str = include_str!("sql/semantic_hnsw.sql");
pub const DOMAINS_SQL: &str = include_str!("sql/domains.sql");
pub const NEAR_DOMAIN_SQL: &str = include_str!("sql/near_domain.sql");
pub const SEMANTIC_FAMILY_SQL: &str = include_str!("sql/semantic_family.sql");
pub const EXACT_IDENTIFIER_SQL: &str = include_str!("sql/exact_identifier.sql");
pub const METADATA_ONLY_SQL: &str = include_str!("sql/metadata_only.sql");
pub const ELIGIBLE_AMONG_SQL: &str = include_str!("sql/eligible_among.sql");
pub const PRICE_STATS_SQL: &str = include_str!("sql/price_stats.sql");

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
        ArmResult {
            candidates: Vec::new(),
            returned: 0,
            limit,
            verdict: Verdict::Skipped,
            mode: Some(ArmMode::Skipped(why)),
            eligible_estimate: None,
            identifier_family: None,
            domain_walks: None,
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
            family_on_walks: false,
            ms: 0.0,
        }
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
            identifier_family: None,
            domain_walks: None,
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
    negated: Option<Vec<String>>,
    /// The price filter's estimated share of the catalog, when known: it
    /// chooses how the lexical arm's statements check the price
    /// ([`PriceShare::checks_rows`]). Never part of the predicate.
    price_share: Option<PriceShare>,
}

impl Eligibility {
    /// The filters alone (no query text).
    pub fn new(f: &Filters) -> Self {
        Self::with_query(f, None)
    }

    /// The filters plus the query's negated terms, which every arm excludes.
    pub fn with_query(f: &Filters, query: Option<&str>) -> Self {
        // Words only (letters, digits, '-' and '.'), with '.' escaped: the
        // SQL matches them as whole words with a regular expression.
        let negated = query
            .map(lexical_terms)
            .filter(|t| !t.negated.is_empty())
            .map(|t| {
                t.negated
                    .iter()
                    .map(|n| n.trim_start_matches('-').to_lowercase().replace('.', "\\."))
                    .collect::<Vec<String>>()
            });
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
            price_share: None,
        }
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

/// The query split for the lexical back-off: substantive positive terms and
/// negated terms (`-word`), which stay excluded in every step.
#[derive(Debug, Clone, PartialEq)]
pub struct LexicalTerms {
    pub positive: Vec<String>,
    pub negated: Vec<String>,
}

pub fn lexical_terms(query: &str) -> LexicalTerms {
    let mut positive = Vec::new();
    let mut negated = Vec::new();
    for raw in query.split_whitespace() {
        let (neg, word) = match raw.strip_prefix('-') {
            Some(w) if !w.is_empty() => (true, w),
            _ => (false, raw),
        };
        let cleaned: String = word
            .chars()
            .filter(|c| c.is_alphanumeric() || *c == '-' || *c == '.')
            .collect();
        let cleaned = cleaned.trim_matches(|c| c == '-' || c == '.').to_string();
        if cleaned.is_empty() || (!neg && cleaned.eq_ignore_ascii_case("or")) {
            continue;
        }
        if neg {
            negated.push(format!("-{cleaned}"));
        } else {
            positive.push(cleaned);
        }
    }
    LexicalTerms { positive, negated }
}

/// The relaxed steps' required counts of the `m` informative terms, most
/// first: all of them (only when `all_first`: other terms were set aside,
/// so the strict query was not this one), all but one, half, any one
/// (repeats dropped). A level whose tsquery would need more than
/// [`MAX_COMBINATIONS`] combinations is left out.
pub fn relaxed_levels(m: usize, all_first: bool) -> Vec<usize> {
    let mut levels: Vec<usize> = Vec::with_capacity(4);
    let first = if all_first { m } else { m.saturating_sub(1) };
    for k in [first, m.saturating_sub(1), m.div_ceil(2), 1] {
        let fits = combinations(m, k) <= MAX_COMBINATIONS;
        let below = k < m || (all_first && k == m);
        if k >= 1 && below && fits && levels.last().is_none_or(|last| k < *last) {
            levels.push(k);
        }
    }
    levels
}

/// The most k-term combinations one relaxed step may stand for (its
/// tsquery, factored, is smaller, but grows with them).
pub const MAX_COMBINATIONS: usize = 200;

fn combinations(n: usize, k: usize) -> usize {
    if k > n {
        return 0;
    }
    (1..=k.min(n - k)).fold(1usize, |acc, i| acc.saturating_mul(n + 1 - i) / i)
}

/// The tsquery (text) of the documents holding at least `k` of `terms`
/// (each a term's own tsquery text, as PostgreSQL printed it); empty when
/// `k` is 0 or more than there are terms.
///
/// Written factored, "(a & at least k-1 of the rest) | at least k of the
/// rest", rather than as the disjunction of every k-term combination: the
/// same documents, but the GIN scan evaluates the query for every document
/// holding any of the terms, and the factored form is about half the size,
/// and a document that lacks a term skips every branch that needs it. At
/// 100k products, "at least 4 of 7" under a domain filter took 18-25 ms as
/// 35 combinations and 8-9 ms factored (BENCHMARKS.md, "The lexical
/// back-off's steps, factored").
pub fn at_least(terms: &[String], k: usize) -> String {
    let n = terms.len();
    if k == 0 || k > n {
        return String::new();
    }
    let each = |ts: &[String]| -> Vec<String> { ts.iter().map(|t| format!("({t})")).collect() };
    if k == n {
        return format!("({})", each(terms).join(" & "));
    }
    if k == 1 {
        return format!("({})", each(terms).join(" | "));
    }
    let (first, rest) = (&terms[0], &terms[1..]);
    format!(
        "((({first}) & {}) | {})",
        at_least(rest, k - 1),
        at_least(rest, k)
    )
}

/// A price filter's estimated share of the catalog and the catalog's rows,
/// from the planner's statistics ([`PriceStats`]).
///
/// Under a price filter the planner ANDs the price index's bitmap into each
/// lexical step: it reads the index entry of every product in the range to
/// save fetching the text matches that lie outside it. Its cost model
/// leaves out the step's scoring budget: a step stops after `budget`
/// eligible matches, about `budget / share` fetched documents when the
/// price checks each one on its row, against `share * rows` index entries
/// for the bitmap. Under a broad range over a large catalog the bitmap is
/// the dearer (a million products, the cheaper half: 2-3x), under a narrow
/// band the row checks are (4-6x at 2% of the catalog). [`checks_rows`](Self::checks_rows)
/// compares the two, and the lexical arm then writes the price conditions
/// so that no index serves them ([`price_on_rows`]). A search reads the
/// share from the statistics its context keeps
/// ([`crate::PriceStatsCache::share`]). Both plans read the
/// matches in the table's physical order, so each step keeps the same
/// matches either way: only the time changes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PriceShare {
    /// The share of the catalog the price range admits, 0 to 1.
    pub share: f64,
    /// The catalog's rows, as the planner counts them.
    pub rows: f64,
}

/// How many index entries of the price bitmap cost as much as one fetched
/// document whose price is checked on its row. See [`PriceShare`]. Set
/// from where the two ways cost the same (BENCHMARKS.md, "A broad price
/// filter in the lexical arm"): at a million products, four lexical steps
/// under a maximum price admitting 2% to 50% of the catalog broke even
/// between 10% and 15% (this factor: 14%); at 100,000 products between
/// 20% and 50% (this factor: 45%).
pub const PRICE_ENTRIES_PER_ROW_CHECK: f64 = 10.0;

impl PriceShare {
    /// The fewest catalog rows at which [`checks_rows`](Self::checks_rows)
    /// can hold for `budget` (a range admitting the whole catalog).
    pub fn least_rows(budget: i64) -> i64 {
        (PRICE_ENTRIES_PER_ROW_CHECK * budget.max(1) as f64) as i64
    }

    /// Whether checking the price on each fetched match (at most
    /// `budget / share` of them for a step) costs less than the price
    /// index's bitmap (`share * rows` entries).
    pub fn checks_rows(&self, budget: i64) -> bool {
        let fetched = budget.max(1) as f64 / self.share.max(f64::MIN_POSITIVE);
        self.share * self.rows >= PRICE_ENTRIES_PER_ROW_CHECK * fetched
    }
}

/// The price column's statistics, as ANALYZE left them
/// (`sql/price_stats.sql`): a price range's share of the catalog is
/// estimated from them as the planner would, without a statement per
/// search.
#[derive(Clone, Debug, PartialEq)]
pub struct PriceStats {
    /// The share of products without a price.
    pub null_frac: f64,
    /// The most common prices and the share of products at each.
    pub common: Vec<(i64, f64)>,
    /// The histogram's bounds over the other prices, lowest first: equal
    /// shares of them between neighbouring bounds.
    pub bounds: Vec<i64>,
    /// The catalog's rows, as the planner counts them.
    pub rows: f64,
}

impl PriceStats {
    /// Reads the statistics; `None` when the column has none yet (a
    /// catalog never analysed).
    pub async fn read<C: GenericClient>(
        db: &C,
    ) -> Result<Option<PriceStats>, tokio_postgres::Error> {
        let row = db.query_typed_one(PRICE_STATS_SQL, &[]).await?;
        let Some(null_frac) = row.get::<_, Option<f64>>(0) else {
            return Ok(None);
        };
        let prices: Vec<i64> = row.get::<_, Option<Vec<i64>>>(1).unwrap_or_default();
        let freqs: Vec<f64> = row.get::<_, Option<Vec<f64>>>(2).unwrap_or_default();
        Ok(Some(PriceStats {
            null_frac,
            common: prices.into_iter().zip(freqs).collect(),
            bounds: row.get::<_, Option<Vec<i64>>>(3).unwrap_or_default(),
            rows: row.get(4),
        }))
    }

    /// `elig`'s price range's share of the catalog: the common prices'
    /// shares within it, plus the other prices' share times the share of
    /// the histogram's bounds within it (within a bucket of the histogram,
    /// 1% of the rest at the default statistics target).
    pub fn share(&self, elig: &Eligibility) -> PriceShare {
        let within =
            |p: i64| elig.min_price.is_none_or(|m| p >= m) && elig.max_price.is_none_or(|m| p <= m);
        let common: f64 = self
            .common
            .iter()
            .filter(|(p, _)| within(*p))
            .map(|(_, f)| f)
            .sum();
        let rest = 1.0 - self.null_frac - self.common.iter().map(|(_, f)| f).sum::<f64>();
        let hist = match self.bounds.len() {
            0 => 0.0,
            n => self.bounds.iter().filter(|p| within(**p)).count() as f64 / n as f64,
        };
        PriceShare {
            share: (common + rest.max(0.0) * hist).clamp(0.0, 1.0),
            rows: self.rows,
        }
    }
}

/// `sql` with the eligibility predicate's price conditions written so that
/// no index serves them (`pp.price_cents + 0`): the same conditions,
/// checked on each row the statement's other conditions fetch.
pub fn price_on_rows(sql: &str) -> String {
    sql.replace("pp.price_cents >= $6", "pp.price_cents + 0 >= $6")
        .replace("pp.price_cents <= $7", "pp.price_cents + 0 <= $7")
}

/// The lexical statements (strict, relaxed) with the price checked on the
/// rows ([`price_on_rows`]).
static LEXICAL_PRICE_ON_ROWS: std::sync::LazyLock<[String; 2]> = std::sync::LazyLock::new(|| {
    [
        price_on_rows(LEXICAL_SQL),
        price_on_rows(LEXICAL_RELAXED_SQL),
    ]
});

/// Lexical arm: the strict websearch query, then (only when it matches
/// nothing) relaxed steps over the query's informative terms (those some
/// products hold, but not more than half of them: past half a term's BM25
/// weight is nil, "easy" in a catalog of easy-to-use things), until the
/// matches reach `lexical_enough`: the documents holding all of them, all
/// but one, half of them, any one; then, if still short, any one of every
/// term the catalog holds (the back-off of old). Each step is a tsquery the
/// GIN index answers, so only documents holding enough of the query are
/// fetched (at most `lexical_scan_budget` of them) and ranked by
/// `ts_rank_cd` against any term (in a step any one term satisfies, past
/// `lexical_rank_budget` matches, `ts_rank` chooses which are ranked). A
/// stricter step's rows stay ahead of a looser step's.
pub async fn lexical<C: GenericClient>(
    db: &C,
    elig: &Eligibility,
    query: &str,
    profile: &RetrievalProfile,
) -> Result<ArmResult, tokio_postgres::Error> {
    lexical_understood(db, elig, query, query, profile).await
}

/// The lexical arm for a query that query understanding corrected: the
/// strict step searches for the corrected `query`, and the relaxed steps,
/// when it matches nothing, take their terms from the query `as_written`,
/// where a misspelt word matches nothing and so drops out of every step. A
/// correction is trusted when the corrected query matches as a whole;
/// otherwise no corrected word outweighs the caller's own. Where `elig`
/// carries its price filter's share of the catalog and that share makes
/// the price index's bitmap the dearer way, every step checks the price on
/// its matches' rows ([`PriceShare::checks_rows`]).
pub async fn lexical_understood<C: GenericClient>(
    db: &C,
    elig: &Eligibility,
    query: &str,
    as_written: &str,
    profile: &RetrievalProfile,
) -> Result<ArmResult, tokio_postgres::Error> {
    let t = std::time::Instant::now();
    let budget = profile.lexical_scan_budget;
    let limit = profile.lexical_limit;
    let rank_budget = profile.lexical_rank_budget;
    let on_rows = elig.price_share.is_some_and(|s| s.checks_rows(budget));
    let (strict_sql, relaxed_sql): (&'static str, &'static str) = match on_rows {
        true => (&LEXICAL_PRICE_ON_ROWS[0], &LEXICAL_PRICE_ON_ROWS[1]),
        false => (LEXICAL_SQL, LEXICAL_RELAXED_SQL),
    };
    // A relaxed step also takes its ranking budget and the terms it ranks
    // against.
    let run = |sql: &'static str, text: String, relaxed: Option<(i64, Vec<String>)>| async move {
        let mut extra: Vec<Typed> = vec![
            (&text, Type::TEXT),
            (&budget, Type::INT8),
            (&limit, Type::INT8),
        ];
        if let Some((bound, terms)) = relaxed.as_ref() {
            extra.push((bound, Type::INT8));
            extra.push((terms, Type::TEXT_ARRAY));
        }
        let rows = db.query_typed(sql, &elig.typed(&extra)).await?;
        let matched: i64 = rows.first().map_or(0, |r| r.get(2));
        Ok::<_, tokio_postgres::Error>((scored(&rows), matched))
    };
    // Strict: the query as written (websearch syntax: quotes, -negation, or).
    let (mut cands, mut matched) = run(strict_sql, query.to_string(), None).await?;
    let mut most = 0;
    let mut mode = LexicalMode::Strict;
    let positive = lexical_terms(as_written).positive;
    if cands.is_empty() && positive.len() > 1 {
        // Negated terms stay excluded through the eligibility predicate.
        let relax = Relaxation::of(db, &positive, budget, elig).await?;
        let enough = profile.lexical_enough.max(1) as usize;
        for (step_mode, tsquery) in relax.steps() {
            // Only a step any one term satisfies ranks within the budget.
            let any_term = matches!(step_mode, LexicalMode::Backoff { required: 1, .. });
            let bound = if any_term { rank_budget } else { 0 };
            let step = run(relaxed_sql, tsquery, Some((bound, relax.present.clone())));
            let (step, step_matched) = step.await?;
            for c in step {
                if !cands.iter().any(|(id, _)| *id == c.0) {
                    cands.push(c);
                }
            }
            cands.truncate(limit.max(0) as usize);
            matched = step_matched;
            if bound > 0 {
                most = most.max(step_matched);
            }
            mode = step_mode;
            if cands.len() >= enough {
                break;
            }
        }
    }
    // At the budget, only the first `budget` matches were ranked.
    let cut = matched >= budget;
    let mut result = ArmResult::ranked(cands, limit, cut, ArmMode::Lexical(mode), t);
    result.price_checked_on_rows = on_rows.then_some(true);
    result.prescored_matches = (rank_budget > 0 && most > rank_budget).then_some(most);
    Ok(result)
}

/// A term's tsquery text in a relaxed step when no product the filters
/// admit holds the term (by its holders' prices and domains), followed by
/// the term's place in the query ("'no eligible holder 2'"): a lexeme with
/// spaces, which no document holds (the parser splits words at spaces), so
/// the GIN index answers it from one empty entry; each term keeps a text of
/// its own, as the steps tell terms apart by their text.
pub const NO_ELIGIBLE_HOLDER: &str = "no eligible holder";

/// The terms the lexical arm's relaxed steps work with, each as its own
/// tsquery text (stop words dropped, repeats once).
#[derive(Debug, Clone, PartialEq)]
pub struct Relaxation {
    /// Terms some products hold, at most half of them.
    pub informative: Vec<String>,
    /// The informative terms that are product-line codes
    /// ([`super::understand::identifier_stem`]: "smsb-1504", not "4k" or
    /// "ip67").
    pub codes: Vec<String>,
    /// The informative terms fewer products hold than the arm's scan
    /// budget (`lexical_scan_budget`): a step over one of them alone ranks
    /// every match rather than the first the index returns.
    pub narrow: Vec<String>,
    /// Terms some products hold.
    pub present: Vec<String>,
    /// Every term with a lexeme.
    pub terms: usize,
}

impl Relaxation {
    /// Reads the terms' product counts from the catalog statistics;
    /// `budget` is the arm's scan budget (`lexical_scan_budget`).
    ///
    /// A term that no product `elig`'s price range admits holds (its
    /// holders' price bounds, migration 0022), or none of whose holders
    /// lies in `elig`'s domain (its holders' domains, migration 0025),
    /// stands in every step as a [`NO_ELIGIBLE_HOLDER`] lexeme, which no
    /// document holds: the steps, their order and their modes are those of
    /// the catalog's counts, and each step matches the same eligible
    /// products, but the index no longer reads the term's holders only to
    /// find each one too dear or in another domain, and a step that needs
    /// more terms than the eligible products hold ends at the stand-ins'
    /// empty entries.
    pub async fn of<C: GenericClient>(
        db: &C,
        positive: &[String],
        budget: i64,
        elig: &Eligibility,
    ) -> Result<Relaxation, tokio_postgres::Error> {
        let rows = db
            .query_typed(
                LEXICAL_TERMS_SQL,
                &[(&positive, Type::TEXT_ARRAY), (&elig.domain, Type::TEXT)],
            )
            .await?;
        struct Term {
            query: String,
            products: i64,
            informative: bool,
            code: bool,
            held_eligible: bool,
        }
        let mut terms: Vec<Term> = Vec::new();
        for r in rows {
            let word: String = r.get(0);
            let query: String = r.get(1);
            let (products, catalog): (i64, i64) = (r.get(2), r.get(3));
            let held = (r.get::<_, Option<i64>>(4), r.get::<_, Option<i64>>(5));
            let in_domain: bool = r.get(6);
            if !query.is_empty() && !terms.iter().any(|t| t.query == query) {
                terms.push(Term {
                    query,
                    products,
                    informative: products > 0 && products * 2 <= catalog,
                    code: super::understand::identifier_stem(&word).is_some(),
                    held_eligible: elig.admits_some_price(held) && in_domain,
                });
            }
        }
        let pick = |keep: &dyn Fn(&Term) -> bool| -> Vec<String> {
            // A term's place in `terms` numbers its stand-in.
            terms
                .iter()
                .enumerate()
                .filter(|(_, t)| keep(t))
                .map(|(place, t)| match t.held_eligible {
                    true => t.query.clone(),
                    false => format!("'{NO_ELIGIBLE_HOLDER} {place}'"),
                })
                .collect()
        };
        Ok(Relaxation {
            informative: pick(&|t| t.informative),
            codes: pick(&|t| t.informative && t.code),
            narrow: pick(&|t| t.informative && t.products < budget),
            present: pick(&|t| t.products > 0),
            terms: terms.len(),
        })
    }

    /// The steps in order: each step's mode and tsquery.
    ///
    /// Without a product-line code: at least k of the informative terms
    /// ([`relaxed_levels`]), then any term the catalog holds.
    ///
    /// A query naming a product-line code the catalog holds is after that
    /// product or its line: the first steps keep the code (any of them,
    /// when it names several) and relax only the other informative terms,
    /// down to the code alone; then, if still short, at least k of the
    /// other terms or the code, two of them at least; then any one of them
    /// (or the code) only among the [`narrow`](Self::narrow) terms. A
    /// word held by more products than the arm ranks is, beside a code,
    /// a variant ("Plus", "Pro": a quarter of a catalog), not what the
    /// query names, and its step would rank only the first products the
    /// index returns: when the code's products are not eligible (a price
    /// filter), the arm returns none rather than thousands that merely say
    /// "Plus". A brand's name, held by a few hundred, still serves.
    pub fn steps(&self) -> Vec<(LexicalMode, String)> {
        let all_first = self.informative.len() < self.terms;
        if !self.codes.is_empty() {
            let code = at_least(&self.codes, 1);
            let others: Vec<String> = self
                .informative
                .iter()
                .filter(|t| !self.codes.contains(t))
                .cloned()
                .collect();
            let of = others.len();
            // With two codes, "any code and every other term" is not the
            // strict query either.
            let all_first = all_first || self.codes.len() > 1;
            let mut steps: Vec<(LexicalMode, String)> = relaxed_levels(of, all_first)
                .into_iter()
                .map(|k| {
                    let mode = LexicalMode::CodeBackoff { required: k, of };
                    (mode, format!("({code} & {})", at_least(&others, k)))
                })
                .collect();
            steps.push((LexicalMode::CodeBackoff { required: 0, of }, code.clone()));
            steps.extend(
                relaxed_levels(of, true)
                    .into_iter()
                    .filter(|k| *k >= 2)
                    .map(|k| {
                        let mode = LexicalMode::Backoff { required: k, of };
                        (mode, format!("({code} | {})", at_least(&others, k)))
                    }),
            );
            let narrow: Vec<String> = others
                .iter()
                .filter(|t| self.narrow.contains(t))
                .cloned()
                .collect();
            if !narrow.is_empty() {
                let mode = LexicalMode::Backoff {
                    required: 1,
                    of: narrow.len(),
                };
                steps.push((mode, format!("({code} | {})", at_least(&narrow, 1))));
            }
            return steps;
        }
        let over = |terms: &[String], k: usize| {
            let mode = LexicalMode::Backoff {
                required: k,
                of: terms.len(),
            };
            (mode, at_least(terms, k))
        };
        let mut steps: Vec<(LexicalMode, String)> =
            relaxed_levels(self.informative.len(), all_first)
                .into_iter()
                .map(|k| over(&self.informative, k))
                .collect();
        if self.present.len() > self.informative.len() {
            steps.push(over(&self.present, 1));
        }
        steps
    }

    /// The tsquery of the step a lexical arm's `mode` names.
    pub fn tsquery(&self, mode: LexicalMode) -> Option<String> {
        self.steps()
            .into_iter()
            .find(|(step, _)| *step == mode)
            .map(|(_, tsquery)| tsquery)
    }
}

/// The word-similarity thresholds of the trigram cascade, strictest first:
/// strict, middle, floor, with repeats dropped (all three equal = one step).
pub fn trigram_steps(profile: &RetrievalProfile) -> Vec<f64> {
    let mut steps: Vec<f64> = Vec::with_capacity(3);
    for th in [
        profile.trigram_strict_threshold,
        profile.trigram_middle_threshold,
        profile.trigram_floor,
    ] {
        if steps.last().is_none_or(|last| th < *last) {
            steps.push(th);
        }
    }
    steps
}

/// The arms' candidate order: score descending, ties by product id.
fn best_first(a: &(String, f64), b: &(String, f64)) -> std::cmp::Ordering {
    b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0))
}

/// Adds one step's rows to the cascade's answer. A later (more relaxed)
/// step's rows are a superset of the earlier ones unless its safety budget
/// cut it, so the union keeps every better match an earlier step found.
fn merge_step(merged: &mut Vec<(String, f64)>, step: Vec<(String, f64)>, limit: i64) {
    for (id, score) in step {
        if !merged.iter().any(|(m, _)| *m == id) {
            merged.push((id, score));
        }
    }
    merged.sort_by(best_first);
    merged.truncate(limit.max(0) as usize);
}

/// One step of the trigram arm at word-similarity threshold `th`, taking
/// at most `budget` matches: its best `trigram_limit` rows (best first,
/// ties by product id) and whether it met the budget. The step matches
/// `find` (the query, or for a relaxed step of a query that names a code,
/// its codes: see [`trigram`]); its rows are scored for `q`, the query, by
/// `scorer` (the query's [`WordSimilarity`], `None` for a query outside
/// ASCII), not in the step's SQL.
async fn trigram_step<C: GenericClient>(
    db: &C,
    elig: &Eligibility,
    (find, q): (&str, &str),
    scorer: Option<&WordSimilarity>,
    th: f64,
    budget: i64,
    profile: &RetrievalProfile,
) -> Result<(Vec<(String, f64)>, bool), tokio_postgres::Error> {
    // The step's threshold (SET LOCAL) and the step: one round trip.
    let th = th.to_string();
    let params = elig.typed(&[(&find, Type::TEXT), (&budget, Type::INT8), (&q, Type::TEXT)]);
    let (_, rows) = tokio::try_join!(
        crate::db::set_local(db, "pg_trgm.word_similarity_threshold", th),
        db.query_typed(TRIGRAM_SQL, &params),
    )?;
    let mut scored: Vec<(String, f64)> = rows
        .iter()
        .map(|r| {
            let sql_score: Option<f64> = r.get(2);
            let score = sql_score
                .or_else(|| Some(f64::from(scorer?.score(r.get(1))?)))
                // Unreachable in a UTF-8 database: the SQL scores every
                // text or query that is not ASCII.
                .unwrap_or(0.0);
            (r.get(0), score)
        })
        .collect();
    scored.sort_by(best_first);
    scored.truncate(profile.trigram_limit.max(0) as usize);
    // At the budget only the first `budget` matches (in physical order) were
    // scored: the step returned the limit, but not known to be the best.
    Ok((scored, rows.len() as i64 >= budget))
}

/// The words pg_trgm takes trigrams of: runs of letters and digits.
fn trigram_words(text: &str) -> Vec<&str> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect()
}

/// Whether a query is long enough for the trigram arm to start at its floor
/// (see [`trigram`]).
fn trigram_long_query(query: &str, profile: &RetrievalProfile) -> bool {
    query.split_whitespace().count() as i64 >= profile.trigram_floor_first_words
}

/// Trigram arm: a threshold cascade. Each step is the full top-`limit`
/// query (eligibility inside, ORDER BY similarity) at one
/// `pg_trgm.word_similarity_threshold`.
///
/// * The cascade runs strictest first and relaxes to the next threshold only
///   while it holds fewer than `trigram_enough` candidates. A strict
///   threshold lets the GIN index drop most candidates before the costly
///   recheck, so a close match (a typo of a brand and model) is served by a
///   cheap step, and only vague queries pay for the floor.
/// * Floor first: a query of `trigram_floor_first_words` words or more, or
///   a request filtered to a category or brand, starts at the floor. Every
///   step pays a GIN scan over all the query's trigrams; a long query (a
///   description) rarely reaches the stricter thresholds (mosaic bench, 100k
///   products: an eight-word description cost 7 + 14 + 18 ms for three empty
///   steps), and a category or brand slice bounds the floor's rechecks
///   (very selective filters at 100k: trigram arm p50 11.3 ms with the
///   cascade, 3.7 ms floor first). When the floor is not budget-cut its
///   answer is complete: every eligible match at the floor, best first,
///   never less than the cascade would serve.
/// * A long query whose floor is budget-cut (the physical-order budget may
///   have missed the closest matches) then runs the stricter steps as in
///   the cascade and merges their rows in. A short query in a slice keeps
///   its cut floor: there the floor of category words matches most of the
///   slice, and the strict step would be cut as well, at twice the cost.
/// * Perfect only (`trigram_spelled_perfect`): a query `spelled` as
///   written (the understanding step found no unknown word and no code,
///   and, unless `trigram_corrected_perfect`, corrected nothing; the arm
///   then searches for the corrected words) takes the perfect step below alone, under
///   any filter, and the arm ends there (`full` when it filled the limit,
///   otherwise `exhausted`). The relaxed thresholds admit texts that hold
///   only part of the query ("running shoes" of "extra-wide running
///   shoes"), which serves a misspelt word or code and, for words spelled
///   right, only votes in fusion for products that lack the query's other
///   words; the lexical arm already matches the words themselves.
/// * Codes alone (`trigram_identifier_steps`): for a query that names a
///   product line's code (`codes`: its identifiers, space-separated, see
///   [`super::understand::Understanding::line_codes`]) the relaxed steps
///   match the codes alone; their rows are still scored for the whole
///   query, so the order among them is the query's. At a relaxed
///   threshold the query's other words ("PXLT-3353 Mini") admit every
///   identity text that shares them and a few digits: thousands of
///   rechecks for rows the lexical arm matches better, and under a filter
///   that excludes the code's own line the step then rechecks them all.
///   The perfect step keeps the whole query; and when the codes alone
///   match nothing down to the floor (a code garbled beyond it), the
///   relaxed steps run again for the whole query, as without the setting.
///   A request filtered to a category or brand keeps the whole query: the
///   slice already bounds its rechecks, and a code's near spellings are
///   seldom in it, so the codes would mostly match nothing and the floor
///   would run twice.
/// * Perfect first (`trigram_perfect_first`): a short query first takes
///   `limit` matches at similarity 1.0, scoring only those. When they fill
///   the limit the arm is done, with the best possible scores: a query of
///   common words ("air fryer") no longer scores a whole budget of matches
///   that all tie at 1.0. Otherwise its rows are kept and the arm goes on as
///   above; a query with no perfect match pays one GIN scan that the 1.0
///   threshold makes cheap (every trigram must be present). A request
///   filtered to a category, brand or domain skips it. A slice's floor is
///   bounded by the slice, and the perfect step's scan is not (very
///   selective filters at 100k: arm p50 9.3 -> 13.8 ms with it). A domain
///   filter can exclude every perfect match ("air fryer" in office
///   products), and the step then rechecks all of them to find none
///   (anti-correlated filters at 100k: arm p95 50.5 -> 60.0 ms with it).
///
/// `mode` is `threshold_<t>`, the threshold that served last; the setting is
/// left at it for the rest of the transaction (no other arm reads it). With
/// `matched_codes` set, the threshold and the verdict are about the codes'
/// similarity, and a row's score (for the whole query) can be lower. The
/// verdict is about that threshold: `exhausted` means fewer eligible matches
/// at `<t>` than the limit, `budget_cut` that a step met the safety budget
/// (`trigram_scan_budget` matches scored, in physical order).
pub async fn trigram<C: GenericClient>(
    db: &C,
    elig: &Eligibility,
    query: &str,
    (spelled, codes): (bool, Option<&str>),
    profile: &RetrievalProfile,
) -> Result<ArmResult, tokio_postgres::Error> {
    let t = std::time::Instant::now();
    let chars = profile.trigram_query_chars;
    let (q, cut_query) = first_chars(&query.to_lowercase(), chars);
    let scorer = WordSimilarity::new(&q);
    let scorer = scorer.as_ref();
    let limit = profile.trigram_limit;
    let enough = profile.trigram_enough.min(limit).max(1) as usize;
    let floor = profile.trigram_floor;
    let mut merged: Vec<(String, f64)> = Vec::new();
    let mut served = floor;
    let mut cut = false;
    let long = trigram_long_query(&q, profile);
    let budget = profile.trigram_scan_budget;
    let slice = elig.category_key.is_some() || elig.brand.is_some();
    // The codes the relaxed steps match first, unless they are all the
    // query's words.
    let (codes, cut_codes) = match codes {
        Some(c) => {
            let (c, cut) = first_chars(&c.to_lowercase(), chars);
            (Some(c), cut)
        }
        None => (None, false),
    };
    let codes = codes.filter(|c| {
        profile.trigram_identifier_steps == 1 && !slice && trigram_words(c) != trigram_words(&q)
    });
    let read_chars = (cut_query || cut_codes).then_some(chars as usize);
    let perfect_only = spelled && profile.trigram_spelled_perfect == 1;
    let perfect_first =
        !long && !slice && elig.domain.is_none() && profile.trigram_perfect_first == 1;
    if perfect_only || perfect_first {
        let (rows, _) = trigram_step(db, elig, (&q, &q), scorer, 1.0, limit, profile).await?;
        if perfect_only || rows.len() as i64 >= limit {
            let v = verdict(rows.len(), limit);
            let mut arm = ArmResult::new(rows, limit, v, Some(ArmMode::Trigram(1.0)), ms_since(t));
            arm.read_chars = read_chars;
            return Ok(arm);
        }
        merged = rows;
    }
    // The relaxed steps match the codes alone first; when those match
    // nothing (a code garbled beyond the floor, "NVS-2039 Plus" of
    // "NVSW-1039 Plus"), the whole query.
    let mut matched_codes = None;
    for text in codes.iter().chain([&q]) {
        let find = (text.as_str(), q.as_str());
        // Whether this pass's own steps matched anything.
        let mut matched = false;
        if long || slice {
            let (rows, floor_cut) =
                trigram_step(db, elig, find, scorer, floor, budget, profile).await?;
            matched |= !rows.is_empty();
            merge_step(&mut merged, rows, limit);
            cut = floor_cut;
            if floor_cut && long {
                for th in trigram_steps(profile).into_iter().filter(|th| *th > floor) {
                    let (rows, step_cut) =
                        trigram_step(db, elig, find, scorer, th, budget, profile).await?;
                    let found = rows.len();
                    matched |= found > 0;
                    merge_step(&mut merged, rows, limit);
                    served = th;
                    if found >= enough || step_cut {
                        break;
                    }
                }
            }
        } else {
            for th in trigram_steps(profile) {
                let (rows, step_cut) =
                    trigram_step(db, elig, find, scorer, th, budget, profile).await?;
                matched |= !rows.is_empty();
                merge_step(&mut merged, rows, limit);
                served = th;
                cut = step_cut;
                // A cut step holds the limit, so the cascade stops at it.
                if merged.len() >= enough || cut {
                    break;
                }
            }
        }
        if matched {
            matched_codes = (*text != q).then(|| text.clone());
            break;
        }
    }
    let mut arm = ArmResult::ranked(merged, limit, cut, ArmMode::Trigram(served), t);
    arm.matched_codes = matched_codes;
    arm.read_chars = read_chars;
    Ok(arm)
}

/// The first `max` characters of `text` (all of it when `max` is 0), and
/// whether that cut anything: whole words while they fit, or the first
/// word's first `max` characters when even it does not. The trigram arm's
/// cost grows with the distinct trigrams of what it matches: every step's
/// GIN scan reads one posting list per trigram and every recheck compares
/// them all, and past a few hundred of them the planner prefers computing
/// the similarity of every row (`trigram_query_chars`).
pub fn first_chars(text: &str, max: i64) -> (String, bool) {
    let max = max.max(0) as usize;
    if max == 0 || text.chars().count() <= max {
        return (text.to_string(), false);
    }
    let mut out = String::new();
    for word in text.split_whitespace() {
        let len = out.chars().count() + usize::from(!out.is_empty()) + word.chars().count();
        if len > max {
            break;
        }
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
    }
    if out.is_empty() {
        out = text.trim_start().chars().take(max).collect();
    }
    (out, true)
}

/// Semantic arm with selectivity routing. Expects the HNSW settings applied
/// with SET LOCAL by the caller from the same `profile`
/// ([`apply_settings`]): the HNSW scans read them, and the statements that
/// change them for one walk set them back to the profile's.
///
/// Under a domain filter the walk is confined to that domain's graph. A
/// query none of whose nearest products (across the catalog) are in that
/// domain lies far from every node of the graph, where a greedy walk
/// settles in the first region it reaches; from
/// `semantic_domain_walk_min_rows` products such a walk returns
/// `semantic_far_domain_overfetch` rows (route `hnsw_long_walk`): past its
/// first candidate list the iterative scan walks on from the nearest
/// nodes it left aside. Where the domain holds at most
/// `semantic_far_exact_max_rows` products by the planner's statistics, the
/// arm scores all of them exactly instead (route `exact_far_domain`), from
/// the index that holds the domains' vectors (migration 0024), in two
/// halves on `walks` and `db`: exact recall, for about what the longest
/// walks cost the database. The check is a short walk of the whole
/// catalog's graph that travels with the selectivity probe.
///
/// `written` is the query as written, without its negated terms: when it
/// carries a model code or SKU with a stem, the HNSW route also scores that
/// code's product line and its brands exactly ([`graph_walks`]).
pub async fn semantic<C: GenericClient>(
    db: &C,
    elig: &Eligibility,
    written: &str,
    vector: &Vector,
    profile: &RetrievalProfile,
) -> Result<ArmResult, tokio_postgres::Error> {
    semantic_on(db, db, elig, written, vector, profile).await
}

/// [`semantic`] with the walks of each domain's graph on `walks`, beside
/// the whole catalog's walk and the code's family on `db`: on another
/// connection (and transaction) they run at the same time, on two cores
/// instead of one after another. When the arm walks no domain's graph (a
/// domain or category filter, a smaller catalog), the code's family goes
/// on `walks` instead, beside the walk. With `walks` the same client as
/// `db`, the statements go out in the same order as [`semantic`]'s.
pub async fn semantic_on<C: GenericClient>(
    db: &C,
    walks: &C,
    elig: &Eligibility,
    written: &str,
    vector: &Vector,
    profile: &RetrievalProfile,
) -> Result<ArmResult, tokio_postgres::Error> {
    let t = std::time::Instant::now();
    let limit = profile.semantic_limit;
    let probe = profile.semantic_exact_threshold + 1;
    // The probe and, when the filters leave every domain open, the domain
    // list go out together: one round trip. Under a domain filter, the
    // check of the query's nearest products goes with them.
    let may_walk_domains = may_walk_domains(elig, profile);
    let may_scan_far = may_scan_far_domain(elig, profile);
    // Only where its answer can change the route: a longer walk, or an
    // exact scan these filters allow.
    let far_check = elig
        .domain
        .as_ref()
        .filter(|_| profile.semantic_far_domain_overfetch > 0 || may_scan_far);
    let probe_params = elig.typed(&[(&probe, Type::INT8)]);
    let near_check = async {
        let Some(domain) = far_check else {
            return Ok(None);
        };
        let params = [
            (vector as &(dyn ToSql + Sync), vector_type()),
            (domain, Type::TEXT),
            (&profile.semantic_far_domain_check_rows, Type::INT8),
            (&profile.semantic_domain_walk_min_rows, Type::INT8),
        ];
        let (_, near, _) = tokio::try_join!(
            set_walk(
                db,
                profile.semantic_far_domain_check_ef,
                profile.hnsw_max_scan_tuples
            ),
            db.query_typed_one(NEAR_DOMAIN_SQL, &params),
            profile_walk(db, profile),
        )?;
        Ok(Some((near.get::<_, i64>(0), near.get::<_, Option<i64>>(1))))
    };
    let (counted, domains, near) = tokio::try_join!(
        db.query_typed_one(ELIGIBLE_COUNT_SQL, &probe_params),
        async {
            match may_walk_domains {
                true => db.query_typed(DOMAINS_SQL, &[]).await,
                false => Ok(Vec::new()),
            }
        },
        near_check,
    )?;
    let (eligible, catalog_rows): (i64, i64) = (counted.get(0), counted.get(1));
    let large = catalog_rows >= profile.semantic_domain_walk_min_rows;
    let domains: Vec<String> = match large {
        true => domains.iter().map(|r| r.get(0)).collect(),
        false => Vec::new(),
    };
    let far = large && near.is_some_and(|(n, _)| n == 0);
    // A far query whose domain is small enough is scored exactly, from the
    // index of the domains' vectors; otherwise its graph is walked longer.
    let far_exact = far
        && may_scan_far
        && near
            .and_then(|(_, rows)| rows)
            .is_some_and(|rows| rows <= profile.semantic_far_exact_max_rows);
    // The exact scan of a far domain, in two halves (by a hash of the
    // product id, which the index holds): the second on `walks`, so that
    // on another connection the two run at the same time, on two cores.
    let far_scan = || async {
        let (mut c, second) = tokio::try_join!(
            exact_scan(db, elig, vector, limit, Some(0)),
            exact_scan(walks, elig, vector, limit, Some(1))
        )?;
        c.extend(second);
        Ok::<_, tokio_postgres::Error>(nearest_once(c, limit))
    };
    let long_walk = far && profile.semantic_far_domain_overfetch > 0;
    let exact = || exact_scan(db, elig, vector, limit, None);
    let (mut family, mut domain_walks, mut family_on_walks) = (None, None, false);
    let (cands, route, v) = if eligible <= profile.semantic_exact_threshold {
        let c = exact().await?;
        let v = verdict(c.len(), limit);
        (c, SemanticRoute::Exact, v)
    } else if far_exact {
        let c = far_scan().await?;
        let v = verdict(c.len(), limit);
        (c, SemanticRoute::ExactFarDomain, v)
    } else {
        let stem = family_stem(written, profile);
        let walked_domains = !domains.is_empty();
        domain_walks = walked_domains.then_some(domains.len());
        let rows = match long_walk {
            true => profile.semantic_far_domain_overfetch,
            false => profile.semantic_overfetch,
        };
        let walked = graph_walks(
            (db, walks),
            elig,
            vector,
            profile,
            rows,
            domains,
            stem.as_deref(),
        )
        .await?;
        let (c, first_walk_filled) = (walked.rows, walked.first_walk_filled);
        family = walked.family;
        family_on_walks = walked.family_on_walks;
        let refilled = match first_walk_filled {
            true => None,
            false => refill(db, elig, vector, profile, c.clone()).await?,
        };
        if let Some(c) = refilled {
            (c, SemanticRoute::HnswUnderfilledThenLongWalk, Verdict::Full)
        } else if !first_walk_filled {
            // The iterative scan hit max_scan_tuples before filling the
            // limit although more than `threshold` rows are eligible:
            // complete the arm with an exact scan rather than underfill.
            let c = exact().await?;
            let v = verdict(c.len(), limit);
            (c, SemanticRoute::HnswUnderfilledThenExact, v)
        } else if walked_domains {
            (c, SemanticRoute::HnswDomainWalks, Verdict::Full)
        } else if long_walk {
            (c, SemanticRoute::HnswLongWalk, Verdict::Full)
        } else {
            (c, SemanticRoute::Hnsw, Verdict::Full)
        }
    };
    let mut arm = ArmResult::new(cands, limit, v, Some(ArmMode::Semantic(route)), ms_since(t));
    arm.eligible_estimate = Some(eligible);
    arm.identifier_family = family;
    arm.family_on_walks = family.is_some() && family_on_walks;
    arm.domain_walks = domain_walks;
    arm.catalog_rows = Some(catalog_rows);
    Ok(arm)
}

/// The stem of the query's code whose product line the semantic arm's
/// HNSW route scores exactly beside its walks (`written`: the query as
/// written, without its negated terms); `None` when the setting is off or
/// the query carries no code with a stem.
pub fn family_stem(written: &str, profile: &RetrievalProfile) -> Option<String> {
    match profile.semantic_identifier_family {
        0 => None,
        _ => super::understand::identifier_stem(written),
    }
}

/// Whether the semantic arm may scan a domain filter's products exactly,
/// in two halves, for a query far from them (`semantic_far_exact_max_rows`):
/// only where every other filter reads a column that migration 0024's index
/// holds (availability, stock, price, rating), so the scan reads the index
/// alone. A category, brand, attribute or negated word would make it read
/// every row of the domain from the table: the graph is walked then.
pub fn may_scan_far_domain(elig: &Eligibility, profile: &RetrievalProfile) -> bool {
    profile.semantic_far_exact_max_rows > 0
        && elig.domain.is_some()
        && elig.category_key.is_none()
        && elig.brand.is_none()
        && elig.attributes.is_none()
        && elig.negated.is_none()
}

/// Whether the semantic arm's HNSW route may walk each domain's graph for
/// these filters (it does from `semantic_domain_walk_min_rows` products): a
/// domain or category filter already confines the walk to one domain.
pub fn may_walk_domains(elig: &Eligibility, profile: &RetrievalProfile) -> bool {
    profile.semantic_domain_walk_ef > 0 && elig.domain.is_none() && elig.category_key.is_none()
}

/// After a walk that stopped short of the limit: when more than
/// `semantic_refill_scan_tuples` rows are eligible (counted up to one
/// more), the graph walked again with that scan budget and
/// `semantic_refill_mem_multiplier`, merged with what the walks had found
/// (`found`). `None` when it is off, when fewer rows are eligible (the exact
/// scan then reads no more rows than the walk would visit) or when this walk
/// stops short too; the caller then completes the arm exactly.
async fn refill<C: GenericClient>(
    db: &C,
    elig: &Eligibility,
    vector: &Vector,
    profile: &RetrievalProfile,
    found: Vec<(String, f64)>,
) -> Result<Option<Vec<(String, f64)>>, tokio_postgres::Error> {
    let budget = profile.semantic_refill_scan_tuples;
    if budget == 0 {
        return Ok(None);
    }
    let over = budget + 1;
    let counted = db
        .query_typed_one(ELIGIBLE_COUNT_SQL, &elig.typed(&[(&over, Type::INT8)]))
        .await?;
    if counted.get::<_, i64>(0) <= budget {
        return Ok(None);
    }
    let limit = profile.semantic_limit;
    let (budget, memory) = (
        budget.to_string(),
        profile.semantic_refill_mem_multiplier.to_string(),
    );
    // The settings, the walk and the profile's settings again: one round
    // trip, in this order.
    let settings: [(&(dyn ToSql + Sync), Type); 2] = [(&budget, Type::TEXT), (&memory, Type::TEXT)];
    let (_, walked, _, _) = tokio::try_join!(
        db.execute_typed(
            "SELECT set_config('hnsw.max_scan_tuples', $1, true), set_config('hnsw.scan_mem_multiplier', $2, true)",
            &settings,
        ),
        hnsw_walk(db, elig, vector, limit),
        profile_walk(db, profile),
        // The session's own value again (the profile does not set it).
        db.execute_typed("SET LOCAL hnsw.scan_mem_multiplier TO DEFAULT", &[]),
    )?;
    if (walked.len() as i64) < limit {
        return Ok(None);
    }
    let mut c = found;
    c.extend(walked);
    Ok(Some(nearest_once(c, limit)))
}

/// One walk of the HNSW route's statement: `rows` eligible rows, nearest
/// first as the iterative scan meets them, each with its exact score.
async fn hnsw_walk<C: GenericClient>(
    db: &C,
    elig: &Eligibility,
    vector: &Vector,
    rows: i64,
) -> Result<Vec<(String, f64)>, tokio_postgres::Error> {
    let extra = [
        (vector as &(dyn ToSql + Sync), vector_type()),
        (&rows, Type::INT8),
    ];
    db.query_typed(SEMANTIC_HNSW_SQL, &elig.typed(&extra))
        .await
        .map(|found| scored(&found))
}

/// The exact route's scan of the eligible rows, or of one half of them
/// (`half` 0 or 1, by a hash of the product id; the far domain's scan): the
/// nearest `limit`, each with its exact score.
async fn exact_scan<C: GenericClient>(
    db: &C,
    elig: &Eligibility,
    vector: &Vector,
    limit: i64,
    half: Option<i32>,
) -> Result<Vec<(String, f64)>, tokio_postgres::Error> {
    let extra = [
        (vector as &(dyn ToSql + Sync), vector_type()),
        (&limit, Type::INT8),
        (&half, Type::INT4),
    ];
    db.query_typed(SEMANTIC_EXACT_SQL, &elig.typed(&extra))
        .await
        .map(|rows| scored(&rows))
}

/// Rows of several walks (each with its exact score): the best `limit`,
/// each product once. Relaxed order and several walks leave them unsorted.
fn nearest_once(mut c: Vec<(String, f64)>, limit: i64) -> Vec<(String, f64)> {
    c.sort_by(best_first);
    let mut seen = std::collections::HashSet::new();
    c.retain(|(id, _)| seen.insert(id.clone()));
    c.truncate(limit.max(0) as usize);
    c
}

/// `hnsw.ef_search` and `hnsw.max_scan_tuples` for the HNSW scans that
/// follow on `db`, until the transaction ends or they are set again.
async fn set_walk<C: GenericClient>(
    db: &C,
    ef: i64,
    tuples: i64,
) -> Result<(), tokio_postgres::Error> {
    let (ef, tuples) = (ef.to_string(), tuples.to_string());
    db.execute_typed(
        "SELECT set_config('hnsw.ef_search', $1, true), set_config('hnsw.max_scan_tuples', $2, true)",
        &[(&ef, Type::TEXT), (&tuples, Type::TEXT)],
    )
    .await
    .map(|_| ())
}

/// The profile's `hnsw.ef_search` and `hnsw.max_scan_tuples` again, after
/// a walk that set its own ([`set_walk`]).
async fn profile_walk<C: GenericClient>(
    db: &C,
    profile: &RetrievalProfile,
) -> Result<(), tokio_postgres::Error> {
    set_walk(db, profile.hnsw_ef_search, profile.hnsw_max_scan_tuples).await
}

/// `step` when `wanted`, otherwise nothing (and nothing is sent).
async fn only_if<F>(wanted: bool, step: F) -> Result<(), tokio_postgres::Error>
where
    F: std::future::Future<Output = Result<(), tokio_postgres::Error>>,
{
    match wanted {
        true => step.await,
        false => Ok(()),
    }
}

/// The HNSW route: the walk of the whole catalog's graph (or of the one
/// domain's graph a domain filter selects), `rows` deep, and the
/// walks of each of `domains`' graphs with `semantic_domain_walk_ef`; the
/// best `semantic_limit` rows of all of them by exact distance.
///
/// A walk can settle among near-duplicate products far from the query's
/// true neighbours (a cluster larger than the walk's candidate list holds
/// it); a longer walk or a walk of a smaller graph can leave or avoid it.
/// Every row carries its exact distance, so adding walks only ever replaces
/// a row with a nearer one. [`semantic`] passes no domains where they
/// cannot help: under a domain or category filter (the first walk is
/// already confined to one domain's products) and in catalogs (the probe's
/// estimate) smaller than `semantic_domain_walk_min_rows`.
///
/// With a `stem` (a code's letters, [`super::understand::identifier_stem`]),
/// the products whose identity text holds it, up to
/// `semantic_identifier_family` of them, are scored exactly as well
/// (`sql/semantic_family.sql`): a code's vector lies among its product
/// line's near-identical texts, a cluster a walk can miss for another
/// line's. So are up to `semantic_identifier_brand` other products of the
/// line's brands, which can lie nearer than the line itself.
///
/// All the walks, their settings and the family go out at once, in order,
/// and the connection pipelines them: one round trip. The domain walks and
/// their settings go to `walks`, the rest to `db`, except the family when
/// there are no domain walks: it goes to `walks`, beside the first walk
/// (the same client as `db` when the search has no lane for it).
async fn graph_walks<C: GenericClient>(
    (db, walks): (&C, &C),
    elig: &Eligibility,
    vector: &Vector,
    profile: &RetrievalProfile,
    rows: i64,
    domains: Vec<String>,
    stem: Option<&str>,
) -> Result<Walked, tokio_postgres::Error> {
    // SET LOCAL for the domain walks, then back to the profile's: only HNSW
    // scans read them. Each domain walk stops looking after
    // `semantic_domain_walk_tuples` graph elements (its first candidate
    // list is walked whole; the budget is checked when it resumes past
    // it): under a filter it brings the eligible rows among those, and the
    // whole catalog's walk does the looking further.
    let walks_domains = !domains.is_empty();
    let domain_rows = profile.semantic_limit.min(profile.semantic_domain_walk_ef);
    let domain_walks = domains.iter().map(|d| async move {
        let e = Eligibility {
            domain: Some(d.clone()),
            ..elig.clone()
        };
        hnsw_walk(walks, &e, vector, domain_rows).await
    });
    let domain_settings = set_walk(
        walks,
        profile.semantic_domain_walk_ef,
        profile.semantic_domain_walk_tuples,
    );
    let back = profile_walk(walks, profile);
    // The family goes on the walks' lane when no domain walk needs it (a
    // domain or category filter, or a catalog too small for them): there it
    // runs beside the walk instead of after it.
    let (family_db, family_on_walks) = match walks_domains {
        true => (db, false),
        false => (walks, true),
    };
    let family = async {
        let Some(stem) = stem else {
            return Ok(None);
        };
        let extra = [
            (vector as &(dyn ToSql + Sync), vector_type()),
            (&profile.semantic_limit, Type::INT8),
            (&stem, Type::TEXT),
            (&profile.semantic_identifier_family, Type::INT8),
            (&profile.semantic_identifier_brand, Type::INT8),
        ];
        let found = family_db
            .query_typed(SEMANTIC_FAMILY_SQL, &elig.typed(&extra))
            .await?;
        let eligible = found.first().map_or(0, |r| r.get::<_, i64>(2));
        Ok(Some((scored(&found), eligible)))
    };
    // try_join! polls in order, so the statements are sent in this order.
    let (mut c, _, found, _, family) = tokio::try_join!(
        hnsw_walk(db, elig, vector, rows),
        only_if(walks_domains, domain_settings),
        futures_util::future::try_join_all(domain_walks),
        only_if(walks_domains, back),
        family,
    )?;
    let first_walk_filled = c.len() as i64 >= profile.semantic_limit;
    c.extend(found.into_iter().flatten());
    let family = family.map(|(rows, eligible)| {
        c.extend(rows);
        eligible
    });
    Ok(Walked {
        rows: nearest_once(c, profile.semantic_limit),
        first_walk_filled,
        family,
        family_on_walks,
    })
}

/// What [`graph_walks`] found.
struct Walked {
    /// The best `semantic_limit` rows of every walk (and of the family).
    rows: Vec<(String, f64)>,
    /// Whether the first walk alone filled the limit: the domain walks may
    /// stop looking early, and the family is no walk, so rows they add do
    /// not show that the iterative scan found every eligible row it should
    /// have.
    first_walk_filled: bool,
    /// How many eligible products of the identifier's family were scored.
    family: Option<i64>,
    /// Whether the family's statement went to the walks' client.
    family_on_walks: bool,
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
    use super::*;

    #[test]
    fn the_trigram_arm_reads_whole_words_up_to_its_bound() {
        assert_eq!(
            first_chars("pxlt-3353 mini", 128),
            ("pxlt-3353 mini".into(), false)
        );
        assert_eq!(
            first_chars("pxlt-3353 mini", 0),
            ("pxlt-3353 mini".into(), false)
        );
        // Whole words while they fit, the space between them counted.
        assert_eq!(
            first_chars("voltrix vxhp-1000s lite", 18),
            ("voltrix vxhp-1000s".into(), true)
        );
        assert_eq!(
            first_chars("voltrix vxhp-1000s lite", 17),
            ("voltrix".into(), true)
        );
        // A first word longer than the bound: its first characters.
        let long = "ab".repeat(100);
        assert_eq!(first_chars(&long, 5), ("ababa".into(), true));
        // Characters, not bytes.
        assert_eq!(first_chars("ééééé ü", 5), ("ééééé".into(), true));
    }

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
    fn relaxed_steps_go_from_all_terms_but_one_to_any_one() {
        assert_eq!(relaxed_levels(0, true), Vec::<usize>::new());
        assert_eq!(relaxed_levels(1, false), Vec::<usize>::new());
        assert_eq!(relaxed_levels(1, true), vec![1]);
        assert_eq!(relaxed_levels(2, false), vec![1]);
        assert_eq!(relaxed_levels(3, false), vec![2, 1]);
        assert_eq!(relaxed_levels(3, true), vec![3, 2, 1]);
        assert_eq!(relaxed_levels(5, false), vec![4, 3, 1]);
        // C(12, 6) = 924 combinations is too many for one tsquery.
        assert_eq!(relaxed_levels(12, false), vec![11, 1]);
        assert_eq!(combinations(5, 2), 10);
        assert_eq!(combinations(12, 11), 12);
        let t = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            at_least(&t(&["'a'", "'b'", "'c'"]), 2),
            "((('a') & (('b') | ('c'))) | (('b') & ('c')))"
        );
        assert_eq!(at_least(&t(&["'a'", "'b'"]), 1), "(('a') | ('b'))");
        assert_eq!(at_least(&t(&["'a'", "'b'"]), 2), "(('a') & ('b'))");
        assert_eq!(at_least(&t(&["'a'"]), 2), "");
        assert_eq!(at_least(&t(&["'a'"]), 0), "");
    }

    #[test]
    fn a_code_stays_in_the_back_off_and_a_lone_variant_word_never_serves() {
        let t = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        // Every informative term but 'p' ("plus") held by few products.
        let relax = |informative: &[&str], codes: &[&str], present: &[&str], terms| Relaxation {
            informative: t(informative),
            codes: t(codes),
            narrow: t(informative).into_iter().filter(|w| w != "'p'").collect(),
            present: t(present),
            terms,
        };
        let modes = |r: &Relaxation| -> Vec<String> {
            r.steps()
                .into_iter()
                .map(|(m, _)| ArmMode::Lexical(m).to_string())
                .collect()
        };
        // "SMSB-1504 Plus": the code alone, never "plus" alone.
        let plus = relax(&["'s'", "'p'"], &["'s'"], &["'s'", "'p'"], 2);
        assert_eq!(modes(&plus), ["backoff_code_only"]);
        assert_eq!(plus.steps()[0].1, "(('s'))");
        // "Pixelon PXLT-1075": the brand's few products after the code's.
        let brand = relax(&["'b'", "'s'"], &["'s'"], &["'b'", "'s'"], 2);
        assert_eq!(modes(&brand), ["backoff_code_only", "backoff_any_term"]);
        assert_eq!(brand.steps()[1].1, "((('s')) | (('b')))");
        // Without the code's statistics it is any query: down to any term.
        let plain = relax(&["'s'", "'p'"], &[], &["'s'", "'p'"], 2);
        assert_eq!(modes(&plain), ["backoff_any_term"]);
        // A code and three words: the code with fewer of them, then the
        // code alone, then the words (or the code), two at least.
        let three = relax(
            &["'c'", "'x'", "'y'", "'z'"],
            &["'c'"],
            &["'c'", "'x'", "'y'", "'z'"],
            4,
        );
        assert_eq!(
            modes(&three),
            [
                "backoff_code_and_2_of_3_terms",
                "backoff_code_and_1_of_3_terms",
                "backoff_code_only",
                "backoff_3_of_3_terms",
                "backoff_2_of_3_terms",
                "backoff_any_term"
            ]
        );
        let steps = three.steps();
        assert_eq!(
            steps[0].1,
            format!("((('c')) & {})", at_least(&t(&["'x'", "'y'", "'z'"]), 2))
        );
        assert_eq!(steps[3].1, "((('c')) | (('x') & ('y') & ('z')))");
        // Each mode names its own step.
        for (mode, tsquery) in &steps {
            assert_eq!(three.tsquery(*mode).as_ref(), Some(tsquery));
        }
        // Two codes: either of them stands for the code.
        let two = relax(
            &["'c'", "'d'", "'x'"],
            &["'c'", "'d'"],
            &["'c'", "'d'", "'x'"],
            3,
        );
        assert_eq!(
            modes(&two),
            [
                "backoff_code_and_1_of_1_terms",
                "backoff_code_only",
                "backoff_any_term"
            ]
        );
        assert_eq!(two.steps()[1].1, "(('c') | ('d'))");
    }

    /// Every subset of the terms, as the set of terms a document holds:
    /// the factored tsquery must hold exactly when the subset has `k` or
    /// more of them. Evaluated here by a small parser of its `&`, `|` and
    /// parentheses (the terms are single letters, spaces removed first).
    #[test]
    fn at_least_holds_exactly_for_documents_with_k_of_the_terms() {
        type Held<'a> = &'a dyn Fn(u8) -> bool;
        // or := and ('|' and)*; and := atom ('&' atom)*; atom := '(' or ')' | 'x'
        fn or(q: &[u8], i: &mut usize, held: Held) -> bool {
            let mut v = and(q, i, held);
            while q.get(*i) == Some(&b'|') {
                *i += 1;
                v |= and(q, i, held);
            }
            v
        }
        fn and(q: &[u8], i: &mut usize, held: Held) -> bool {
            let mut v = atom(q, i, held);
            while q.get(*i) == Some(&b'&') {
                *i += 1;
                v &= atom(q, i, held);
            }
            v
        }
        fn atom(q: &[u8], i: &mut usize, held: Held) -> bool {
            if q[*i] == b'(' {
                *i += 1;
                let v = or(q, i, held);
                assert_eq!(q[*i], b')');
                *i += 1;
                v
            } else {
                // 'x'
                let v = held(q[*i + 1]);
                *i += 3;
                v
            }
        }
        let letters = b"abcdefg";
        for n in 1..=letters.len() {
            let terms: Vec<String> = letters[..n]
                .iter()
                .map(|c| format!("'{}'", *c as char))
                .collect();
            for k in 1..=n {
                let q = at_least(&terms, k);
                let bytes: Vec<u8> = q.bytes().filter(|b| *b != b' ').collect();
                for subset in 0u32..(1 << n) {
                    let held = |c: u8| subset & (1 << (c - b'a')) != 0;
                    let mut i = 0;
                    let holds = or(&bytes, &mut i, &held);
                    assert_eq!(i, bytes.len(), "{q}: parsed to the end");
                    assert_eq!(
                        holds,
                        subset.count_ones() as usize >= k,
                        "at least {k} of {n}: {q} for {subset:b}"
                    );
                }
            }
        }
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
            ("semantic_exact", SEMANTIC_EXACT_SQL),
            ("semantic_hnsw", SEMANTIC_HNSW_SQL),
            ("semantic_family", SEMANTIC_FAMILY_SQL),
            ("exact_identifier", EXACT_IDENTIFIER_SQL),
            ("metadata_only", METADATA_ONLY_SQL),
            ("eligible_among", ELIGIBLE_AMONG_SQL),
        ] {
            let block = match name.ends_with("price on rows") {
                true => on_rows.as_str(),
                false => block,
            };
            let at = sql
                .find(block)
                .unwrap_or_else(|| panic!("{name} lacks the eligibility predicate"));
            let limit = sql.rfind("LIMIT").expect("every arm has a LIMIT");
            assert!(at < limit, "{name}: eligibility must come before the LIMIT");
        }
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

    #[test]
    fn the_trigram_cascade_runs_strictest_first_without_repeats() {
        let p = RetrievalProfile::default();
        assert_eq!(
            trigram_steps(&p),
            vec![
                p.trigram_strict_threshold,
                p.trigram_middle_threshold,
                p.trigram_floor
            ]
        );
        let one = RetrievalProfile {
            trigram_strict_threshold: 0.45,
            trigram_middle_threshold: 0.45,
            trigram_floor: 0.45,
            ..Default::default()
        };
        assert_eq!(trigram_steps(&one), vec![0.45]);
        let two = RetrievalProfile {
            trigram_middle_threshold: 0.45,
            trigram_floor: 0.45,
            ..Default::default()
        };
        assert_eq!(
            trigram_steps(&two),
            vec![two.trigram_strict_threshold, 0.45]
        );
    }

    #[test]
    fn a_relaxed_step_never_loses_what_a_stricter_step_found() {
        let mut merged = Vec::new();
        merge_step(&mut merged, vec![("p9".into(), 0.9)], 3);
        // A budget-cut relaxed step that missed p9 in physical order.
        merge_step(
            &mut merged,
            vec![("p1".into(), 0.5), ("p2".into(), 0.6), ("p3".into(), 0.5)],
            3,
        );
        let ids: Vec<&str> = merged.iter().map(|(id, _)| id.as_str()).collect();
        assert_eq!(ids, vec!["p9", "p2", "p1"]);
        // A relaxed step that found it again does not duplicate it.
        merge_step(
            &mut merged,
            vec![("p9".into(), 0.9), ("p4".into(), 0.95)],
            3,
        );
        let ids: Vec<&str> = merged.iter().map(|(id, _)| id.as_str()).collect();
        assert_eq!(ids, vec!["p4", "p9", "p2"]);
    }

    #[test]
    fn the_price_on_rows_differs_from_the_predicate_in_its_two_price_conditions_alone() {
        for (sql, derived) in [
            (LEXICAL_SQL, &LEXICAL_PRICE_ON_ROWS[0]),
            (LEXICAL_RELAXED_SQL, &LEXICAL_PRICE_ON_ROWS[1]),
        ] {
            // Each price condition once, in the predicate, and nothing else.
            assert_eq!(sql.matches("pp.price_cents").count(), 2);
            assert_eq!(derived.matches("pp.price_cents + 0 >= $6").count(), 1);
            assert_eq!(derived.matches("pp.price_cents + 0 <= $7").count(), 1);
            let back = derived.replace("pp.price_cents + 0", "pp.price_cents");
            assert_eq!(back, sql);
        }
    }

    #[test]
    fn the_price_is_checked_on_rows_only_where_its_bitmap_would_cost_more() {
        let at = |share, rows| PriceShare { share, rows };
        let budget = RetrievalProfile::default().lexical_scan_budget;
        assert_eq!(budget, 2_000);
        // A million products: the cheaper half yes, a 0.5% band no.
        assert!(at(0.5, 1e6).checks_rows(budget));
        assert!(!at(0.005, 1e6).checks_rows(budget));
        // The break-even share: share^2 * rows = factor * budget.
        let even = (PRICE_ENTRIES_PER_ROW_CHECK * budget as f64 / 1e6).sqrt();
        assert!(at(even * 1.01, 1e6).checks_rows(budget));
        assert!(!at(even * 0.99, 1e6).checks_rows(budget));
        // A small catalog's bitmap is cheap at any share.
        assert!(!at(1.0, 5_000.0).checks_rows(budget));
        // An empty range, or no statistics (no rows), never.
        assert!(!at(0.0, 1e6).checks_rows(budget));
        assert!(!at(0.5, 0.0).checks_rows(budget));
    }

    #[test]
    fn a_price_ranges_share_counts_its_common_prices_and_its_part_of_the_histogram() {
        let stats = PriceStats {
            null_frac: 0.1,
            common: vec![(1_000, 0.2), (5_000, 0.1)],
            bounds: (0..=10).map(|i| i * 1_000).collect(),
            rows: 1e6,
        };
        let share = |min, max| {
            stats
                .share(&Eligibility::new(&Filters {
                    min_price_cents: min,
                    max_price_cents: max,
                    ..Filters::default()
                }))
                .share
        };
        let near = |a: f64, b: f64| (a - b).abs() < 1e-9;
        // Everything priced: the common prices and all the rest.
        assert!(near(share(Some(0), None), 0.9));
        // At most 1,000: that common price, two bounds of eleven.
        assert!(near(share(None, Some(1_000)), 0.2 + 0.6 * 2.0 / 11.0));
        // Exactly 5,000: that common price, one bound.
        assert!(near(share(Some(5_000), Some(5_000)), 0.1 + 0.6 / 11.0));
        // Between two bounds and no common price: nothing.
        assert!(near(share(Some(1_001), Some(1_999)), 0.0));
        assert_eq!(
            stats.share(&Eligibility::new(&Filters::default())).rows,
            1e6
        );
        // No histogram (every price a common one).
        let common_only = PriceStats {
            bounds: Vec::new(),
            ..stats.clone()
        };
        let elig = Eligibility::new(&Filters {
            max_price_cents: Some(1_000),
            ..Filters::default()
        });
        assert!(near(common_only.share(&elig).share, 0.2));
        assert_eq!(PriceShare::least_rows(2_000), 20_000);
    }

    #[test]
    fn only_a_price_range_wholly_outside_the_filter_admits_nothing() {
        let elig = |min, max| {
            Eligibility::new(&Filters {
                min_price_cents: min,
                max_price_cents: max,
                ..Filters::default()
            })
        };
        let band = elig(Some(1_000), Some(5_000));
        assert!(band.admits_some_price((Some(4_000), Some(9_000))));
        assert!(band.admits_some_price((Some(5_000), Some(5_000))));
        assert!(band.admits_some_price((Some(10), Some(1_000))));
        assert!(!band.admits_some_price((Some(5_001), Some(9_000))));
        assert!(!band.admits_some_price((Some(10), Some(999))));
        assert!(!band.admits_some_price((Some(5_001), None)));
        assert!(!band.admits_some_price((None, Some(999))));
        // Unknown bounds admit.
        assert!(band.admits_some_price((None, None)));
        // No price filter admits any range.
        assert!(elig(None, None).admits_some_price((Some(i64::MAX), Some(i64::MAX))));
    }

    #[test]
    fn negated_terms_are_kept_apart() {
        let t = lexical_terms("wireless headphones -earbuds \"noise cancelling\" or cheap");
        assert_eq!(
            t.positive,
            vec!["wireless", "headphones", "noise", "cancelling", "cheap"]
        );
        assert_eq!(t.negated, vec!["-earbuds"]);
    }
}
