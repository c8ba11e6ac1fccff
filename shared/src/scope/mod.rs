//! Scoped operations: evidence, comparison and explanation of one retrieval
//! event, bounded by what that event granted to its principal.
//!
//! A `retrieval_scope_id` is the `search_event_id` of a receipt. It is a
//! capability handle: evidence and comparison are allowed only for products
//! the event *granted* (served within its `authorized_limit`) to the same
//! principal, and the grant is checked in the same SQL statement that reads
//! the data, so there is no window between check and use. Explanation reads
//! the whole receipt and grants nothing.
//!
//! Every refusal (unknown or malformed scope id, event of another principal,
//! event without explicit authorization, product outside the grant, product
//! that does not exist) is the same [`Error::NotFound`]. Malformed *input*
//! (wrong types, unknown fields, out-of-range numbers) is a 400 naming the
//! field, checked before anything runs; a database failure is
//! [`Error::Unavailable`]. Every string argument, path ids included, is
//! checked for control characters ([`check_text`]) before anything runs.
//!
//! Each operation reads in one read-only transaction whose statements the
//! server stops after the profile's `statement_timeout_ms`, on a connection
//! that cancels its statement if the operation is abandoned at a deadline
//! ([`Ctx::read_only`](crate::context::Ctx)).

mod compare;
mod evidence;
mod explain;

pub use compare::{
    compare, AttributeMatrix, CompareRequest, CompareResponse, ComparedProduct, MatrixRow,
    ServedReceipt,
};
pub use evidence::{
    evidence, EvidenceRequest, EvidenceResponse, EvidenceSignals, EvidenceUnit, Intent,
};
pub use explain::{explain, ExplainRequest, ExplainResponse};

use crate::context::{Ctx, Principal};
use crate::error::Error;
use crate::operation::Operation;
use crate::search::request::{self, check_text, TextKind};
use serde_json::{Map, Value};
use uuid::Uuid;

/// `get_product_evidence` over the flat logical-argument object
/// (`retrieval_scope_id`, `product_id`, `evidence_query`, optional `limit`),
/// for transports that speak JSON.
pub async fn get_product_evidence(
    ctx: &Ctx,
    principal: &Principal,
    args: &Value,
) -> Result<Value, Error> {
    Operation::GetProductEvidence
        .call(ctx, principal, args)
        .await
}

/// `compare_products` over `retrieval_scope_id`, `product_ids` (2..5,
/// distinct).
pub async fn compare_products(
    ctx: &Ctx,
    principal: &Principal,
    args: &Value,
) -> Result<Value, Error> {
    Operation::CompareProducts.call(ctx, principal, args).await
}

/// `explain_retrieval` over `retrieval_scope_id`.
pub async fn explain_retrieval(
    ctx: &Ctx,
    principal: &Principal,
    args: &Value,
) -> Result<Value, Error> {
    Operation::ExplainRetrieval.call(ctx, principal, args).await
}

/// The longest product id the catalog accepts.
pub const MAX_PRODUCT_ID_CHARS: usize = 64;

/// The argument object, with every key checked against `allowed`.
fn object<'a>(args: &'a Value, allowed: &[&str]) -> Result<&'a Map<String, Value>, Error> {
    let obj = args
        .as_object()
        .ok_or_else(|| Error::invalid_json("the arguments must be a JSON object"))?;
    match obj.keys().find(|k| !allowed.contains(&k.as_str())) {
        Some(k) => Err(Error::unknown_field(k)),
        None => Ok(obj),
    }
}

/// A parsed `retrieval_scope_id`: `None` when the string is not a UUID.
///
/// A malformed id is not a 400 but a refusal, like any unknown id; the
/// caller turns `None` into [`Error::NotFound`] once every other argument
/// has been validated.
fn scope_id(obj: &Map<String, Value>) -> Result<Option<Uuid>, Error> {
    const F: &str = "retrieval_scope_id";
    match obj.get(F) {
        None | Some(Value::Null) => Err(Error::invalid(F, format!("`{F}` is required"))),
        Some(Value::String(s)) => {
            check_text(F, s, TextKind::Token)?;
            Ok(Uuid::try_parse(s.trim()).ok())
        }
        Some(_) => Err(Error::invalid(F, format!("`{F}` must be a string"))),
    }
}

/// A product id: a non-empty string of at most 64 characters. Whether it
/// exists is not a validation question: an unknown id is a refusal.
fn product_id(v: &Value, field: &str) -> Result<String, Error> {
    if let Value::String(s) = v {
        check_text(field, s, TextKind::Token)?;
    }
    match v {
        Value::String(s) if !s.is_empty() && s.chars().count() <= MAX_PRODUCT_ID_CHARS => {
            Ok(s.clone())
        }
        _ => Err(Error::invalid(
            field,
            format!("`{field}` must be a product id: a string of 1 to {MAX_PRODUCT_ID_CHARS} characters"),
        )),
    }
}

/// A required free-text argument: at most `max` chars, no control
/// characters, normalised as a search query is (whitespace runs as one
/// space, invisible characters dropped: [`request::normalize_query`]), and
/// not empty once normalised.
fn text(obj: &Map<String, Value>, field: &str, max: usize) -> Result<String, Error> {
    let v = obj.get(field).unwrap_or(&Value::Null);
    if v.is_null() {
        return Err(Error::invalid(field, format!("`{field}` is required")));
    }
    request::string(v, field, max, TextKind::Prose)?
        .map(|t| request::normalize_query(&t))
        .filter(|t| !t.is_empty())
        .ok_or_else(|| Error::invalid(field, format!("`{field}` must not be empty")))
}

/// An optional whole number in `min..=max`, `default` when absent.
fn integer(
    obj: &Map<String, Value>,
    field: &str,
    min: i64,
    max: i64,
    default: i64,
) -> Result<i64, Error> {
    let v = obj.get(field).unwrap_or(&Value::Null);
    Ok(request::integer(v, field, min, max)?.unwrap_or(default))
}

/// A `real` star rating as the number it was written as (4.3, not
/// 4.300000190734863): the shortest decimal that round-trips the `f32`.
fn stars(r: Option<f32>) -> Option<f64> {
    r.map(|x| x.to_string().parse().unwrap_or(f64::from(x)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn scope_ids_parse() {
        let id = Uuid::new_v4().to_string();
        let obj = json!({"retrieval_scope_id": id});
        assert_eq!(
            scope_id(obj.as_object().unwrap())
                .unwrap()
                .map(|u| u.to_string()),
            Some(id)
        );
        let malformed = json!({"retrieval_scope_id": "P0000001"});
        assert_eq!(scope_id(malformed.as_object().unwrap()).unwrap(), None);
        for bad in [json!({}), json!({"retrieval_scope_id": 7})] {
            assert_eq!(
                scope_id(bad.as_object().unwrap()).unwrap_err().status(),
                400
            );
        }
    }

    #[test]
    fn star_ratings_keep_their_written_value() {
        assert_eq!(stars(Some(4.3)), Some(4.3));
        assert_eq!(stars(Some(3.8)), Some(3.8));
        assert_eq!(stars(None), None);
    }
}
