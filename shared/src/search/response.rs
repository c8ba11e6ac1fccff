//! What a search answers: the served results with their signals and
//! sources, the strategy and rerank status it records, and the diagnostics a
//! caller may ask for.

use super::*;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Strategy {
    ExactIdentifier,
    MetadataOnly,
    Hybrid,
}

impl Strategy {
    pub fn as_str(self) -> &'static str {
        match self {
            Strategy::ExactIdentifier => "exact_identifier",
            Strategy::MetadataOnly => "metadata_only",
            Strategy::Hybrid => "hybrid",
        }
    }
}

/// What the rerank stage did; stored in the receipt as its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RerankStatus {
    /// The pool was reordered by the reranker's scores.
    Reranked,
    /// The reranker failed or passed its deadline: the fused order stands.
    FallbackFused,
    /// A metadata-only search has no query to rerank by.
    SkippedMetadataOnly,
    /// The request (or an evaluation variant) turned the stage off.
    SkippedByRequest,
    /// Nothing to rerank.
    SkippedEmptyPool,
    /// No reranker is configured.
    SkippedNoReranker,
}

impl RerankStatus {
    pub const ALL: [RerankStatus; 6] = [
        RerankStatus::Reranked,
        RerankStatus::FallbackFused,
        RerankStatus::SkippedMetadataOnly,
        RerankStatus::SkippedByRequest,
        RerankStatus::SkippedEmptyPool,
        RerankStatus::SkippedNoReranker,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            RerankStatus::Reranked => "reranked",
            RerankStatus::FallbackFused => "fallback_fused",
            RerankStatus::SkippedMetadataOnly => "skipped_metadata_only",
            RerankStatus::SkippedByRequest => "skipped_by_request",
            RerankStatus::SkippedEmptyPool => "skipped_empty_pool",
            RerankStatus::SkippedNoReranker => "skipped_no_reranker",
        }
    }

    /// The status a receipt recorded by name.
    pub fn from_name(name: &str) -> Option<RerankStatus> {
        Self::ALL.into_iter().find(|s| s.as_str() == name)
    }
}

/// Read back from a receipt's `rerank_status` column (text).
impl<'a> tokio_postgres::types::FromSql<'a> for RerankStatus {
    fn from_sql(
        ty: &tokio_postgres::types::Type,
        raw: &'a [u8],
    ) -> Result<Self, Box<dyn std::error::Error + Sync + Send>> {
        let name = <&str as tokio_postgres::types::FromSql>::from_sql(ty, raw)?;
        RerankStatus::from_name(name)
            .ok_or_else(|| format!("unknown rerank status {name:?}").into())
    }

    fn accepts(ty: &tokio_postgres::types::Type) -> bool {
        <&str as tokio_postgres::types::FromSql>::accepts(ty)
    }
}

impl std::fmt::Display for RerankStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Per-arm rank and score of one result.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Signals {
    pub lexical: Option<SignalOut>,
    pub trigram: Option<SignalOut>,
    pub semantic: Option<SignalOut>,
    pub rrf_score: Option<f64>,
    /// Rank in the fused pool (pool rank space, 1..pool size).
    pub pre_rerank_rank: i32,
    pub rerank_score: Option<f64>,
    /// How many of the query's stated bounds it broke and kept, when they
    /// ordered the pool.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bounds: Option<bounds::Standing>,
}

#[derive(Debug, Clone, Copy, Serialize, PartialEq)]
pub struct SignalOut {
    pub rank: i32,
    pub score: f64,
}

impl From<ArmSignal> for SignalOut {
    fn from(s: ArmSignal) -> Self {
        SignalOut {
            rank: s.rank,
            score: s.score,
        }
    }
}

/// Where a product's fields come from: its source and the catalog revision
/// they were read at.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Source {
    pub uri: String,
    pub revision: i32,
}

/// One served result.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct SearchResult {
    /// Served rank (window rank space, 1..limit).
    pub rank: i32,
    pub product_id: String,
    pub sku: String,
    pub model: String,
    pub brand: String,
    pub title: String,
    pub domain: String,
    pub category_key: String,
    pub price_cents: i64,
    pub currency: String,
    /// Average rating, rounded to two decimals.
    pub rating: Option<f64>,
    pub availability: String,
    pub attributes: Map<String, Value>,
    /// Whether evidence and comparison are allowed for this product.
    pub granted: bool,
    /// Relevance: the rerank score when reranked, else the RRF score; null
    /// for metadata-only results, which matched a filter, not a query.
    pub score: Option<f64>,
    /// `exact_identifier`, `filter`, or the arms that found it (`lexical+semantic`).
    pub match_reason: String,
    pub exact_match: bool,
    pub signals: Signals,
    pub source: Source,
}

#[derive(Debug, Clone, Serialize)]
pub struct Diagnostics {
    pub strategy: Strategy,
    pub arms: ArmResults,
    pub semantic_route: Option<String>,
    pub eligible_estimate: Option<i64>,
    pub pool_size: usize,
    pub rerank_status: RerankStatus,
    pub models: Value,
    pub timings_ms: BTreeMap<&'static str, f64>,
    pub warnings: Vec<String>,
    /// What query understanding did (corrections, identifiers); absent for
    /// a filters-only search.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub query_understanding: Option<understand::Understanding>,
}

#[derive(Debug, Clone, Serialize)]
pub struct SearchResponse {
    pub search_event_id: Uuid,
    pub strategy: Strategy,
    pub normalized_query: Option<String>,
    /// The query as the lexical and trigram arms matched it, when words
    /// were corrected against the catalog's vocabulary; absent otherwise.
    /// The semantic arm embeds `normalized_query`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub corrected_query: Option<String>,
    pub applied_filters: Filters,
    /// The words the query excluded (`-word`): every product whose text
    /// holds one was ineligible in every arm, a hard filter beside
    /// `applied_filters`; absent when the query excluded none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub excluded_words: Vec<String>,
    pub limit: i64,
    pub authorized_limit: i64,
    pub results: Vec<SearchResult>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diagnostics: Option<Diagnostics>,
}

impl SearchResult {
    /// A served member with its catalog fields.
    pub(super) fn of(m: &Member, p: &ProductRow, strategy: Strategy) -> SearchResult {
        let score = match strategy {
            Strategy::MetadataOnly => None,
            _ => m.rerank_score.or(m.rrf_score),
        };
        let signal = |arm: Arm| m.signals[arm as usize].map(Into::into);
        SearchResult {
            rank: m.final_rank,
            product_id: m.product_id.clone(),
            sku: p.sku.clone(),
            model: p.model.clone(),
            brand: p.brand.clone(),
            title: p.title.clone(),
            domain: p.domain.clone(),
            category_key: p.category_key.clone(),
            price_cents: p.price_cents,
            currency: p.currency.clone(),
            rating: p.shown_rating(),
            availability: p.availability.clone(),
            attributes: p.attributes.clone(),
            granted: m.granted,
            score,
            match_reason: m.match_reason.clone(),
            exact_match: m.exact_match,
            signals: Signals {
                lexical: signal(Arm::Lexical),
                trigram: signal(Arm::Trigram),
                semantic: signal(Arm::Semantic),
                rrf_score: m.rrf_score,
                pre_rerank_rank: m.pre_rerank_rank,
                rerank_score: m.rerank_score,
                bounds: m.bounds,
            },
            source: Source {
                uri: p.source_uri.clone(),
                revision: p.revision,
            },
        }
    }
}
