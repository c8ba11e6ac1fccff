//! Scoped operations: evidence, comparison and explanation of one retrieval
//! event, bounded by what that event granted to its principal.
//!
//! Every refusal (unknown or malformed scope id, event of another principal,
//! event without explicit authorization, product outside the grant, product
//! that does not exist) is the same [`Error::NotFound`].

use crate::context::{Ctx, Principal};
use crate::error::Error;
use serde_json::Value;

/// `get_product_evidence`: `args` is the flat logical-argument object
/// (`retrieval_scope_id`, `product_id`, `evidence_query`, optional `limit`).
pub async fn get_product_evidence(
    _ctx: &Ctx,
    _principal: &Principal,
    _args: &Value,
) -> Result<Value, Error> {
    Err(Error::NotFound)
}

/// `compare_products`: `retrieval_scope_id`, `product_ids` (2..5, distinct).
pub async fn compare_products(
    _ctx: &Ctx,
    _principal: &Principal,
    _args: &Value,
) -> Result<Value, Error> {
    Err(Error::NotFound)
}

/// `explain_retrieval`: `retrieval_scope_id`.
pub async fn explain_retrieval(
    _ctx: &Ctx,
    _principal: &Principal,
    _args: &Value,
) -> Result<Value, Error> {
    Err(Error::NotFound)
}
