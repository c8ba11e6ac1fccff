//! Reading receipts back, in the shapes every reader shares: the event
//! ([`Event`]), its pool ([`Candidate`], in pool order) and the arms'
//! signals of one candidate ([`ReceiptSignals`]).
//!
//! [`read`] is the principal's read (`explain_retrieval`, replays): the
//! event only when it belongs to the principal and carries an explicit
//! authorization (`sql/read_event.sql`), and the pool statement
//! (`sql/read_pool.sql`) repeats that predicate, so neither statement alone
//! can read another principal's receipt. Receipts are append-only and
//! written in one transaction, and the two reads share one snapshot (the
//! read-only transaction is REPEATABLE READ, [`crate::db::bounded_transaction`]),
//! so they agree even when a retention purge runs between them.
//!
//! The operator reads ([`principal_of`], [`sample`], [`tally`],
//! [`event_count`]) run on the owner role: replaying any event, sampling
//! recent ones, checking a load test's receipts.

use crate::error::Error;
use crate::search::SignalOut;
use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::Value;
use tokio_postgres::{Client, Row, Transaction};
use uuid::Uuid;

const EVENT_SQL: &str = include_str!("sql/read_event.sql");
const POOL_SQL: &str = include_str!("sql/read_pool.sql");

/// The principal an event is bound to, for an operator's replay.
const PRINCIPAL_SQL: &str = "SELECT principal FROM receipts.search_events \
     WHERE search_event_id = $1 AND authorized_limit IS NOT NULL LIMIT 1";

/// A random sample of the searches since $1 ($2 at most), replays and
/// evaluation variants' searches left out.
const SAMPLE_SQL: &str = "SELECT search_event_id FROM receipts.search_events \
     WHERE created_at >= $1 AND authorized_limit IS NOT NULL AND replays_event_id IS NULL \
       AND NOT profile ? 'evaluation_variant' \
     ORDER BY random() LIMIT $2";

/// What one event's receipt holds, counted: served count and pool size as
/// recorded, the candidate rows written, the served ranks of the granted
/// ones.
const TALLY_SQL: &str = "SELECT served_count, pool_size,
                    (SELECT count(*) FROM receipts.search_candidates c WHERE c.search_event_id = e.search_event_id AND c.event_created_at = e.created_at),
                    ARRAY(SELECT c.served_rank FROM receipts.search_candidates c
                          WHERE c.search_event_id = e.search_event_id AND c.event_created_at = e.created_at
                            AND c.granted ORDER BY c.served_rank)
             FROM receipts.search_events e WHERE e.search_event_id = $1";

const COUNT_SQL: &str = "SELECT count(*) FROM receipts.search_events";

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
    /// What query understanding did (corrections, identifiers); absent for
    /// a filters-only search and for events recorded before it existed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub query_understanding: Option<Value>,
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
pub struct Receipt {
    pub event: Event,
    pub pool: Vec<Candidate>,
}

impl Event {
    /// A row of `sql/read_event.sql`.
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
            query_understanding: e.get("query_understanding"),
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
    /// A row of `sql/read_pool.sql`.
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
pub(crate) async fn read(
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

/// What a receipt recorded about one candidate's retrieval, read from a row
/// holding the `receipts.search_candidates` signal columns by name.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ReceiptSignals {
    pub lexical: Option<SignalOut>,
    pub trigram: Option<SignalOut>,
    pub semantic: Option<SignalOut>,
    pub rrf_score: Option<f64>,
    pub rerank_score: Option<f64>,
    /// How many of the query's stated bounds it broke and kept, when they
    /// ordered the pool (absent in receipts from before they were kept).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bounds: Option<crate::search::bounds::Standing>,
}

impl ReceiptSignals {
    pub(crate) fn from_row(row: &Row) -> Self {
        let arm = |arm: &str| {
            let rank: Option<i32> = row.get(format!("{arm}_rank").as_str());
            let score: Option<f64> = row.get(format!("{arm}_score").as_str());
            rank.zip(score)
                .map(|(rank, score)| SignalOut { rank, score })
        };
        ReceiptSignals {
            lexical: arm("lexical"),
            trigram: arm("trigram"),
            semantic: arm("semantic"),
            rrf_score: row.get("rrf_score"),
            rerank_score: row.get("rerank_score"),
            bounds: row
                .get::<_, Option<i16>>("bounds_broken")
                .zip(row.get::<_, Option<i16>>("bounds_kept"))
                .map(|(broken, kept)| crate::search::bounds::Standing {
                    broken: broken.max(0) as u16,
                    kept: kept.max(0) as u16,
                }),
        }
    }
}

/// The principal event `id` is bound to, if it carries an explicit
/// authorization.
pub(crate) async fn principal_of(
    tx: &Transaction<'_>,
    id: Uuid,
) -> Result<Option<String>, tokio_postgres::Error> {
    Ok(tx.query_opt(PRINCIPAL_SQL, &[&id]).await?.map(|r| r.get(0)))
}

/// Up to `n` events recorded since `since`, chosen at random, replays
/// left out.
pub(crate) async fn sample(
    tx: &Transaction<'_>,
    since: DateTime<Utc>,
    n: i64,
) -> Result<Vec<Uuid>, tokio_postgres::Error> {
    let rows = tx.query(SAMPLE_SQL, &[&since, &n.max(0)]).await?;
    Ok(rows.iter().map(|r| r.get(0)).collect())
}

/// One event's receipt, counted ([`tally`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tally {
    pub served_count: i32,
    pub pool_size: i32,
    /// Candidate rows written for the event.
    pub candidate_rows: i64,
    /// The served ranks of the granted candidates, in order.
    pub granted_served_ranks: Vec<Option<i32>>,
}

/// Counts what the receipt of event `id` holds, whoever it belongs to
/// (owner role); `None` when there is no such event.
pub async fn tally(client: &Client, id: Uuid) -> Result<Option<Tally>, tokio_postgres::Error> {
    Ok(client.query_opt(TALLY_SQL, &[&id]).await?.map(|r| Tally {
        served_count: r.get(0),
        pool_size: r.get(1),
        candidate_rows: r.get(2),
        granted_served_ranks: r.get(3),
    }))
}

/// How many events the receipts hold (owner role).
pub async fn event_count(client: &Client) -> Result<i64, tokio_postgres::Error> {
    Ok(client.query_one(COUNT_SQL, &[]).await?.get(0))
}
