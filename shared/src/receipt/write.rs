//! Writing a search receipt: the event and every pool member, in one
//! transaction whose statements are bounded by the profile's
//! `statement_timeout_ms`. The runtime role writes a receipt only through
//! `receipts.record` (`sql/0026`), which writes a new event and its whole
//! pool, so a receipt, once written, is never rewritten or added to. Event
//! and candidates carry the transaction's start time as `created_at` and
//! `event_created_at` (their day partition, see `sql/0012`).

use crate::context::Principal;
use crate::search::understand::Understanding;
use crate::search::{Member, RerankStatus, SearchRequest, Strategy};
use serde_json::Value;
use std::collections::BTreeMap;
use tokio_postgres::types::Type;
use tokio_postgres::Client;
use uuid::Uuid;

/// Everything the receipt records about the event.
pub(crate) struct EventRecord<'a> {
    pub principal: &'a Principal,
    pub req: &'a SearchRequest,
    pub strategy: Strategy,
    pub semantic_route: Option<String>,
    pub eligible_estimate: Option<i64>,
    pub rerank_status: RerankStatus,
    pub models: &'a Value,
    pub arms: Value,
    pub timings: &'a BTreeMap<&'static str, f64>,
    pub warnings: &'a [String],
    pub profile: Value,
    pub served_count: i32,
    /// Set when the search replays a recorded one.
    pub replay: Option<&'a ReplayOf>,
    /// What query understanding did; none for a filters-only search.
    pub understanding: Option<&'a Understanding>,
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

/// Writes the receipt of one search and returns its `search_event_id`: the
/// event and its pool in one call of `receipts.record` (`sql/0026`), the
/// runtime role's only way to write a receipt, which draws the event's id
/// itself. The call runs inside a transaction bounded by the statement
/// timeout and sent as one pipeline ([`crate::db::begin`]): the start, the
/// bound, the call and the commit in one round trip. Success means the
/// commit succeeded.
pub(crate) async fn write(
    client: &mut Client,
    ev: &EventRecord<'_>,
    members: &[Member],
    statement_timeout_ms: u64,
) -> Result<Uuid, tokio_postgres::Error> {
    let client = &*client;
    let (_, _, id, _) = tokio::try_join!(
        crate::db::begin(client, false),
        crate::db::set_statement_timeout(client, statement_timeout_ms),
        record(client, ev, members),
        crate::db::commit(client),
    )?;
    Ok(id)
}

/// The call of `receipts.record`: the event's columns, then one array per
/// column of `receipts.search_candidates`, an element per pool member; it
/// returns the event's id.
async fn record(
    tx: &Client,
    ev: &EventRecord<'_>,
    members: &[Member],
) -> Result<Uuid, tokio_postgres::Error> {
    let filters = serde_json::to_value(&ev.req.filters).unwrap_or(Value::Null);
    let timings = serde_json::to_value(ev.timings).unwrap_or(Value::Null);
    let warnings = serde_json::to_value(ev.warnings).unwrap_or(Value::Null);
    let pool_size = members.len() as i32;
    let limit = ev.req.limit as i32;
    let authorized = ev.req.authorized_limit as i32;
    let replays = ev.replay.map(|r| r.event);
    let replay_profile = ev.replay.map(|r| r.profile);
    let replay_ineligible = ev.replay.map(|r| r.ineligible.as_slice());
    let understanding = ev
        .understanding
        .map(|u| serde_json::to_value(u).unwrap_or(Value::Null));
    let principal = ev.principal.as_str();
    let strategy = ev.strategy.as_str();
    let rerank_status = ev.rerank_status.as_str();

    let col =
        |f: &dyn Fn(&Member) -> Option<f64>| members.iter().map(f).collect::<Vec<Option<f64>>>();
    let rank = |arm: usize| {
        members
            .iter()
            .map(|m| m.signals[arm].map(|s| s.rank))
            .collect::<Vec<Option<i32>>>()
    };
    let ids: Vec<&str> = members.iter().map(|m| m.product_id.as_str()).collect();
    let pre: Vec<i32> = members.iter().map(|m| m.pre_rerank_rank).collect();
    let final_rank: Vec<i32> = members.iter().map(|m| m.final_rank).collect();
    let served: Vec<Option<i32>> = members.iter().map(|m| m.served_rank).collect();
    let granted: Vec<bool> = members.iter().map(|m| m.granted).collect();
    let exact: Vec<bool> = members.iter().map(|m| m.exact_match).collect();
    let reason: Vec<&str> = members.iter().map(|m| m.match_reason.as_str()).collect();
    let uri: Vec<&str> = members.iter().map(|m| m.source_uri.as_str()).collect();
    let rev: Vec<i32> = members.iter().map(|m| m.source_revision).collect();
    let (lexical, trigram, semantic) = (rank(0), rank(1), rank(2));
    let score = |arm: usize| col(&|m| m.signals[arm].map(|s| s.score));
    let (lexical_score, trigram_score, semantic_score) = (score(0), score(1), score(2));
    let rrf = col(&|m| m.rrf_score);
    let rerank = col(&|m| m.rerank_score);
    let standing = |f: fn(&crate::search::bounds::Standing) -> u16| {
        members
            .iter()
            .map(|m| m.bounds.as_ref().map(|s| f(s) as i16))
            .collect::<Vec<Option<i16>>>()
    };
    let (broken, kept) = (standing(|s| s.broken), standing(|s| s.kept));
    let row = tx
        .query_typed_one(
        "SELECT receipts.record($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15,
                                $16, $17, $18, $19, $20, $21, $22, $23, $24, $25, $26, $27, $28,
                                $29, $30, $31, $32, $33, $34, $35, $36, $37, $38, $39, $40, $41)",
        &[
            (&principal, Type::TEXT),
            (&ev.req.session_id, Type::TEXT),
            (&ev.req.query, Type::TEXT),
            (&ev.req.normalized_query, Type::TEXT),
            (&filters, Type::JSONB),
            (&strategy, Type::TEXT),
            (&ev.semantic_route, Type::TEXT),
            (&ev.eligible_estimate, Type::INT8),
            (&pool_size, Type::INT4),
            (&limit, Type::INT4),
            (&authorized, Type::INT4),
            (&ev.served_count, Type::INT4),
            (&rerank_status, Type::TEXT),
            (ev.models, Type::JSONB),
            (&ev.arms, Type::JSONB),
            (&timings, Type::JSONB),
            (&warnings, Type::JSONB),
            (&ev.profile, Type::JSONB),
            (&replays, Type::UUID),
            (&replay_profile, Type::TEXT),
            (&replay_ineligible, Type::TEXT_ARRAY),
            (&understanding, Type::JSONB),
            (&ids, Type::TEXT_ARRAY),
            (&pre, Type::INT4_ARRAY),
            (&lexical, Type::INT4_ARRAY),
            (&lexical_score, Type::FLOAT8_ARRAY),
            (&trigram, Type::INT4_ARRAY),
            (&trigram_score, Type::FLOAT8_ARRAY),
            (&semantic, Type::INT4_ARRAY),
            (&semantic_score, Type::FLOAT8_ARRAY),
            (&rrf, Type::FLOAT8_ARRAY),
            (&rerank, Type::FLOAT8_ARRAY),
            (&final_rank, Type::INT4_ARRAY),
            (&served, Type::INT4_ARRAY),
            (&granted, Type::BOOL_ARRAY),
            (&exact, Type::BOOL_ARRAY),
            (&reason, Type::TEXT_ARRAY),
            (&uri, Type::TEXT_ARRAY),
            (&rev, Type::INT4_ARRAY),
            (&broken, Type::INT2_ARRAY),
            (&kept, Type::INT2_ARRAY),
        ],
    )
    .await?;
    Ok(row.get(0))
}
