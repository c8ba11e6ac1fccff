//! `mosaic embed`: keeps projection embeddings in step with their text.
//!
//! A row needs (re-)embedding when it has no vector, when its embedding text
//! changed since it was embedded (the stored text hashes differ), or when it
//! was embedded by another model. The job walks those rows in product-id
//! order with keyset pagination, so it can be stopped and resumed at any
//! point and a second run finds nothing to do.

use crate::embed::{EmbedKind, Embedder};
use pgvector::Vector;
use std::time::Instant;
use tokio_postgres::Client;

#[derive(Debug, Clone, serde::Serialize)]
pub struct EmbedReport {
    pub model: String,
    pub pending: i64,
    /// Rows given a vector.
    pub embedded: u64,
    /// Rows read but left without one: their text changed between the read
    /// and the write (an import ran meanwhile), so the vector computed was
    /// not of the text they hold. A second run embeds them.
    pub skipped: u64,
    pub seconds: f64,
}

impl EmbedReport {
    /// What a run left for the next one, for its summary: `None` when
    /// nothing was skipped.
    pub fn skipped_note(&self) -> Option<String> {
        (self.skipped > 0).then(|| {
            format!(
                "{} skipped: their text changed during the run; run `mosaic embed` again",
                self.skipped
            )
        })
    }
}

const PENDING: &str = "embedding IS NULL OR embedding_model IS DISTINCT FROM $1
                       OR embedded_text_hash IS DISTINCT FROM embedding_text_hash";

/// Embeds every projection row that needs it, `batch` rows per model call
/// with `workers` calls in flight (the local model uses one core per call).
/// `progress` is told the rows given a vector so far, the rows pending at
/// the start and the seconds elapsed; rows whose text changed while they
/// were being embedded are left for the next run and counted in
/// [`EmbedReport::skipped`].
pub async fn embed_pending(
    client: &Client,
    embedder: &dyn Embedder,
    batch: usize,
    workers: usize,
    progress: &mut dyn FnMut(u64, i64, f64),
) -> anyhow::Result<EmbedReport> {
    if let Some(dim) = crate::db::embedding_dimension(client).await? {
        anyhow::ensure!(
            dim == embedder.dimension(),
            "the embedding column holds {dim}-dimensional vectors but model {} produces {}; \
             migrate a database with --embedding-dim {}",
            embedder.model_id(),
            embedder.dimension(),
            embedder.dimension()
        );
    }
    let started = Instant::now();
    let model = embedder.model_id().to_string();
    let pending: i64 = client
        .query_one(
            &format!("SELECT count(*) FROM search.product_projection WHERE {PENDING}"),
            &[&model],
        )
        .await?
        .get(0);
    let select = client
        .prepare(&format!(
            "SELECT product_id, embedding_text, embedding_text_hash FROM search.product_projection
             WHERE product_id > $2 AND ({PENDING}) ORDER BY product_id LIMIT $3"
        ))
        .await?;
    let update = client
        .prepare(
            "UPDATE search.product_projection p
             SET embedding = u.embedding, embedding_model = $4, embedded_text_hash = u.text_hash
             FROM unnest($1::text[], $2::vector[], $3::text[]) AS u(product_id, embedding, text_hash)
             WHERE p.product_id = u.product_id
               -- Only a vector of the text the row still holds: an import
               -- that changed it since the read leaves the row to embed.
               AND p.embedding_text_hash = u.text_hash",
        )
        .await?;
    let mut last = String::new();
    let mut done = 0u64;
    let mut skipped = 0u64;
    loop {
        let rows = client
            .query(
                &select,
                &[&model, &last, &((batch * workers.max(1)) as i64)],
            )
            .await?;
        if rows.is_empty() {
            break;
        }
        let ids: Vec<String> = rows.iter().map(|r| r.get(0)).collect();
        let texts: Vec<String> = rows.iter().map(|r| r.get(1)).collect();
        let hashes: Vec<String> = rows.iter().map(|r| r.get(2)).collect();
        let calls = texts
            .chunks(batch.max(1))
            .map(|chunk| embedder.embed(chunk, EmbedKind::Document));
        let mut vectors: Vec<Vector> = Vec::with_capacity(texts.len());
        for part in futures_util::future::try_join_all(calls).await? {
            vectors.extend(part.into_iter().map(Vector::from));
        }
        anyhow::ensure!(
            vectors.len() == ids.len(),
            "the embedder returned {} vectors for {} texts",
            vectors.len(),
            ids.len()
        );
        let written = client
            .execute(&update, &[&ids, &vectors, &hashes, &model])
            .await?;
        done += written;
        skipped += (ids.len() as u64).saturating_sub(written);
        last = ids.last().cloned().unwrap_or_default();
        progress(done, pending, started.elapsed().as_secs_f64());
    }
    Ok(EmbedReport {
        model,
        pending,
        embedded: done,
        skipped,
        seconds: started.elapsed().as_secs_f64(),
    })
}
