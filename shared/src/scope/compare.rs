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

use super::{bounded_read, object, product_id, scope_id, stars, to_json, ReceiptSignals};
use crate::context::{Ctx, Principal};
use crate::error::Error;
use crate::search::request::{check_text, TextKind};
use serde::Serialize;
use serde_json::{json, Map, Value};
use std::collections::{BTreeMap, BTreeSet};

const SQL: &str = include_str!("sql/compare.sql");
const FIELDS: &[&str] = &["retrieval_scope_id", "product_ids"];
const FIELD: &str = "product_ids";
/// How many products one comparison takes.
pub const MIN_PRODUCTS: usize = 2;
pub const MAX_PRODUCTS: usize = 5;

#[derive(Debug, Serialize)]
struct Product {
    product_id: String,
    sku: String,
    model: String,
    brand: String,
    title: String,
    domain: String,
    category_key: String,
    price_cents: i64,
    currency: String,
    rating: Option<f64>,
    availability: String,
    source: crate::search::Source,
    receipt: Receipt,
}

/// What the event recorded about the product.
#[derive(Debug, Serialize)]
struct Receipt {
    /// Rank in the window the caller was served (1..limit).
    served_rank: i32,
    /// Rank in the fused pool before reranking (1..pool size); a different
    /// rank space from `served_rank`.
    pre_rerank_rank: i32,
    exact_match: bool,
    match_reason: String,
    signals: ReceiptSignals,
    /// The catalog revision the product had when it was served.
    source_revision: i32,
}

#[derive(Debug, Serialize)]
struct MatrixRow {
    key: String,
    /// One entry per compared product; null when the product lacks the key.
    values: BTreeMap<String, Value>,
    /// Whether the compared products disagree on this key (a missing value
    /// counts as a value).
    differs: bool,
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

pub(super) async fn run(ctx: &Ctx, principal: &Principal, args: &Value) -> Result<Value, Error> {
    let obj = object(args, FIELDS)?;
    let scope = scope_id(obj)?;
    let ids = product_ids(obj.get(FIELD))?;
    let Some(scope) = scope else {
        return Err(Error::NotFound);
    };

    let mut conn = ctx.conn().await?;
    let tx = bounded_read(&mut conn, ctx).await?;
    let rows = tx.query(SQL, &[&scope, &principal.as_str(), &ids]).await?;
    tx.commit().await?;
    conn.settle();
    if rows.len() != ids.len() {
        return Err(Error::NotFound);
    }

    let mut attributes: Vec<(String, Map<String, Value>)> = Vec::with_capacity(rows.len());
    let products: Vec<Product> = rows
        .iter()
        .map(|r| {
            let pid: String = r.get("product_id");
            let attrs = match r.get::<_, Value>("attributes") {
                Value::Object(m) => m,
                _ => Map::new(),
            };
            attributes.push((pid.clone(), attrs));
            Product {
                product_id: pid,
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
                receipt: Receipt {
                    served_rank: r.get("served_rank"),
                    pre_rerank_rank: r.get("pre_rerank_rank"),
                    exact_match: r.get("exact_match"),
                    match_reason: r.get("match_reason"),
                    signals: ReceiptSignals::from_row(r),
                    source_revision: r.get("served_source_revision"),
                },
            }
        })
        .collect();

    let keys: BTreeSet<&String> = attributes.iter().flat_map(|(_, m)| m.keys()).collect();
    let matrix: Vec<MatrixRow> = keys
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

    Ok(json!({
        "retrieval_scope_id": scope,
        "products": to_json(&products)?,
        "attributes": {
            "keys": to_json(&keys)?,
            "rows": to_json(&matrix)?,
        },
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

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
