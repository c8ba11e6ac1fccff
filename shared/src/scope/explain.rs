//! `explain_retrieval`: the persisted receipt of one retrieval event, as its
//! principal may read it: what the search did and every pool candidate.
//!
//! The event is read only when it belongs to the principal and carries an
//! explicit authorization (`sql/explain_event.sql`); the pool statement
//! (`sql/explain_pool.sql`) repeats that predicate, so neither statement
//! alone can read another principal's receipt. Receipts are append-only and
//! written in one transaction, so the two reads always agree.
//!
//! Explanation grants nothing: a pool-only candidate seen here is still
//! refused by evidence and comparison.
//!
//! The explanation of a replay (`mosaic replay`, [`crate::replay`]) carries
//! `replay`: the replayed event's id and what changed between the two
//! receipts. It is there only when the replayed event is one the caller
//! may read too, under the very same predicate (its principal, an explicit
//! authorization); otherwise, say once the replayed event is purged, the
//! key is absent and nothing tells whether the other event exists.

use super::{bounded_read, object, scope_id, ReceiptSignals};
use crate::context::{Ctx, Principal};
use crate::error::Error;
use crate::replay::ReplayReport;
use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::Value;
use tokio_postgres::{Row, Transaction};
use uuid::Uuid;

const EVENT_SQL: &str = include_str!("sql/explain_event.sql");
const POOL_SQL: &str = include_str!("sql/explain_pool.sql");
const FIELDS: &[&str] = &["retrieval_scope_id"];

/// Returned with every explanation.
pub const NOTE: &str = "pre_rerank_rank is the rank in the fused candidate pool (1..pool_size); \
served_rank is the rank in the window the caller was served (1..limit, null when not served). \
They are different rank spaces and are not comparable. final_rank is the order after reranking. \
Only granted candidates (served_rank <= authorized_limit) may be used for evidence or \
comparison; this explanation grants nothing.";

#[derive(Debug, Serialize)]
pub struct Candidate {
    pub product_id: String,
    /// Pool rank space: 1..pool_size, before reranking.
    pub pre_rerank_rank: i32,
    /// Window rank space: 1..limit; null when the candidate was not served.
    pub served_rank: Option<i32>,
    /// Order after reranking, over the whole pool.
    pub final_rank: i32,
    pub granted: bool,
    pub exact_match: bool,
    pub match_reason: String,
    pub signals: ReceiptSignals,
    source: crate::search::Source,
}

#[derive(Debug, Serialize)]
pub struct Event {
    pub search_event_id: Uuid,
    created_at: DateTime<Utc>,
    session_id: Option<String>,
    pub query_text: Option<String>,
    pub normalized_query: Option<String>,
    pub applied_filters: Value,
    pub strategy: String,
    pub semantic_route: Option<String>,
    pub eligible_estimate: Option<i64>,
    pub arms: Value,
    pub rerank_status: crate::search::RerankStatus,
    pub models: Value,
    pub profile: Value,
    timings_ms: Value,
    pub warnings: Value,
    pub limit: i32,
    pub authorized_limit: i32,
    pool_size: i32,
    pub served_count: i32,
    /// The event this one replays, and how (`sql/0013_receipt_replay.sql`);
    /// shown only through `replay`, under the rules above.
    #[serde(skip)]
    pub replays_event_id: Option<Uuid>,
    #[serde(skip)]
    pub replay_profile: Option<String>,
    #[serde(skip)]
    pub replay_ineligible: Vec<String>,
}

/// One receipt as its principal may read it: the event and its whole pool,
/// in pool order.
#[derive(Debug)]
pub(crate) struct Receipt {
    pub event: Event,
    pub pool: Vec<Candidate>,
}

impl Event {
    fn from_row(e: &Row) -> Self {
        Event {
            search_event_id: e.get("search_event_id"),
            created_at: e.get("created_at"),
            session_id: e.get("session_id"),
            query_text: e.get("query_text"),
            normalized_query: e.get("normalized_query"),
            applied_filters: e.get("applied_filters"),
            strategy: e.get("strategy"),
            semantic_route: e.get("semantic_route"),
            eligible_estimate: e.get("eligible_estimate"),
            arms: e.get("arms"),
            rerank_status: e.get("rerank_status"),
            models: e.get("models"),
            profile: e.get("profile"),
            timings_ms: e.get("timings_ms"),
            warnings: e.get("warnings"),
            limit: e.get("result_limit"),
            authorized_limit: e.get("authorized_limit"),
            pool_size: e.get("pool_size"),
            served_count: e.get("served_count"),
            replays_event_id: e.get("replays_event_id"),
            replay_profile: e.get("replay_profile"),
            replay_ineligible: e
                .get::<_, Option<Vec<String>>>("replay_ineligible")
                .unwrap_or_default(),
        }
    }
}

impl Candidate {
    fn from_row(r: &Row) -> Self {
        Candidate {
            product_id: r.get("product_id"),
            pre_rerank_rank: r.get("pre_rerank_rank"),
            served_rank: r.get("served_rank"),
            final_rank: r.get("final_rank"),
            granted: r.get("granted"),
            exact_match: r.get("exact_match"),
            match_reason: r.get("match_reason"),
            signals: ReceiptSignals::from_row(r),
            source: crate::search::Source {
                uri: r.get("source_uri"),
                revision: r.get("source_revision"),
            },
        }
    }
}

/// Reads receipt `id` if `principal` may read it (its own, with an
/// explicit authorization); `None` otherwise, whatever the reason.
pub(crate) async fn read_receipt(
    tx: &Transaction<'_>,
    id: Uuid,
    principal: &str,
) -> Result<Option<Receipt>, Error> {
    let Some(e) = tx.query_opt(EVENT_SQL, &[&id, &principal]).await? else {
        return Ok(None);
    };
    let rows = tx.query(POOL_SQL, &[&id, &principal]).await?;
    Ok(Some(Receipt {
        event: Event::from_row(&e),
        pool: rows.iter().map(Candidate::from_row).collect(),
    }))
}

/// A validated `explain_retrieval` request.
#[derive(Debug, Clone, PartialEq)]
pub struct ExplainRequest {
    /// `None` when the id is not a UUID: refused when the request runs,
    /// like any unknown scope.
    pub retrieval_scope_id: Option<Uuid>,
}

impl ExplainRequest {
    /// Validates the flat logical-argument object.
    pub fn from_json(args: &Value) -> Result<Self, Error> {
        let obj = object(args, FIELDS)?;
        Ok(ExplainRequest {
            retrieval_scope_id: scope_id(obj)?,
        })
    }
}

/// The answer: the event's fields, its whole pool, the replay (when there
/// is one the caller may read) and the note on rank spaces.
#[derive(Debug, Serialize)]
pub struct ExplainResponse {
    #[serde(flatten)]
    pub event: Event,
    pub retrieval_scope_id: Uuid,
    pub pool: Vec<Candidate>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replay: Option<ReplayReport>,
    pub note: &'static str,
}

/// Runs `explain_retrieval`.
pub async fn explain(
    ctx: &Ctx,
    principal: &Principal,
    req: ExplainRequest,
) -> Result<ExplainResponse, Error> {
    let Some(scope) = req.retrieval_scope_id else {
        return Err(Error::NotFound);
    };
    let mut conn = ctx.conn().await?;
    let tx = bounded_read(&mut conn, ctx).await?;
    let receipt = read_receipt(&tx, scope, principal.as_str()).await?;
    // The replayed event, under the same predicate as this one.
    let replayed = match receipt.as_ref().and_then(|r| r.event.replays_event_id) {
        Some(id) => read_receipt(&tx, id, principal.as_str()).await?,
        None => None,
    };
    tx.commit().await?;
    conn.settle();
    let Some(receipt) = receipt else {
        return Err(Error::NotFound);
    };
    Ok(ExplainResponse {
        replay: replayed.map(|before| ReplayReport::between(&before, &receipt)),
        event: receipt.event,
        retrieval_scope_id: scope,
        pool: receipt.pool,
        note: NOTE,
    })
}
