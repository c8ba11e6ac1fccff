//! Text embedders: the query side of the semantic arm and the document side
//! of `mosaic embed`.
//!
//! Every embedder sits behind one object-safe trait so the search pipeline,
//! the catalog embedding job and the tests do not care whether vectors come
//! from the local sentence model, Amazon Bedrock, or the deterministic
//! hashing embedder that unit tests use.

mod hashing;
#[cfg(feature = "local-model")]
pub mod minilm;

pub use hashing::HashingEmbedder;

use async_trait::async_trait;

/// Whether a text is a search query or a catalog document. Some models
/// (Cohere Embed) encode the two differently; symmetric models ignore it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EmbedKind {
    Query,
    Document,
}

/// Why an embedding could not be produced. The message is for logs and
/// operators, never for API callers.
#[derive(Debug, thiserror::Error)]
pub enum EmbedError {
    #[error("embedding model unavailable: {0}")]
    Unavailable(String),
    #[error("embedding timed out after {0} ms")]
    Timeout(u64),
    #[error("embedding failed: {0}")]
    Failed(String),
}

#[async_trait]
pub trait Embedder: Send + Sync {
    /// Stable identifier stored next to every vector and in every receipt,
    /// e.g. `local/all-MiniLM-L6-v2` or `hashing-v1`.
    fn model_id(&self) -> &str;

    /// Length of every vector this embedder returns.
    fn dimension(&self) -> usize;

    /// Embeds a batch of texts; the result has one L2-normalised vector per
    /// input, in input order.
    async fn embed(&self, texts: &[String], kind: EmbedKind) -> Result<Vec<Vec<f32>>, EmbedError>;

    /// Embeds texts that are only compared, never stored (the local
    /// reranker's documents): an embedder may trade bitwise reproducibility
    /// across batch sizes for speed here. Defaults to [`Embedder::embed`].
    async fn embed_for_scoring(
        &self,
        texts: &[String],
        kind: EmbedKind,
    ) -> Result<Vec<Vec<f32>>, EmbedError> {
        self.embed(texts, kind).await
    }
}

/// Cosine similarity of two vectors (they need not be normalised).
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let (mut dot, mut na, mut nb) = (0f32, 0f32, 0f32);
    for (x, y) in a.iter().zip(b) {
        dot += x * y;
        na += x * x;
        nb += y * y;
    }
    if na == 0.0 || nb == 0.0 {
        return 0.0;
    }
    dot / (na.sqrt() * nb.sqrt())
}

/// Scales `v` to unit length in place (a zero vector stays zero).
pub fn l2_normalize(v: &mut [f32]) {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        v.iter_mut().for_each(|x| *x /= norm);
    }
}
