//! `compare_products`: two to five products granted by one retrieval scope,
//! side by side.
//!
//! One SQL statement (`sql/compare.sql`) joins the principal's authorized
//! event, its granted candidates and their catalog rows for the requested
//! ids; unless every id comes back, the call is refused without saying
//! which id failed. Nothing is retrieved anew and nothing widens the set.
//!
//! The output is a function of the receipt and the catalog alone: products
//! in served order, each with its catalog fields and receipt signals, and an
//! attribute matrix over the sorted union of attribute keys, with explicit
//! nulls where a product lacks a key.

use super::{object, product_id, scope_id, stars};
use crate::context::{Ctx, Principal};
use crate::error::Error;
use crate::receipt::ReceiptSignals;
use crate::search::request::{check_text, TextKind};
use serde::Serialize;
use serde_json::{Map, Value};
use std::collections::{BTreeMap, BTreeSet};
use tokio_postgres::Row;
use uuid::Uuid;

const SQL: &str = include_str!("sql/compare.sql");
const FIELDS: &[&str] = &["retrieval_scope_id", "product_ids"];
const FIELD: &str = "product_ids";
/// How many products one comparison takes.
pub const MIN_PRODUCTS: usize = 2;
pub const MAX_PRODUCTS: usize = 5;

/// A validated `compare_products` request.
#[derive(Debug, Clone, PartialEq)]
pub struct CompareRequest {
    /// `None` when the id is not a UUID: refused when the request runs,
    /// like any unknown scope, after every other argument was validated.
    pub retrieval_scope_id: Option<Uuid>,
    /// 2..5 distinct product ids.
    pub product_ids: Vec<String>,
}

impl CompareRequest {
    /// Validates the flat logical-argument object.
    pub fn from_json(args: &Value) -> Result<Self, Error> {
        let obj = object(args, FIELDS)?;
        Ok(CompareRequest {
            retrieval_scope_id: scope_id(obj)?,
            product_ids: product_ids(obj.get(FIELD))?,
        })
    }
}

/// The answer: the products in served order and their attribute matrix.
#[derive(Debug, Clone, Serialize)]
pub struct CompareResponse {
    pub retrieval_scope_id: Uuid,
    pub products: Vec<ComparedProduct>,
    pub attributes: AttributeMatrix,
}

/// One compared product: its catalog fields and what the event recorded.
#[derive(Debug, Clone, Serialize)]
pub struct ComparedProduct {
    pub product_id: String,
    pub sku: String,
    pub model: String,
    pub brand: String,
    pub title: String,
    pub domain: String,
    pub category_key: String,
    pub price_cents: i64,
    pub currency: String,
    pub rating: Option<f64>,
    pub availability: String,
    pub source: crate::search::Source,
    pub receipt: ServedReceipt,
}

/// What the event recorded about the product.
#[derive(Debug, Clone, Serialize)]
pub struct ServedReceipt {
    /// Rank in the window the caller was served (1..limit).
    pub served_rank: i32,
    /// Rank in the fused pool before reranking (1..pool size); a different
    /// rank space from `served_rank`.
    pub pre_rerank_rank: i32,
    pub exact_match: bool,
    pub match_reason: String,
    pub signals: ReceiptSignals,
    /// The catalog revision the product had when it was served.
    pub source_revision: i32,
}

/// The attributes side by side: the sorted union of the products' keys,
/// one row per key.
#[derive(Debug, Clone, Serialize)]
pub struct AttributeMatrix {
    pub keys: Vec<String>,
    pub rows: Vec<MatrixRow>,
}

#[derive(Debug, Clone, Serialize)]
pub struct MatrixRow {
    pub key: String,
    /// One entry per compared product; null when the product lacks the key.
    pub values: BTreeMap<String, Value>,
    /// Whether the compared products disagree on this key (a missing value
    /// counts as a value).
    pub differs: bool,
}

/// The requested ids: an array of 2..5 distinct product ids.
fn product_ids(v: Option<&Value>) -> Result<Vec<String>, Error> {
    let bad = || {
        Error::invalid(
            FIELD,
            format!(
                "`{FIELD}` must be an array of {MIN_PRODUCTS} to {MAX_PRODUCTS} distinct product ids"
            ),
        )
    };
    let Some(Value::Array(items)) = v else {
        return Err(bad());
    };
    if !(MIN_PRODUCTS..=MAX_PRODUCTS).contains(&items.len()) {
        return Err(bad());
    }
    let ids = items
        .iter()
        .map(|i| {
            if let Value::String(s) = i {
                check_text(FIELD, s, TextKind::Token)?;
            }
            product_id(i, FIELD).map_err(|_| bad())
        })
        .collect::<Result<Vec<_>, _>>()?;
    if ids.iter().collect::<BTreeSet<_>>().len() != ids.len() {
        return Err(bad());
    }
    Ok(ids)
}

/// Runs `compare_products`.
pub async fn compare(
    ctx: &Ctx,
    principal: &Principal,
    req: CompareRequest,
) -> Result<CompareResponse, Error> {
    let Some(scope) = req.retrieval_scope_id else {
        return Err(Error::NotFound);
    };
    let ids = req.product_ids;
    let rows = ctx
        .read_only(async |tx| Ok(tx.query(SQL, &[&scope, &principal.as_str(), &ids]).await?))
        .await?;
    if rows.len() != ids.len() {
        return Err(Error::NotFound);
    }

    let mut attributes: Vec<(String, Map<String, Value>)> = Vec::with_capacity(rows.len());
    let products: Vec<ComparedProduct> = rows
        .iter()
        .map(|r| {
            let product = ComparedProduct::from_row(r);
            let attrs = match r.get::<_, Value>("attributes") {
                Value::Object(m) => m,
                _ => Map::new(),
            };
            attributes.push((product.product_id.clone(), attrs));
            product
        })
        .collect();
    Ok(CompareResponse {
        retrieval_scope_id: scope,
        products,
        attributes: AttributeMatrix::of(&attributes),
    })
}

impl ComparedProduct {
    /// A row of `sql/compare.sql`.
    fn from_row(r: &Row) -> Self {
        ComparedProduct {
            product_id: r.get("product_id"),
            sku: r.get("sku"),
            model: r.get("model"),
            brand: r.get("brand"),
            title: r.get("title"),
            domain: r.get("domain"),
            category_key: r.get("category_key"),
            price_cents: r.get("price_cents"),
            currency: r.get("currency"),
            rating: stars(r.get("rating")),
            availability: r.get("availability"),
            source: crate::search::Source {
                uri: r.get("source_uri"),
                revision: r.get("revision"),
            },
            receipt: ServedReceipt {
                served_rank: r.get("served_rank"),
                pre_rerank_rank: r.get("pre_rerank_rank"),
                exact_match: r.get("exact_match"),
                match_reason: r.get("match_reason"),
                signals: ReceiptSignals::from_row(r),
                source_revision: r.get("served_source_revision"),
            },
        }
    }
}

impl AttributeMatrix {
    /// The matrix of `(product id, attributes)`, in the products' order.
    fn of(attributes: &[(String, Map<String, Value>)]) -> Self {
        let keys: BTreeSet<&String> = attributes.iter().flat_map(|(_, m)| m.keys()).collect();
        let rows = keys
            .iter()
            .map(|k| {
                let values: BTreeMap<String, Value> = attributes
                    .iter()
                    .map(|(pid, m)| (pid.clone(), m.get(*k).cloned().unwrap_or(Value::Null)))
                    .collect();
                let first = values.values().next();
                let differs = values
                    .values()
                    .any(|v| first.is_some_and(|f| !crate::catalog::attribute::same(f, v)));
                MatrixRow {
                    key: (*k).clone(),
                    values,
                    differs,
                }
            })
            .collect();
        AttributeMatrix {
            keys: keys.into_iter().cloned().collect(),
            rows,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn product_ids_are_two_to_five_distinct_strings() {
        let ok = |v: Value| product_ids(Some(&v));
        assert_eq!(ok(json!(["a", "b"])).unwrap(), vec!["a", "b"]);
        assert!(ok(json!(["a", "b", "c", "d", "e"])).is_ok());
        for bad in [
            json!(["a"]),
            json!(["a", "b", "c", "d", "e", "f"]),
            json!(["a", "a"]),
            json!(["a", 1]),
            json!(["a", ""]),
            json!("a,b"),
            json!(null),
        ] {
            let e = ok(bad.clone()).unwrap_err();
            assert_eq!(e.status(), 400, "{bad}");
            assert_eq!(e.body()["error"]["field"], FIELD, "{bad}");
        }
        assert!(product_ids(None).is_err());
    }
}
