//! Writing catalog records into PostgreSQL with binary `COPY`.
//!
//! A load is one transaction: the catalog tables, then the search projection
//! rebuilt from them. Either all of it becomes visible or none of it.

use super::{Evidence, Product};
use futures_util::pin_mut;
use std::time::Instant;
use tokio_postgres::binary_copy::BinaryCopyInWriter;
use tokio_postgres::types::{ToSql, Type};
use tokio_postgres::{Client, Transaction};

/// Normalises an identifier the way the exact-identifier strategy compares
/// them: lower case, letters and digits only. Mirrors `search.identifier_key`.
pub fn identifier_key(s: &str) -> String {
    s.chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .collect()
}

/// Progress callback: `(stage, done, total)`.
pub type Progress<'a> = &'a mut dyn FnMut(&str, u64, u64);

pub(crate) const PRODUCT_COLUMNS: &str =
    "product_id, sku, model, brand, title, domain, category_key, description, \
     price_cents, currency, rating, review_count, availability, attributes, aliases, source_uri, \
     updated_at, revision";
const PRODUCT_TYPES: &[Type] = &[
    Type::TEXT,
    Type::TEXT,
    Type::TEXT,
    Type::TEXT,
    Type::TEXT,
    Type::TEXT,
    Type::TEXT,
    Type::TEXT,
    Type::INT8,
    Type::TEXT,
    Type::FLOAT4,
    Type::INT4,
    Type::TEXT,
    Type::JSONB,
    Type::TEXT_ARRAY,
    Type::TEXT,
    Type::TIMESTAMPTZ,
    Type::INT4,
];
pub(crate) const EVIDENCE_COLUMNS: &str =
    "evidence_id, product_id, kind, source_uri, source_revision, title, body, rating, updated_at";
const EVIDENCE_TYPES: &[Type] = &[
    Type::TEXT,
    Type::TEXT,
    Type::TEXT,
    Type::TEXT,
    Type::TEXT,
    Type::TEXT,
    Type::TEXT,
    Type::FLOAT4,
    Type::TIMESTAMPTZ,
];

/// Streams products into `table` (which has the catalog's product columns).
pub(crate) async fn copy_products<I>(
    tx: &Transaction<'_>,
    table: &str,
    rows: I,
    progress: Progress<'_>,
    total: u64,
) -> Result<u64, tokio_postgres::Error>
where
    I: Iterator<Item = Product>,
{
    let into = CopyInto {
        table,
        columns: PRODUCT_COLUMNS,
        types: PRODUCT_TYPES,
        stage: "products",
        every: 10_000,
    };
    // The attributes are written as one JSON value.
    let rows = rows.map(|mut p| {
        let attributes = serde_json::Value::Object(std::mem::take(&mut p.attributes));
        (p, attributes)
    });
    copy_rows(tx, &into, rows, product_row, progress, total).await
}

fn product_row((p, attributes): &(Product, serde_json::Value)) -> [&(dyn ToSql + Sync); 18] {
    [
        &p.product_id,
        &p.sku,
        &p.model,
        &p.brand,
        &p.title,
        &p.domain,
        &p.category_key,
        &p.description,
        &p.price_cents,
        &p.currency,
        &p.rating,
        &p.review_count,
        &p.availability,
        attributes,
        &p.aliases,
        &p.source_uri,
        &p.updated_at,
        &p.revision,
    ]
}

/// Streams evidence units into `table` (which has the catalog's evidence columns).
pub(crate) async fn copy_evidence<I>(
    tx: &Transaction<'_>,
    table: &str,
    rows: I,
    progress: Progress<'_>,
    total: u64,
) -> Result<u64, tokio_postgres::Error>
where
    I: Iterator<Item = Evidence>,
{
    let into = CopyInto {
        table,
        columns: EVIDENCE_COLUMNS,
        types: EVIDENCE_TYPES,
        stage: "evidence",
        every: 30_000,
    };
    copy_rows(tx, &into, rows, evidence_row, progress, total).await
}

fn evidence_row(e: &Evidence) -> [&(dyn ToSql + Sync); 9] {
    [
        &e.evidence_id,
        &e.product_id,
        &e.kind,
        &e.source_uri,
        &e.source_revision,
        &e.title,
        &e.body,
        &e.rating,
        &e.updated_at,
    ]
}

/// Where one binary `COPY` writes, and how its progress is reported.
struct CopyInto<'a> {
    table: &'a str,
    columns: &'a str,
    types: &'a [Type],
    /// The stage named in progress reports, made every `every` rows and at
    /// the end.
    stage: &'a str,
    every: u64,
}

/// Streams `rows` into `into.table` with binary `COPY`, each item written
/// as the columns `row` gives; returns how many rows were written.
async fn copy_rows<T, const N: usize>(
    tx: &Transaction<'_>,
    into: &CopyInto<'_>,
    rows: impl Iterator<Item = T>,
    row: fn(&T) -> [&(dyn ToSql + Sync); N],
    progress: Progress<'_>,
    total: u64,
) -> Result<u64, tokio_postgres::Error> {
    let sink = tx
        .copy_in(&format!(
            "COPY {} ({}) FROM STDIN (FORMAT binary)",
            into.table, into.columns
        ))
        .await?;
    let writer = BinaryCopyInWriter::new(sink, into.types);
    pin_mut!(writer);
    let mut n = 0u64;
    for item in rows {
        writer.as_mut().write(&row(&item)).await?;
        n += 1;
        if n.is_multiple_of(into.every) {
            progress(into.stage, n, total);
        }
    }
    writer.finish().await?;
    progress(into.stage, n, total);
    Ok(n)
}

/// What a load did.
#[derive(Debug, Clone, serde::Serialize)]
pub struct LoadReport {
    pub products: u64,
    pub evidence: u64,
    pub projection_rows: u64,
    pub seconds: f64,
}

/// Replaces the whole catalog with `products` and `evidence`, in one
/// transaction (the sample catalog's loader streams its generator through
/// this). `totals` are the expected product and evidence counts, for
/// `progress` only.
pub async fn replace_catalog<P, E>(
    client: &mut Client,
    products: P,
    evidence: E,
    totals: (u64, u64),
    progress: Progress<'_>,
) -> Result<LoadReport, tokio_postgres::Error>
where
    P: Iterator<Item = Product>,
    E: Iterator<Item = Evidence>,
{
    let started = Instant::now();
    let tx = client.transaction().await?;
    // The projection first, then the products, as an import takes them
    // (`import::import` locks the projection, then reads the products):
    // TRUNCATE alone would lock the products first and the projection
    // through the cascade, and a load and an import started together would
    // each hold what the other waits for, a deadlock that aborts one. Taken
    // in one order, the second waits for the first to commit.
    tx.batch_execute(
        "SET LOCAL synchronous_commit = off;
         LOCK TABLE search.product_projection IN ACCESS EXCLUSIVE MODE;
         LOCK TABLE catalog.products IN ACCESS EXCLUSIVE MODE;
         TRUNCATE catalog.products CASCADE",
    )
    .await?;
    let n = totals.0;
    let products = copy_products(&tx, "catalog.products", products, progress, n).await?;
    let evidence = copy_evidence(&tx, "catalog.evidence", evidence, progress, totals.1).await?;
    progress("projection", 0, n);
    let projection_rows = refresh_projection(&tx, None).await?;
    progress("projection", projection_rows, n);
    tx.batch_execute(ANALYZE_CATALOG).await?;
    tx.commit().await?;
    Ok(LoadReport {
        products,
        evidence,
        projection_rows,
        seconds: started.elapsed().as_secs_f64(),
    })
}

/// The planner's statistics of the tables a load rewrites, and an import
/// that removes products shrinks.
pub(super) const ANALYZE_CATALOG: &str =
    "ANALYZE catalog.products; ANALYZE catalog.evidence; ANALYZE search.product_projection";

/// Rebuilds the projection rows of the given products (all when `None`)
/// and what is derived from them, in one statement
/// (`search.refresh_products`, `sql/0017_catalog_terms_by_difference.sql`):
/// the per-domain partial HNSW indexes (one per domain present; see
/// `sql/0006_domain_indexes.sql`), the rerank stage's lexeme statistics
/// (`sql/0011_feed_values.sql`) and the query vocabulary
/// (`sql/0014_query_vocabulary.sql`). The statistics of a few products are
/// updated by difference, so an import costs what it changes, not what the
/// catalog holds.
pub async fn refresh_projection(
    tx: &Transaction<'_>,
    only: Option<&[String]>,
) -> Result<u64, tokio_postgres::Error> {
    let ids: Option<Vec<String>> = only.map(<[String]>::to_vec);
    let row = tx
        .query_one("SELECT search.refresh_products($1::text[])", &[&ids])
        .await?;
    Ok(row.get::<_, i64>(0) as u64)
}
