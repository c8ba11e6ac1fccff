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
//!    run on up to three connections at once when the pool has them idle,
//!    and the semantic arm's walks of each domain's graph on a fourth
//!    ([`lanes`]);
//! 4. the semantic arm routes on selectivity (exact scan or HNSW);
//! 5. the arms are fused with unweighted RRF into a bounded pool;
//! 6. the pool is reranked under a deadline (fused order on failure);
//! 7. the top `limit` are served, the first `authorized_limit` granted;
//! 8. the event and every pool member are written in one transaction before
//!    the answer leaves; if that fails, nothing is served (503).
//!
//! `pipeline` runs them as one call per stage: `candidates` (2–5, with
//! `metadata_only` and `pool_of`), `hydrate` (the pool's catalog fields,
//! `hydration.rs`), `rerank_stage` (6), `grant` (7), `persist` (8) and
//! `respond` (the answer, whose types are in `response.rs`).

pub mod arms;
pub mod bounds;
pub mod fusion;
mod hydration;
mod lanes;
pub mod request;
mod response;
pub mod trgm;
pub mod understand;

use hydration::{hydrate, reads_catalog, Hydrated, ProductRow};
pub use request::{Filters, SearchRequest, Shape};
pub use response::{
    Diagnostics, RerankStatus, SearchResponse, SearchResult, SignalOut, Signals, Source, Strategy,
};

use crate::context::{Ctx, Principal};
use crate::embed::EmbedKind;
use crate::error::Error;
use crate::receipt::{self, EventRecord, ReplayOf};
use crate::rerank;
use arms::{ArmResults, Eligibility};
use fusion::{Arm, ArmSignal};
use serde::Serialize;
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};
use tokio_postgres::types::Type;
use uuid::Uuid;

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
    /// How it stood against the query's stated bounds, when they ordered
    /// the pool ([`keep_bounds`]).
    pub bounds: Option<bounds::Standing>,
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
        Ok(Ok(mut v)) if v.len() == 1 => {
            // A vector the column cannot take would fail the arms'
            // statements: it is an embedding failure like any other.
            let v = v.remove(0);
            if v.len() != embedder.dimension() {
                return Err(format!(
                    "semantic arm skipped: the embedding model returned {} dimensions, not {}",
                    v.len(),
                    embedder.dimension()
                ));
            }
            if !v.iter().all(|x| x.is_finite()) {
                return Err(
                    "semantic arm skipped: the query embedding holds a value that is not a finite number"
                        .into(),
                );
            }
            Ok(pgvector::Vector::from(v))
        }
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

/// Timings, warnings and the query-understanding record, collected along
/// the pipeline.
#[derive(Default)]
struct Trace {
    timings: BTreeMap<&'static str, f64>,
    warnings: Vec<String>,
    understanding: Option<understand::Understanding>,
}

/// The candidates before hydration (stages 2–5).
struct Candidates {
    /// The filters and negated terms the arms applied, which hydration
    /// checks again.
    elig: Eligibility,
    strategy: Strategy,
    arms: ArmResults,
    members: Vec<Member>,
    /// The arms' extra lanes, to be committed ([`lanes::finish`]).
    spare: Vec<crate::db::Conn>,
}

/// The pipeline of the module comment, one stage per call; `replay` names
/// the event a replay re-runs, for its receipt.
async fn pipeline(
    ctx: &Ctx,
    principal: &Principal,
    req: SearchRequest,
    variant: &Variant,
    replay: Option<&ReplayOf>,
) -> Result<SearchResponse, Error> {
    let started = Instant::now();
    let mut trace = Trace::default();
    // The candidate reads (arms, catalog fields, lexeme statistics) take a
    // connection of the read pool (a replica when configured, the writer
    // while the replica cannot be reached: `Ctx::search_reads`); it cancels
    // its statement if this search is abandoned at a deadline. The receipt
    // is written on the writer.
    let (mut conn, on_writer) = ctx.search_reads().await?;
    let ctx = match &on_writer {
        Some(writer) => {
            trace
                .warnings
                .push(crate::context::READ_ON_WRITER.to_string());
            writer
        }
        None => ctx,
    };
    // Negated terms are enforced by the eligibility predicate; the
    // similarity-based stages (arms, rerank) see only what the caller wants.
    let positive = req.normalized_query.as_deref().map(without_negations);
    let found = candidates(
        ctx,
        &mut conn,
        &req,
        variant,
        positive.as_deref(),
        &mut trace,
    )
    .await?;
    // What the reranker scores against: the query without its negated
    // terms; none when the request or the variant turned the stage off.
    let rerank_query = positive.as_deref().filter(|_| req.rerank && variant.rerank);
    let reads_catalog = reads_catalog(ctx, rerank_query, &found.members);
    // The arms' extra lanes commit while hydration reads (and ends the
    // search connection's transaction): both in the same round trip.
    let (mut pool, ()) = tokio::try_join!(
        hydrate(
            &mut conn,
            &found.elig,
            found.members,
            positive.as_deref(),
            reads_catalog
        ),
        async { lanes::finish(found.spare).await.map_err(Error::from) },
    )?;
    trace.timings.insert("hydrate", pool.ms);
    if pool.dropped > 0 {
        trace.warnings.push(match pool.dropped {
            1 => "1 pool member was dropped: its product left the catalog or the filters while \
                  the search ran"
                .to_string(),
            n => format!(
                "{n} pool members were dropped: their products left the catalog or the filters \
                 while the search ran"
            ),
        });
    }
    // The connection goes back to the pool while the reranker runs; the
    // receipt takes one again.
    conn.settle();
    drop(conn);
    let status = rerank_stage(
        ctx,
        rerank_query,
        req.normalized_query.is_none(),
        &mut pool.hydrated,
        &mut trace,
    )
    .await;
    grant(&mut pool.hydrated.members, &req);
    let id = persist(
        ctx,
        principal,
        &req,
        &found.arms,
        found.strategy,
        status,
        &pool.hydrated.members,
        replay,
        variant,
        started,
        &mut trace,
    )
    .await?;
    Ok(respond(
        ctx,
        id,
        req,
        found.strategy,
        found.arms,
        status,
        pool.hydrated,
        trace,
    ))
}

/// Stages 2–5: the strategy, the arms and the fused pool (or the filters'
/// order for a metadata-only search). Leaves the read-only transaction of
/// `client` open for [`hydrate`].
async fn candidates(
    ctx: &Ctx,
    client: &mut tokio_postgres::Client,
    req: &SearchRequest,
    variant: &Variant,
    positive: Option<&str>,
    trace: &mut Trace,
) -> Result<Candidates, Error> {
    let elig = Eligibility::with_query(&req.filters, req.normalized_query.as_deref());
    let Some(q) = req.normalized_query.as_deref() else {
        return metadata_only(client, elig, &ctx.profile, trace).await;
    };
    let positive = positive.unwrap_or(q);
    let out = lanes::run_arms(ctx, client, variant, &elig, q, positive).await?;
    trace.warnings.extend(out.warning);
    trace.understanding = Some(out.understanding);
    trace.timings.insert("understand", out.understand_ms);
    trace.timings.insert("embed", out.embed_ms);
    trace.timings.insert("lexical", out.lexical.ms);
    trace.timings.insert("trigram", out.trigram.ms);
    trace.timings.insert("semantic", out.semantic.ms);
    trace.timings.insert("arms", out.arms_ms);
    let t = Instant::now();
    let lists = [
        (Arm::Lexical, out.lexical.candidates.as_slice()),
        (Arm::Trigram, out.trigram.candidates.as_slice()),
        (Arm::Semantic, out.semantic.candidates.as_slice()),
    ];
    let profile = &ctx.profile;
    let fused = match variant.weights {
        None => fusion::fuse(&lists, profile.rrf_k, profile.pool_size),
        Some([l, t, s]) => fusion::fuse_weighted(
            &lists,
            &[(Arm::Lexical, l), (Arm::Trigram, t), (Arm::Semantic, s)],
            profile.rrf_k,
            profile.pool_size,
        ),
    };
    let members = pool_of(&out.exact_ids, fused, profile.pool_size);
    trace.timings.insert("fusion", arms::ms_since(t));
    let strategy = match out.exact_ids.is_empty() {
        true => Strategy::Hybrid,
        false => Strategy::ExactIdentifier,
    };
    let arms = ArmResults {
        lexical: Some(out.lexical),
        semantic: Some(out.semantic),
        trigram: Some(out.trigram),
    };
    Ok(Candidates {
        elig,
        strategy,
        arms,
        members,
        spare: out.spare,
    })
}

/// A metadata-only search: the eligible products in the filters' order.
async fn metadata_only(
    client: &mut tokio_postgres::Client,
    elig: Eligibility,
    profile: &crate::profile::RetrievalProfile,
    trace: &mut Trace,
) -> Result<Candidates, Error> {
    let t = Instant::now();
    // In a read-only transaction, so that the statement is bounded by the
    // same `SET LOCAL statement_timeout` as the arms' (connections through
    // RDS Proxy have no session default). One round trip (`db::begin`);
    // the transaction stays open for hydration, which ends it.
    let client = &*client;
    let (_, ids) = tokio::try_join!(
        lanes::open(client, profile),
        arms::metadata_only(client, &elig, profile.pool_size as i64),
    )?;
    trace.timings.insert("metadata", arms::ms_since(t));
    let members = ids.into_iter().map(Member::filtered).collect();
    Ok(Candidates {
        elig,
        strategy: Strategy::MetadataOnly,
        arms: ArmResults::default(),
        members,
        spare: Vec::new(),
    })
}

/// The pool: exact identifier matches pinned in front of the fused order,
/// at most `size` members (hydration ranks them).
fn pool_of(exact_ids: &[String], fused: Vec<fusion::Fused>, size: usize) -> Vec<Member> {
    let mut members: Vec<Member> = exact_ids
        .iter()
        .map(|id| Member::exact(id.clone(), fused.iter().find(|f| &f.product_id == id)))
        .collect();
    let rest = fused
        .into_iter()
        .filter(|f| !exact_ids.contains(&f.product_id));
    members.extend(rest.map(Member::fused));
    members.truncate(size.max(exact_ids.len()));
    members
}

/// Stage 6: the rerank under its deadline. `query` is what the reranker
/// scores against, `None` when the request or the variant turned the stage
/// off; on failure or past the deadline the fused order stands. Then the
/// members that keep the query's stated bounds go first ([`keep_bounds`]),
/// whether the reranker answered or not.
async fn rerank_stage(
    ctx: &Ctx,
    query: Option<&str>,
    metadata_only: bool,
    pool: &mut Hydrated,
    trace: &mut Trace,
) -> RerankStatus {
    let t = Instant::now();
    let status = match (query, &ctx.reranker) {
        _ if metadata_only => RerankStatus::SkippedMetadataOnly,
        (None, _) => RerankStatus::SkippedByRequest,
        _ if pool.members.is_empty() => RerankStatus::SkippedEmptyPool,
        (Some(_), None) => {
            trace
                .warnings
                .push("rerank skipped: no reranker is configured".into());
            RerankStatus::SkippedNoReranker
        }
        (Some(q), Some(reranker)) => {
            rerank_with(&ctx.profile, reranker.as_ref(), q, pool, trace).await
        }
    };
    // A filters-only search has no query here.
    if let (Some(q), Some(u), 1) = (
        query,
        trace.understanding.as_mut(),
        ctx.profile.rerank_stated_bounds,
    ) {
        u.bounds = bounds::stated(q);
        let before: Vec<i32> = pool.members.iter().map(|m| m.pre_rerank_rank).collect();
        keep_bounds(q, &mut u.bounds, &mut pool.members, &pool.products);
        // After a fallback the warning said the fused order was kept; say
        // so when the bounds then moved it.
        let moved = pool
            .members
            .iter()
            .map(|m| m.pre_rerank_rank)
            .ne(before.iter().copied());
        if status == RerankStatus::FallbackFused && moved {
            trace.warnings.push(
                "the query's stated bounds then ordered the fused pool: the members that keep \
                 them come first"
                    .into(),
            );
        }
    }
    trace.timings.insert("rerank", arms::ms_since(t));
    status
}

/// Sends the first `rerank_candidates` members to `reranker` and reorders
/// the pool by its answer (exact matches stay pinned).
async fn rerank_with(
    profile: &crate::profile::RetrievalProfile,
    reranker: &dyn rerank::Reranker,
    query: &str,
    pool: &mut Hydrated,
    trace: &mut Trace,
) -> RerankStatus {
    let sent = pool.members.len().min(profile.rerank_candidates);
    let deadline = Duration::from_millis(profile.rerank_deadline_ms);
    let input = rerank_pool(
        query,
        reranker.reads(),
        &pool.lexeme_rows,
        &pool.members[..sent],
        &pool.products,
    );
    let scored = match tokio::time::timeout(deadline, reranker.rerank(&input)).await {
        Ok(Ok(scored)) => scored,
        Ok(Err(e)) => {
            tracing::warn!(error = %e, "rerank failed; keeping the fused order");
            trace
                .warnings
                .push("rerank failed; the fused order was kept".into());
            return RerankStatus::FallbackFused;
        }
        Err(_) => {
            trace.warnings.push(format!(
                "rerank exceeded its {} ms deadline; the fused order was kept",
                profile.rerank_deadline_ms
            ));
            return RerankStatus::FallbackFused;
        }
    };
    let members = &mut pool.members;
    let pinned: Vec<usize> = (0..members.len())
        .filter(|&i| members[i].exact_match)
        .collect();
    let r = rerank::apply(members.len(), sent, &pinned, &scored);
    if !r.ignored.is_empty() {
        trace.warnings.push(format!(
            "reranker returned {} unknown, repeated or non-finite entries; they were ignored",
            r.ignored.len()
        ));
    }
    // An answer that scores nothing reorders nothing: the fused order is
    // served, and the receipt says the rerank fell back. One that scores
    // some of the members sent puts the rest after them, in fused order.
    let scored_count = r.scores.iter().filter(|s| s.is_some()).count();
    if scored_count == 0 {
        trace.warnings.push(format!(
            "reranker scored none of the {sent} members sent; the fused order was kept"
        ));
        return RerankStatus::FallbackFused;
    }
    if scored_count < sent {
        trace.warnings.push(format!(
            "reranker scored {scored_count} of the {sent} members sent; the others follow in fused order"
        ));
    }
    for (i, s) in r.scores.iter().enumerate() {
        members[i].rerank_score = *s;
    }
    let mut slots: Vec<Option<Member>> = std::mem::take(members).into_iter().map(Some).collect();
    *members = r.order.iter().filter_map(|&i| slots[i].take()).collect();
    RerankStatus::Reranked
}

/// The pool with the members that keep the query's stated bounds first
/// ([`bounds::Standing::of`]: fewer broken, then more kept), the order it had
/// standing within each and exact identifier matches in front; each
/// member's standing is kept for the receipt. A bound no member keeps is
/// set aside (and marked so): it would only put the members that lack its
/// field first. Each member is checked against each bound once.
fn keep_bounds(
    query: &str,
    stated: &mut [bounds::Bound],
    members: &mut [Member],
    products: &BTreeMap<String, ProductRow>,
) {
    if stated.is_empty() {
        return;
    }
    let words = bounds::words(query);
    // Each member's answer to each bound (none for a product that is gone).
    let verdicts: Vec<Vec<Option<bool>>> = members
        .iter()
        .map(|m| match products.get(&m.product_id) {
            Some(p) => {
                let facts = bounds::Facts {
                    price_cents: p.price_cents,
                    currency: &p.currency,
                    rating: p.shown_rating(),
                    attributes: &p.attributes,
                };
                stated
                    .iter()
                    .map(|b| bounds::keeps(b, &facts, &words))
                    .collect()
            }
            None => vec![None; stated.len()],
        })
        .collect();
    for (j, b) in stated.iter_mut().enumerate() {
        b.set_aside = !verdicts.iter().any(|v| v[j] == Some(true));
    }
    if stated.iter().all(|b| b.set_aside) {
        return;
    }
    for (m, v) in members.iter_mut().zip(&verdicts) {
        let in_effect = v.iter().zip(stated.iter()).filter(|(_, b)| !b.set_aside);
        m.bounds = Some(bounds::Standing::of(in_effect.map(|(v, _)| *v)));
    }
    members.sort_by_key(|m| {
        let s = m.bounds.unwrap_or_default();
        (!m.exact_match, s.broken, std::cmp::Reverse(s.kept))
    });
}

/// Stage 7: the first `limit` are served, the first `authorized_limit`
/// granted.
fn grant(members: &mut [Member], req: &SearchRequest) {
    for (i, m) in members.iter_mut().enumerate() {
        let rank = i as i32 + 1;
        m.final_rank = rank;
        m.served_rank = (i64::from(rank) <= req.limit).then_some(rank);
        m.granted = i64::from(rank) <= req.authorized_limit;
    }
}

/// The models whose output the search used, as recorded and reported: the
/// embedding model when the semantic arm ran on a query vector, the
/// reranker when its scores ordered the pool; `null` for a stage that did
/// not use one (a filters-only search, `rerank: false`, an embedding or a
/// rerank that failed, which the warnings name).
fn models(ctx: &Ctx, arms: &ArmResults, rerank_status: RerankStatus) -> Value {
    let embedded = arms
        .get(Arm::Semantic)
        .is_some_and(|a| a.verdict != arms::Verdict::Skipped);
    json!({
        "embedding": ctx.embedder.as_ref().filter(|_| embedded).map(|e| e.model_id().to_string()),
        "reranker": ctx
            .reranker
            .as_ref()
            .filter(|_| rerank_status == RerankStatus::Reranked)
            .map(|r| r.model_id().to_string()),
    })
}

/// The profile snapshot a receipt records; an evaluation variant's search
/// (`mosaic eval`) also records the variant under `evaluation_variant`, so
/// that its receipt cannot pass for a serving search's (replay samples
/// leave it out).
fn profile_of(ctx: &Ctx, variant: &Variant) -> Value {
    let mut profile = ctx.profile.snapshot();
    if *variant != Variant::SERVING {
        profile["evaluation_variant"] = json!({
            "arms": {
                "lexical": variant.arms[0],
                "trigram": variant.arms[1],
                "semantic": variant.arms[2],
            },
            "weights": variant.weights,
            "rerank": variant.rerank,
        });
    }
    profile
}

/// Stage 8: the event and every pool member, in one transaction, before the
/// answer leaves; if the write fails nothing is served.
#[allow(clippy::too_many_arguments)]
async fn persist(
    ctx: &Ctx,
    principal: &Principal,
    req: &SearchRequest,
    arms: &ArmResults,
    strategy: Strategy,
    rerank_status: RerankStatus,
    members: &[Member],
    replay: Option<&ReplayOf>,
    variant: &Variant,
    started: Instant,
    trace: &mut Trace,
) -> Result<Uuid, Error> {
    let served_count = members.iter().filter(|m| m.served_rank.is_some()).count() as i32;
    trace
        .timings
        .insert("total_before_receipt", arms::ms_since(started));
    let t = Instant::now();
    let semantic = arms.get(Arm::Semantic);
    let record = EventRecord {
        principal,
        req,
        strategy,
        semantic_route: semantic.and_then(|a| a.mode).map(|m| m.to_string()),
        eligible_estimate: semantic.and_then(|a| a.eligible_estimate),
        rerank_status,
        models: &models(ctx, arms, rerank_status),
        arms: serde_json::to_value(arms).map_err(|e| Error::Internal(e.to_string()))?,
        timings: &trace.timings,
        warnings: &trace.warnings,
        profile: profile_of(ctx, variant),
        served_count,
        replay,
        understanding: trace.understanding.as_ref(),
    };
    let mut conn = ctx.conn().await?;
    let id = receipt::write(
        &mut conn,
        &record,
        members,
        ctx.profile.statement_timeout_ms,
    )
    .await
    .map_err(|e| {
        tracing::error!(error = %e, "receipt write failed; nothing served");
        Error::from(e)
    })?;
    conn.settle();
    drop(conn);
    trace.timings.insert("receipt", arms::ms_since(t));
    trace.timings.insert("total", arms::ms_since(started));
    tracing::info!(search_event_id = %id, strategy = strategy.as_str(), pool = members.len(),
                   rerank = %rerank_status, total_ms = trace.timings["total"], "search served");
    Ok(id)
}

/// The answer: the served results and, when asked for, the diagnostics.
#[allow(clippy::too_many_arguments)]
fn respond(
    ctx: &Ctx,
    id: Uuid,
    req: SearchRequest,
    strategy: Strategy,
    arms: ArmResults,
    rerank_status: RerankStatus,
    pool: Hydrated,
    trace: Trace,
) -> SearchResponse {
    let results = pool
        .members
        .iter()
        .filter(|m| m.served_rank.is_some())
        .map(|m| SearchResult::of(m, &pool.products[&m.product_id], strategy))
        .collect();
    let corrected_query = trace
        .understanding
        .as_ref()
        .and_then(|u| u.corrected_query.clone());
    let excluded_words = req
        .normalized_query
        .as_deref()
        .map(|q| arms::lexical_terms(q).negated)
        .unwrap_or_default()
        .into_iter()
        .map(|w| w.trim_start_matches('-').to_string())
        .collect();
    let diagnostics = req.include_diagnostics.then(|| {
        let models = models(ctx, &arms, rerank_status);
        let semantic = arms.get(Arm::Semantic);
        Diagnostics {
            strategy,
            semantic_route: semantic.and_then(|a| a.mode).map(|m| m.to_string()),
            eligible_estimate: semantic.and_then(|a| a.eligible_estimate),
            arms,
            pool_size: pool.members.len(),
            rerank_status,
            models,
            timings_ms: trace.timings,
            warnings: trace.warnings,
            query_understanding: trace.understanding,
        }
    });
    SearchResponse {
        search_event_id: id,
        strategy,
        normalized_query: req.normalized_query,
        corrected_query,
        applied_filters: req.filters,
        excluded_words,
        limit: req.limit,
        authorized_limit: req.authorized_limit,
        results,
        diagnostics,
    }
}

impl Member {
    fn base(product_id: String, match_reason: String) -> Self {
        Member {
            product_id,
            signals: [None; 3],
            rrf_score: None,
            pre_rerank_rank: 0,
            rerank_score: None,
            exact_match: false,
            match_reason,
            final_rank: 0,
            served_rank: None,
            granted: false,
            source_uri: String::new(),
            source_revision: 1,
            bounds: None,
        }
    }

    /// A metadata-only member (hydration ranks it in the filters' order).
    fn filtered(product_id: String) -> Self {
        Member::base(product_id, "filter".into())
    }

    /// An exact identifier match, with its fused signals when it was fused.
    fn exact(product_id: String, fused: Option<&fusion::Fused>) -> Self {
        Member {
            signals: fused.map_or([None; 3], |f| f.signals),
            rrf_score: fused.map(|f| f.rrf_score),
            exact_match: true,
            ..Member::base(product_id, "exact_identifier".into())
        }
    }

    /// A fused member; its reason names the arms that found it.
    fn fused(f: fusion::Fused) -> Self {
        let reason = match_reason(&f.signals);
        Member {
            signals: f.signals,
            rrf_score: Some(f.rrf_score),
            ..Member::base(f.product_id, reason)
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
