//! Replaying recorded searches: "this query used to return X first — what
//! changed?", and the honest check of a tuning change.
//!
//! [`replay`] re-runs one recorded search through the serving pipeline
//! ([`crate::search`]) with the recorded request (normalised query,
//! filters, limit, authorized limit, whether it was reranked) as the
//! recorded principal, under the recorded profile snapshot or the current
//! profile ([`ProfileChoice`]), against the current catalog and models. Its
//! receipt names the replayed event (`sql/0013_receipt_replay.sql`) and
//! lists the replayed pool's members that no longer pass the recorded
//! filters, checked just before the search runs; the difference between
//! the two receipts is then [`diff`]'s business alone, and the cause of
//! each move [`cause`]'s.
//!
//! [`replay_sample`] replays a random sample of the events since a date and
//! summarises the moves.
//!
//! Replaying reads the catalog and writes receipts, nothing else. It is an
//! operator's tool (`mosaic replay`, on the owner role): no HTTP route,
//! Lambda or MCP tool exposes it. [`Caller::Operator`] may replay any
//! event that carries an explicit authorization; [`Caller::Principal`]
//! only the principal's own, and every refusal is the generic
//! [`Error::NotFound`]. The session id is not carried over: a replay is not
//! part of the caller's session.

pub mod cause;
pub mod diff;

pub use cause::Cause;
pub use diff::{FieldChange, Move, MoveKind, Place, ReplayDiff, ReplayReport};

use crate::context::{Ctx, Principal};
use crate::error::Error;
use crate::profile::RetrievalProfile;
use crate::receipt::ReplayOf;
use crate::receipt::{self, Event, Receipt};
use crate::search::arms::{self, Eligibility};
use crate::search::{RerankStatus, SearchRequest, Shape};
use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::json;
use std::collections::{BTreeMap, BTreeSet};
use uuid::Uuid;

/// Which profile a replay runs with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ProfileChoice {
    /// The replayed event's snapshot (fields it predates keep the current
    /// values): only the catalog and the models differ.
    Recorded,
    /// The replaying process's profile: tuning changes show too.
    Current,
}

impl ProfileChoice {
    pub fn as_str(self) -> &'static str {
        match self {
            ProfileChoice::Recorded => "recorded",
            ProfileChoice::Current => "current",
        }
    }
}

/// Who asks for the replay.
#[derive(Debug, Clone, Copy)]
pub enum Caller<'a> {
    /// The owner role (any event): it reads the receipt tables, which the
    /// runtime role reaches only through their functions.
    Operator,
    /// A principal: its own events only.
    Principal(&'a Principal),
}

/// What a replay starts from, read in one transaction.
struct Recorded {
    principal: Principal,
    receipt: Receipt,
    profile: RetrievalProfile,
    request: SearchRequest,
    ineligible: Vec<String>,
}

/// Replays event `event`; returns the two receipts' differences.
pub async fn replay(
    ctx: &Ctx,
    caller: Caller<'_>,
    event: Uuid,
    choice: ProfileChoice,
) -> Result<ReplayReport, Error> {
    let rec = recorded(ctx, caller, event, choice).await?;
    let origin = ReplayOf {
        event,
        profile: choice.as_str(),
        ineligible: rec.ineligible,
    };
    let mut replaying = ctx.clone();
    replaying.profile = rec.profile;
    let served =
        crate::search::search_replaying(&replaying, &rec.principal, rec.request, &origin).await?;
    let replay = read_receipt(ctx, served.search_event_id, &rec.principal)
        .await?
        .ok_or_else(|| Error::Internal("the replay's receipt cannot be read back".into()))?;
    Ok(ReplayReport::between(&rec.receipt, &replay))
}

/// Reads the replayed receipt and everything the replay needs from it.
async fn recorded(
    ctx: &Ctx,
    caller: Caller<'_>,
    event: Uuid,
    choice: ProfileChoice,
) -> Result<Recorded, Error> {
    let mut conn = ctx.conn().await?;
    let tx =
        crate::db::bounded_transaction(&mut conn, ctx.profile.statement_timeout_ms, true).await?;
    let principal = match caller {
        Caller::Principal(p) => p.clone(),
        Caller::Operator => match receipt::principal_of(&tx, event).await? {
            Some(p) => Principal(p),
            None => return Err(Error::NotFound),
        },
    };
    let receipt = receipt::read(&tx, event, principal.as_str())
        .await?
        .ok_or(Error::NotFound)?;
    // An evaluation variant's search ran parts of the pipeline only; the
    // serving pipeline would report its variant as drift.
    if receipt.event.profile.get("evaluation_variant").is_some() {
        return Err(Error::invalid(
            "search_event_id",
            "this event is an evaluation variant's search (`mosaic eval`), not a served one; \
             replay compares served searches",
        ));
    }
    let profile = match choice {
        ProfileChoice::Recorded => {
            ctx.profile
                .with_snapshot(&receipt.event.profile)
                .map_err(|e| {
                    Error::invalid(
                        "profile",
                        format!(
                            "the event's recorded profile is not accepted by this service ({e}); \
                         replay it with the current profile"
                        ),
                    )
                })?
        }
        ProfileChoice::Current => ctx.profile.clone(),
    };
    let request = request_of(&receipt.event, &profile)?;
    let elig = Eligibility::with_query(&request.filters, request.normalized_query.as_deref());
    let pool: Vec<String> = receipt.pool.iter().map(|c| c.product_id.clone()).collect();
    let eligible: BTreeSet<String> = arms::eligible_among(&tx, &elig, &pool)
        .await?
        .into_iter()
        .collect();
    tx.commit().await?;
    conn.settle();
    let ineligible = pool.into_iter().filter(|p| !eligible.contains(p)).collect();
    Ok(Recorded {
        principal,
        receipt,
        profile,
        request,
        ineligible,
    })
}

/// The recorded request, validated again (under `profile`), with the
/// recorded normalised query.
fn request_of(e: &Event, profile: &RetrievalProfile) -> Result<SearchRequest, Error> {
    let mut args = json!({
        "filters": e.applied_filters,
        "limit": e.limit,
        "authorized_limit": e.authorized_limit,
        "rerank": e.rerank_status != RerankStatus::SkippedByRequest,
    });
    if let Some(q) = &e.query_text {
        args["query"] = json!(q);
    }
    let mut req = SearchRequest::from_json(&args, Shape::Nested, profile)?;
    req.normalized_query = e.normalized_query.clone();
    Ok(req)
}

/// One receipt, read as `principal`.
async fn read_receipt(
    ctx: &Ctx,
    id: Uuid,
    principal: &Principal,
) -> Result<Option<Receipt>, Error> {
    ctx.read_only(async |tx| receipt::read(tx, id, principal.as_str()).await)
        .await
}

/// One event of a sample, in brief.
#[derive(Debug, Clone, Serialize)]
pub struct SampledReplay {
    pub replayed_event_id: Uuid,
    pub replay_event_id: Uuid,
    pub empty: bool,
    pub top1_unchanged: bool,
    pub served_displacement: f64,
    pub changes: usize,
    pub moves: usize,
}

/// An event of the sample that could not be replayed.
#[derive(Debug, Clone, Serialize)]
pub struct FailedReplay {
    pub replayed_event_id: Uuid,
    pub error: String,
}

/// What replaying a sample of recent searches changed.
#[derive(Debug, Clone, Serialize)]
pub struct SampleSummary {
    pub since: DateTime<Utc>,
    pub profile: ProfileChoice,
    pub replayed: usize,
    /// Replays whose diff is empty.
    pub unchanged: usize,
    /// Share of the replays whose first served product is the same.
    pub top1_unchanged_share: f64,
    /// Mean over the replays of each one's mean served-rank displacement.
    pub mean_served_displacement: f64,
    /// Products served before and not after, by the cause of their move.
    pub left_window_by_cause: BTreeMap<Cause, usize>,
    /// Products that left the pool, by cause.
    pub left_pool_by_cause: BTreeMap<Cause, usize>,
    pub events: Vec<SampledReplay>,
    pub failed: Vec<FailedReplay>,
}

/// Replays up to `n` events recorded since `since`, chosen at random
/// (replays themselves left out), one after the other, as an operator.
pub async fn replay_sample(
    ctx: &Ctx,
    n: i64,
    since: DateTime<Utc>,
    choice: ProfileChoice,
) -> Result<SampleSummary, Error> {
    let ids = ctx
        .read_only(async |tx| Ok(receipt::sample(tx, since, n).await?))
        .await?;
    let mut reports = Vec::new();
    let mut failed = Vec::new();
    for id in ids {
        match replay(ctx, Caller::Operator, id, choice).await {
            Ok(r) => reports.push(r),
            Err(e) => failed.push(FailedReplay {
                replayed_event_id: id,
                error: e.to_string(),
            }),
        }
    }
    Ok(summarise(since, choice, &reports, failed))
}

fn summarise(
    since: DateTime<Utc>,
    profile: ProfileChoice,
    reports: &[ReplayReport],
    failed: Vec<FailedReplay>,
) -> SampleSummary {
    let n = reports.len();
    let share = |count: usize| if n == 0 { 0.0 } else { count as f64 / n as f64 };
    let mut left_window_by_cause = BTreeMap::new();
    let mut left_pool_by_cause = BTreeMap::new();
    for m in reports.iter().flat_map(|r| &r.diff.moves) {
        let was_served = m.before.is_some_and(|p| p.served_rank.is_some());
        let not_served = m.after.is_none_or(|p| p.served_rank.is_none());
        if was_served && not_served {
            *left_window_by_cause.entry(m.cause).or_insert(0) += 1;
        }
        if m.change == MoveKind::LeftPool {
            *left_pool_by_cause.entry(m.cause).or_insert(0) += 1;
        }
    }
    SampleSummary {
        since,
        profile,
        replayed: n,
        unchanged: reports.iter().filter(|r| r.diff.empty).count(),
        top1_unchanged_share: share(reports.iter().filter(|r| r.diff.top1_unchanged).count()),
        mean_served_displacement: reports
            .iter()
            .map(|r| r.diff.served_displacement)
            .sum::<f64>()
            / n.max(1) as f64,
        left_window_by_cause,
        left_pool_by_cause,
        events: reports
            .iter()
            .map(|r| SampledReplay {
                replayed_event_id: r.replayed_event_id,
                replay_event_id: r.replay_event_id,
                empty: r.diff.empty,
                top1_unchanged: r.diff.top1_unchanged,
                served_displacement: r.diff.served_displacement,
                changes: r.diff.changes.len(),
                moves: r.diff.moves.len(),
            })
            .collect(),
        failed,
    }
}
