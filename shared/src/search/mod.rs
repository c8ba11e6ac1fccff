//! `search_products`: one strategy per query, three arms with eligibility in
//! SQL, reciprocal rank fusion, a bounded rerank, and a receipt.
//!
//! The pipeline, in order:
//!
//! 1. the request is validated ([`request`]);
//! 2. one strategy is chosen and recorded: `metadata_only` (filters, no
//!    query: deterministic order, null scores), `exact_identifier` (the query
//!    is an eligible product's SKU or model: pinned first) or `hybrid`;
//! 3. the query is embedded while the lexical and trigram arms run; if
//!    embedding fails the semantic arm is skipped with a warning; the arms
//!    run on up to three connections at once when the pool has them idle
//!    ([`lanes`]);
//! 4. the semantic arm routes on selectivity (exact scan or HNSW);
//! 5. the arms are fused with unweighted RRF into a bounded pool;
//! 6. the pool is reranked under a deadline (fused order on failure);
//! 7. the top `limit` are served, the first `authorized_limit` granted;
//! 8. the event and every pool member are written in one transaction before
//!    the answer leaves; if that fails, nothing is served (503).

pub mod arms;
pub mod fusion;
mod lanes;
mod receipt;
pub mod request;
pub mod trgm;

pub use request::{Filters, SearchRequest, Shape};

use crate::context::{Ctx, Principal};
use crate::embed::EmbedKind;
use crate::error::Error;
use crate::rerank;
use arms::{ArmResult, Eligibility};
use fusion::{Arm, ArmSignal};
use serde::Serialize;
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};
use uuid::Uuid;

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
    pub arms: BTreeMap<&'static str, ArmResult>,
    pub semantic_route: Option<String>,
    pub eligible_estimate: Option<i64>,
    pub pool_size: usize,
    pub rerank_status: String,
    pub models: Value,
    pub timings_ms: BTreeMap<&'static str, f64>,
    pub warnings: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct SearchResponse {
    pub search_event_id: Uuid,
    pub strategy: Strategy,
    pub normalized_query: Option<String>,
    pub applied_filters: Filters,
    pub limit: i64,
    pub authorized_limit: i64,
    pub results: Vec<SearchResult>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diagnostics: Option<Diagnostics>,
}

/// A product's catalog fields, read once for the pool.
#[derive(Debug, Clone)]
struct ProductRow {
    sku: String,
    model: String,
    brand: String,
    title: String,
    domain: String,
    category_key: String,
    description: String,
    price_cents: i64,
    currency: String,
    rating: Option<f32>,
    availability: String,
    attributes: Map<String, Value>,
    source_uri: String,
    revision: i32,
    /// The projection's lexical document (`tsvector` as text), when the
    /// reranker scores from the catalog.
    document: Option<String>,
}

impl ProductRow {
    /// The pool member as a reranker that reads `reads` sees it.
    fn rerank_candidate(&self, reads: rerank::Reads) -> rerank::Candidate {
        rerank::Candidate {
            text: match reads {
                rerank::Reads::Text => self.rerank_text(),
                rerank::Reads::Catalog => String::new(),
            },
            identity_text: format!("{} {} {} {}", self.title, self.brand, self.model, self.sku),
            identifiers: vec![
                self.model.clone(),
                self.sku.clone(),
                format!("{} {}", self.brand, self.model),
            ],
            lexemes: self
                .document
                .as_deref()
                .map(rerank::parse_tsvector)
                .unwrap_or_default(),
        }
    }

    /// What the reranker reads: identity, taxonomy, attributes, description.
    fn rerank_text(&self) -> String {
        // A false flag is left out: "noise cancelling: false" must not
        // read as a match for "noise cancelling".
        let attrs: Vec<String> = self
            .attributes
            .iter()
            .filter_map(|(k, v)| {
                let key = k.replace('_', " ");
                match v {
                    Value::Bool(true) => Some(key),
                    Value::Bool(false) => None,
                    Value::String(s) => Some(format!("{key}: {s}")),
                    Value::Array(items) => Some(format!(
                        "{key}: {}",
                        items
                            .iter()
                            .map(|i| i.as_str().map_or_else(|| i.to_string(), str::to_string))
                            .collect::<Vec<_>>()
                            .join(", ")
                    )),
                    other => Some(format!("{key}: {other}")),
                }
            })
            .collect();
        format!(
            "{}. {} {} {}. {}. {}. {}",
            self.title,
            self.brand,
            self.model,
            self.sku,
            self.category_key.replace('_', " "),
            attrs.join("; "),
            self.description
        )
    }
}

/// One pool member as it moves through the pipeline.
#[derive(Debug, Clone)]
pub(crate) struct Member {
    pub product_id: String,
    pub signals: [Option<ArmSignal>; 3],
    pub rrf_score: Option<f64>,
    pub pre_rerank_rank: i32,
    pub rerank_score: Option<f64>,
    pub exact_match: bool,
    pub match_reason: String,
    pub final_rank: i32,
    pub served_rank: Option<i32>,
    pub granted: bool,
    pub source_uri: String,
    pub source_revision: i32,
}

/// Everything the receipt records about the event.
pub(crate) struct EventRecord<'a> {
    pub id: Uuid,
    pub principal: &'a Principal,
    pub req: &'a SearchRequest,
    pub strategy: Strategy,
    pub semantic_route: Option<String>,
    pub eligible_estimate: Option<i64>,
    pub rerank_status: &'a str,
    pub models: &'a Value,
    pub arms: Value,
    pub timings: &'a BTreeMap<&'static str, f64>,
    pub warnings: &'a [String],
    pub profile: Value,
    pub served_count: i32,
    /// Set when the search replays a recorded one.
    pub replay: Option<&'a ReplayOf>,
}

/// What the receipt of a replay records about the event it replays
/// ([`crate::replay`]; columns of `sql/0013_receipt_replay.sql`).
#[derive(Debug, Clone)]
pub(crate) struct ReplayOf {
    pub event: Uuid,
    /// `recorded` or `current`: which profile the replay ran with.
    pub profile: &'static str,
    /// The replayed pool's members that no longer pass its filters.
    pub ineligible: Vec<String>,
}

fn ms(t: Instant) -> f64 {
    (t.elapsed().as_secs_f64() * 100_000.0).round() / 100.0
}

/// The query without its negated terms (`-word`), for the stages that
/// measure similarity: "headphones -wired" must not pull towards "wired".
fn without_negations(q: &str) -> String {
    let kept: Vec<&str> = q
        .split_whitespace()
        .filter(|w| !(w.len() > 1 && w.starts_with('-')))
        .collect();
    if kept.is_empty() {
        q.to_string()
    } else {
        kept.join(" ")
    }
}

fn match_reason(signals: &[Option<ArmSignal>; 3]) -> String {
    let arms: Vec<&str> = Arm::ALL
        .iter()
        .filter(|a| signals[**a as usize].is_some())
        .map(|a| a.name())
        .collect();
    arms.join("+")
}

/// Embeds the query under the profile's deadline; `Err` carries the warning.
async fn embed_query(ctx: &Ctx, query: &str) -> Result<pgvector::Vector, String> {
    let Some(embedder) = ctx.embedder.as_ref() else {
        return Err("semantic arm skipped: no embedding model is configured".into());
    };
    let deadline = Duration::from_millis(ctx.profile.embed_deadline_ms);
    match tokio::time::timeout(
        deadline,
        embedder.embed(&[query.to_string()], EmbedKind::Query),
    )
    .await
    {
        Ok(Ok(mut v)) if v.len() == 1 => Ok(pgvector::Vector::from(v.remove(0))),
        Ok(Ok(_)) => Err("semantic arm skipped: the embedding model returned no vector".into()),
        Ok(Err(e)) => {
            tracing::warn!(error = %e, "query embedding failed");
            Err("semantic arm skipped: query embedding failed".into())
        }
        Err(_) => Err(format!(
            "semantic arm skipped: query embedding exceeded its {} ms deadline",
            ctx.profile.embed_deadline_ms
        )),
    }
}

/// The rerank stage's input: the query's lexemes with their catalog
/// statistics (`sql/query_lexemes.sql`: `search.lexeme_stats`,
/// `search.catalog_stats`), and every candidate's fields.
fn rerank_pool<'a>(
    query: &'a str,
    reads: rerank::Reads,
    lexeme_rows: &[tokio_postgres::Row],
    members: &[Member],
    products: &BTreeMap<String, ProductRow>,
) -> rerank::Pool<'a> {
    let catalog = lexeme_rows.first().map(|r| rerank::CatalogStats {
        products: r.get(2),
        avg_field_lengths: [r.get(3), r.get(4), r.get(5), r.get(6)],
    });
    rerank::Pool {
        query,
        query_lexemes: lexeme_rows
            .iter()
            .map(|r| rerank::QueryLexeme {
                lexeme: r.get(0),
                docs: r.get(1),
            })
            .collect(),
        catalog,
        candidates: members
            .iter()
            .map(|m| products[&m.product_id].rerank_candidate(reads))
            .collect(),
    }
}

/// Which parts of the pipeline run. The service always uses
/// [`Variant::SERVING`]; the others exist so that `mosaic eval` can measure
/// what each part contributes on the very same code path.
#[derive(Debug, Clone, PartialEq)]
pub struct Variant {
    /// Lexical, trigram, semantic.
    pub arms: [bool; 3],
    /// Per-arm RRF weights; `None` is unweighted RRF (the serving choice).
    pub weights: Option<[f64; 3]>,
    /// Whether the rerank stage may run (the request's `rerank` still applies).
    pub rerank: bool,
}

impl Variant {
    pub const SERVING: Variant = Variant {
        arms: [true, true, true],
        weights: None,
        rerank: true,
    };
}

/// Runs `search_products`.
pub async fn search(
    ctx: &Ctx,
    principal: &Principal,
    req: SearchRequest,
) -> Result<SearchResponse, Error> {
    search_variant(ctx, principal, req, &Variant::SERVING).await
}

/// Runs `search_products` with parts of the pipeline switched off, for
/// side-by-side evaluation only.
pub async fn search_variant(
    ctx: &Ctx,
    principal: &Principal,
    req: SearchRequest,
    variant: &Variant,
) -> Result<SearchResponse, Error> {
    pipeline(ctx, principal, req, variant, None).await
}

/// Runs `search_products` as the replay of a recorded event: the serving
/// pipeline, with a receipt that names the replayed event.
pub(crate) async fn search_replaying(
    ctx: &Ctx,
    principal: &Principal,
    req: SearchRequest,
    replay: &ReplayOf,
) -> Result<SearchResponse, Error> {
    pipeline(ctx, principal, req, &Variant::SERVING, Some(replay)).await
}

/// The pipeline of the module comment; `replay` names the event a replay
/// re-runs, for its receipt.
async fn pipeline(
    ctx: &Ctx,
    principal: &Principal,
    req: SearchRequest,
    variant: &Variant,
    replay: Option<&ReplayOf>,
) -> Result<SearchResponse, Error> {
    let started = Instant::now();
    let profile = &ctx.profile;
    let mut timings: BTreeMap<&'static str, f64> = BTreeMap::new();
    let mut warnings: Vec<String> = Vec::new();
    // The candidate reads (arms, catalog fields, lexeme statistics) take a
    // connection of the read pool (a replica when configured); it cancels
    // its statement if this search is abandoned at a deadline. The receipt
    // is written on the writer.
    let mut conn = ctx.read_conn().await?;
    let client: &mut tokio_postgres::Client = &mut conn;
    let elig = Eligibility::with_query(&req.filters, req.normalized_query.as_deref());
    // Negated terms are enforced by the eligibility predicate; the
    // similarity-based stages (arms, rerank) see only what the caller wants.
    let positive = req.normalized_query.as_deref().map(without_negations);
    let mut arm_results: BTreeMap<&'static str, ArmResult> = BTreeMap::new();

    // 2–5: strategy, arms, fusion.
    let (strategy, mut members) = match req.normalized_query.as_deref() {
        None => {
            let t = Instant::now();
            // In a read-only transaction of its own, so that the statement
            // is bounded by the same `SET LOCAL statement_timeout` as the
            // arms' (connections through RDS Proxy have no session default).
            let tx = client.build_transaction().read_only(true).start().await?;
            arms::apply_settings(&tx, profile).await?;
            let ids = arms::metadata_only(&tx, &elig, profile.pool_size as i64).await?;
            tx.commit().await?;
            timings.insert("metadata", ms(t));
            let members = ids
                .into_iter()
                .enumerate()
                .map(|(i, id)| {
                    Member::new(id, [None; 3], None, i as i32 + 1, false, "filter".into())
                })
                .collect();
            (Strategy::MetadataOnly, members)
        }
        Some(q) => {
            let positive = positive.as_deref().unwrap_or(q);
            let out = lanes::run_arms(ctx, client, variant, &elig, q, positive).await?;
            let lanes::ArmsOutcome {
                exact_ids,
                lexical,
                trigram,
                semantic,
                ..
            } = out;
            warnings.extend(out.warning);
            timings.insert("embed", out.embed_ms);
            timings.insert("lexical", lexical.ms);
            timings.insert("trigram", trigram.ms);
            timings.insert("semantic", semantic.ms);
            timings.insert("arms", out.arms_ms);

            let t = Instant::now();
            let lists = [
                (Arm::Lexical, lexical.candidates.as_slice()),
                (Arm::Trigram, trigram.candidates.as_slice()),
                (Arm::Semantic, semantic.candidates.as_slice()),
            ];
            let fused = match variant.weights {
                None => fusion::fuse(&lists, profile.rrf_k, profile.pool_size),
                Some([l, t, s]) => fusion::fuse_weighted(
                    &lists,
                    &[(Arm::Lexical, l), (Arm::Trigram, t), (Arm::Semantic, s)],
                    profile.rrf_k,
                    profile.pool_size,
                ),
            };
            // Exact identifier matches are pinned in front of the fused pool.
            let mut members: Vec<Member> = Vec::with_capacity(profile.pool_size);
            for id in &exact_ids {
                let f = fused.iter().find(|f| &f.product_id == id);
                members.push(Member::new(
                    id.clone(),
                    f.map_or([None; 3], |f| f.signals),
                    f.map(|f| f.rrf_score),
                    0,
                    true,
                    "exact_identifier".into(),
                ));
            }
            for f in fused {
                if members.len() >= profile.pool_size {
                    break;
                }
                if !exact_ids.contains(&f.product_id) {
                    let reason = match_reason(&f.signals);
                    members.push(Member::new(
                        f.product_id,
                        f.signals,
                        Some(f.rrf_score),
                        0,
                        false,
                        reason,
                    ));
                }
            }
            for (i, m) in members.iter_mut().enumerate() {
                m.pre_rerank_rank = i as i32 + 1;
            }
            timings.insert("fusion", ms(t));
            arm_results.insert("lexical", lexical);
            arm_results.insert("trigram", trigram);
            arm_results.insert("semantic", semantic);
            let strategy = if exact_ids.is_empty() {
                Strategy::Hybrid
            } else {
                Strategy::ExactIdentifier
            };
            (strategy, members)
        }
    };

    // Catalog fields for the pool, and what the reranker reads of the
    // catalog when it scores from it (the local one).
    let t = Instant::now();
    let reads_catalog = req.normalized_query.is_some()
        && req.rerank
        && variant.rerank
        && !members.is_empty()
        && ctx
            .reranker
            .as_ref()
            .is_some_and(|r| r.reads() == rerank::Reads::Catalog);
    let ids: Vec<String> = members.iter().map(|m| m.product_id.clone()).collect();
    let tx = crate::db::bounded_transaction(client, profile.statement_timeout_ms, true).await?;
    let rows = tx
        .query(include_str!("sql/hydrate.sql"), &[&ids, &reads_catalog])
        .await?;
    // The rerank stage's catalog statistics for the query's lexemes, read in
    // the same transaction: the reranker itself touches no connection.
    let lexeme_rows = match (&positive, reads_catalog) {
        (Some(p), true) => {
            tx.query(include_str!("sql/query_lexemes.sql"), &[p])
                .await?
        }
        _ => Vec::new(),
    };
    tx.commit().await?;
    // The connection goes back to the pool while the reranker runs; the
    // receipt takes one again.
    conn.settle();
    drop(conn);
    let mut products: BTreeMap<String, ProductRow> = BTreeMap::new();
    for r in rows {
        let attributes = match r.get::<_, Value>(12) {
            Value::Object(m) => m,
            _ => Map::new(),
        };
        products.insert(
            r.get(0),
            ProductRow {
                sku: r.get(1),
                model: r.get(2),
                brand: r.get(3),
                title: r.get(4),
                domain: r.get(5),
                category_key: r.get(6),
                description: r.get(7),
                price_cents: r.get(8),
                currency: r.get(9),
                rating: r.get(10),
                availability: r.get(11),
                attributes,
                source_uri: r.get(13),
                revision: r.get(14),
                document: r.get(15),
            },
        );
    }
    members.retain(|m| products.contains_key(&m.product_id));
    for m in &mut members {
        let p = &products[&m.product_id];
        m.source_uri = p.source_uri.clone();
        m.source_revision = p.revision;
    }
    timings.insert("hydrate", ms(t));

    // 6: rerank under a deadline.
    let t = Instant::now();
    let rerank_status: String = match (&req.normalized_query, &ctx.reranker) {
        (None, _) => "skipped_metadata_only".into(),
        _ if !req.rerank || !variant.rerank => "skipped_by_request".into(),
        _ if members.is_empty() => "skipped_empty_pool".into(),
        (Some(_), None) => {
            warnings.push("rerank skipped: no reranker is configured".into());
            "skipped_no_reranker".into()
        }
        (Some(q), Some(reranker)) => {
            let sent = members.len().min(profile.rerank_candidates);
            let deadline = Duration::from_millis(profile.rerank_deadline_ms);
            let query = positive.as_deref().unwrap_or(q);
            let pool = rerank_pool(
                query,
                reranker.reads(),
                &lexeme_rows,
                &members[..sent],
                &products,
            );
            match tokio::time::timeout(deadline, reranker.rerank(&pool)).await {
                Ok(Ok(scored)) => {
                    let pinned: Vec<usize> = (0..members.len())
                        .filter(|&i| members[i].exact_match)
                        .collect();
                    let r = rerank::apply(members.len(), sent, &pinned, &scored);
                    if !r.ignored.is_empty() {
                        warnings.push(format!(
                            "reranker returned {} unknown or repeated indices; they were ignored",
                            r.ignored.len()
                        ));
                    }
                    for (i, s) in r.scores.iter().enumerate() {
                        members[i].rerank_score = *s;
                    }
                    let old = std::mem::take(&mut members);
                    let mut slots: Vec<Option<Member>> = old.into_iter().map(Some).collect();
                    members = r.order.iter().filter_map(|&i| slots[i].take()).collect();
                    "reranked".into()
                }
                Ok(Err(e)) => {
                    tracing::warn!(error = %e, "rerank failed; keeping the fused order");
                    warnings.push("rerank failed; the fused order was kept".into());
                    "fallback_fused".into()
                }
                Err(_) => {
                    warnings.push(format!(
                        "rerank exceeded its {} ms deadline; the fused order was kept",
                        profile.rerank_deadline_ms
                    ));
                    "fallback_fused".into()
                }
            }
        }
    };
    timings.insert("rerank", ms(t));

    // 7: serve and grant.
    for (i, m) in members.iter_mut().enumerate() {
        let rank = i as i32 + 1;
        m.final_rank = rank;
        m.served_rank = (i64::from(rank) <= req.limit).then_some(rank);
        m.granted = i64::from(rank) <= req.authorized_limit;
    }
    let semantic_route = arm_results.get("semantic").and_then(|a| a.mode.clone());
    let eligible_estimate = arm_results
        .get("semantic")
        .and_then(|a| a.eligible_estimate);
    let models = json!({
        "embedding": ctx.embedder.as_ref().map(|e| e.model_id().to_string()),
        "reranker": ctx.reranker.as_ref().map(|r| r.model_id().to_string()),
    });
    let served_count = members.iter().filter(|m| m.served_rank.is_some()).count() as i32;
    timings.insert("total_before_receipt", ms(started));

    // 8: the receipt, before the answer.
    let id = Uuid::new_v4();
    let t = Instant::now();
    let record = EventRecord {
        id,
        principal,
        req: &req,
        strategy,
        semantic_route: semantic_route.clone(),
        eligible_estimate,
        rerank_status: &rerank_status,
        models: &models,
        arms: serde_json::to_value(&arm_results).map_err(|e| Error::Internal(e.to_string()))?,
        timings: &timings,
        warnings: &warnings,
        profile: profile.snapshot(),
        served_count,
        replay,
    };
    let mut conn = ctx.conn().await?;
    receipt::write(&mut conn, &record, &members, profile.statement_timeout_ms)
        .await
        .map_err(|e| {
            tracing::error!(error = %e, search_event_id = %id, "receipt write failed; nothing served");
            Error::from(e)
        })?;
    conn.settle();
    drop(conn);
    timings.insert("receipt", ms(t));
    timings.insert("total", ms(started));
    tracing::info!(search_event_id = %id, strategy = strategy.as_str(), pool = members.len(),
                   rerank = %rerank_status, total_ms = timings["total"], "search served");

    let results = members
        .iter()
        .filter(|m| m.served_rank.is_some())
        .map(|m| {
            let p = &products[&m.product_id];
            let score = match strategy {
                Strategy::MetadataOnly => None,
                _ => m.rerank_score.or(m.rrf_score),
            };
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
                rating: p.rating.map(|r| (f64::from(r) * 100.0).round() / 100.0),
                availability: p.availability.clone(),
                attributes: p.attributes.clone(),
                granted: m.granted,
                score,
                match_reason: m.match_reason.clone(),
                exact_match: m.exact_match,
                signals: Signals {
                    lexical: m.signals[0].map(Into::into),
                    trigram: m.signals[1].map(Into::into),
                    semantic: m.signals[2].map(Into::into),
                    rrf_score: m.rrf_score,
                    pre_rerank_rank: m.pre_rerank_rank,
                    rerank_score: m.rerank_score,
                },
                source: Source {
                    uri: p.source_uri.clone(),
                    revision: p.revision,
                },
            }
        })
        .collect();
    let diagnostics = req.include_diagnostics.then(|| Diagnostics {
        strategy,
        arms: arm_results,
        semantic_route,
        eligible_estimate,
        pool_size: members.len(),
        rerank_status: rerank_status.clone(),
        models,
        timings_ms: timings,
        warnings,
    });
    Ok(SearchResponse {
        search_event_id: id,
        strategy,
        normalized_query: req.normalized_query.clone(),
        applied_filters: req.filters.clone(),
        limit: req.limit,
        authorized_limit: req.authorized_limit,
        results,
        diagnostics,
    })
}

impl Member {
    fn new(
        product_id: String,
        signals: [Option<ArmSignal>; 3],
        rrf_score: Option<f64>,
        pre_rerank_rank: i32,
        exact_match: bool,
        match_reason: String,
    ) -> Self {
        Member {
            product_id,
            signals,
            rrf_score,
            pre_rerank_rank,
            rerank_score: None,
            exact_match,
            match_reason,
            final_rank: pre_rerank_rank,
            served_rank: None,
            granted: false,
            source_uri: String::new(),
            source_revision: 1,
        }
    }
}

/// `search_products` over a JSON argument object of the given shape, for
/// transports that speak JSON.
pub async fn search_json(
    ctx: &Ctx,
    principal: &Principal,
    args: &Value,
    shape: Shape,
) -> Result<Value, Error> {
    let req = SearchRequest::from_json(args, shape, &ctx.profile)?;
    let resp = search(ctx, principal, req).await?;
    serde_json::to_value(resp).map_err(|e| Error::Internal(e.to_string()))
}
