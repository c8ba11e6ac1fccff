//! The catalog: products and evidence units, how they are loaded and
//! imported. (The sample catalog's generator is a development tool, in the
//! `mosaic-devtools` crate; the library loads whatever records it is given.)
//!
//! Loading always goes through binary `COPY` so a million products stream in
//! bounded memory, and always ends by rebuilding the search projection inside
//! the same transaction, so the arms never see a catalog without its
//! projection.

pub mod attribute;
pub mod import;
pub mod load;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// Availability values the catalog accepts. `in_stock_only` admits the first
/// two.
pub const AVAILABILITY: &[&str] = &[
    "in_stock",
    "low_stock",
    "backorder",
    "preorder",
    "out_of_stock",
    "discontinued",
];

/// One product as the catalog stores it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Product {
    pub product_id: String,
    pub sku: String,
    pub model: String,
    pub brand: String,
    pub title: String,
    pub domain: String,
    pub category_key: String,
    pub description: String,
    pub price_cents: i64,
    pub currency: String,
    pub rating: Option<f32>,
    pub review_count: i32,
    pub availability: String,
    pub attributes: serde_json::Map<String, serde_json::Value>,
    pub aliases: Vec<String>,
    pub source_uri: String,
    pub updated_at: DateTime<Utc>,
    pub revision: i32,
}

/// One evidence unit: a specification record or a review.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Evidence {
    pub evidence_id: String,
    pub product_id: String,
    pub kind: String,
    pub source_uri: String,
    /// The source system's revision of the record, as it names it (a
    /// number, a date, a content hash).
    pub source_revision: String,
    pub title: String,
    pub body: String,
    pub rating: Option<f32>,
    pub updated_at: DateTime<Utc>,
}

/// Counts printed by `mosaic load` and `mosaic stats`.
#[derive(Debug, Clone, Default, Serialize)]
pub struct CatalogStats {
    pub products: i64,
    pub evidence: i64,
    pub specifications: i64,
    pub reviews: i64,
    pub domains: i64,
    pub categories: i64,
    pub brands: i64,
    pub projection_rows: i64,
    pub embedded_rows: i64,
    pub embedding_models: Vec<String>,
}

/// Reads catalog statistics.
pub async fn stats(client: &tokio_postgres::Client) -> Result<CatalogStats, tokio_postgres::Error> {
    let row = client
        .query_one(
            "SELECT (SELECT count(*) FROM catalog.products),
                    (SELECT count(*) FROM catalog.evidence),
                    (SELECT count(*) FROM catalog.evidence WHERE kind = 'specification'),
                    (SELECT count(*) FROM catalog.evidence WHERE kind = 'review'),
                    (SELECT count(DISTINCT domain) FROM catalog.products),
                    (SELECT count(DISTINCT category_key) FROM catalog.products),
                    (SELECT count(DISTINCT brand) FROM catalog.products),
                    (SELECT count(*) FROM search.product_projection),
                    (SELECT count(*) FROM search.product_projection
                      WHERE embedding IS NOT NULL AND embedded_text_hash = embedding_text_hash),
                    (SELECT coalesce(array_agg(DISTINCT embedding_model ORDER BY embedding_model), '{}')
                       FROM search.product_projection WHERE embedding_model IS NOT NULL)",
            &[],
        )
        .await?;
    Ok(CatalogStats {
        products: row.get(0),
        evidence: row.get(1),
        specifications: row.get(2),
        reviews: row.get(3),
        domains: row.get(4),
        categories: row.get(5),
        brands: row.get(6),
        projection_rows: row.get(7),
        embedded_rows: row.get(8),
        embedding_models: row.get(9),
    })
}
