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

use super::{bounded_read, object, scope_id, to_json, ReceiptSignals};
use crate::context::{Ctx, Principal};
use crate::error::Error;
use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::{json, Value};
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
struct Candidate {
    product_id: String,
    /// Pool rank space: 1..pool_size, before reranking.
    pre_rerank_rank: i32,
    /// Window rank space: 1..limit; null when the candidate was not served.
    served_rank: Option<i32>,
    /// Order after reranking, over the whole pool.
    final_rank: i32,
    granted: bool,
    exact_match: bool,
    match_reason: String,
    signals: ReceiptSignals,
    source: Source,
}

#[derive(Debug, Serialize)]
struct Source {
    uri: String,
    /// The catalog revision the product had when the event ran.
    revision: i32,
}

#[derive(Debug, Serialize)]
struct Event {
    search_event_id: Uuid,
    created_at: DateTime<Utc>,
    session_id: Option<String>,
    query_text: Option<String>,
    normalized_query: Option<String>,
    applied_filters: Value,
    strategy: String,
    semantic_route: Option<String>,
    eligible_estimate: Option<i64>,
    arms: Value,
    rerank_status: String,
    models: Value,
    profile: Value,
    timings_ms: Value,
    warnings: Value,
    limit: i32,
    authorized_limit: i32,
    pool_size: i32,
    served_count: i32,
}

pub(super) async fn run(ctx: &Ctx, principal: &Principal, args: &Value) -> Result<Value, Error> {
    let obj = object(args, FIELDS)?;
    let Some(scope) = scope_id(obj)? else {
        return Err(Error::NotFound);
    };

    let mut conn = ctx.conn().await?;
    let tx = bounded_read(&mut conn, ctx).await?;
    let e = tx
        .query_opt(EVENT_SQL, &[&scope, &principal.as_str()])
        .await?;
    let rows = match e {
        Some(_) => tx.query(POOL_SQL, &[&scope, &principal.as_str()]).await?,
        None => Vec::new(),
    };
    tx.commit().await?;
    conn.settle();
    let Some(e) = e else {
        return Err(Error::NotFound);
    };
    let event = Event {
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
    };

    let pool: Vec<Candidate> = rows
        .iter()
        .map(|r| Candidate {
            product_id: r.get("product_id"),
            pre_rerank_rank: r.get("pre_rerank_rank"),
            served_rank: r.get("served_rank"),
            final_rank: r.get("final_rank"),
            granted: r.get("granted"),
            exact_match: r.get("exact_match"),
            match_reason: r.get("match_reason"),
            signals: ReceiptSignals::from_row(r),
            source: Source {
                uri: r.get("source_uri"),
                revision: r.get("source_revision"),
            },
        })
        .collect();

    let mut out = to_json(&event)?;
    out["retrieval_scope_id"] = json!(scope);
    out["pool"] = to_json(&pool)?;
    out["note"] = json!(NOTE);
    Ok(out)
}
