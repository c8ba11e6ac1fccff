//! `explain_retrieval`: the persisted receipt of one retrieval event, as its
//! principal may read it: what the search did and every pool candidate.
//!
//! The receipt is read with [`crate::receipt`]'s principal read: the event
//! only when it belongs to the principal and carries an explicit
//! authorization, its pool under the same predicate.
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

use super::{object, scope_id};
use crate::context::{Ctx, Principal};
use crate::error::Error;
use crate::receipt::{self, Candidate, Event};
use crate::replay::ReplayReport;
use serde::Serialize;
use serde_json::Value;
use uuid::Uuid;

const FIELDS: &[&str] = &["retrieval_scope_id"];

/// Returned with every explanation.
pub const NOTE: &str = "pre_rerank_rank is the rank in the fused candidate pool (1..pool_size); \
served_rank is the rank in the window the caller was served (1..limit, null when not served). \
They are different rank spaces and are not comparable. final_rank is the order after reranking. \
Only granted candidates (served_rank <= authorized_limit) may be used for evidence or \
comparison; this explanation grants nothing.";

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
    let (receipt, replayed) = ctx
        .read_only(async |tx| {
            let receipt = receipt::read(tx, scope, principal.as_str()).await?;
            // The replayed event, under the same predicate as this one.
            let replayed = match receipt.as_ref().and_then(|r| r.event.replays_event_id) {
                Some(id) => receipt::read(tx, id, principal.as_str()).await?,
                None => None,
            };
            Ok((receipt, replayed))
        })
        .await?;
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
