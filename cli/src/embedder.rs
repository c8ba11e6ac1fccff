//! Choosing the embedder from the command line or the environment.

use anyhow::Result;
use clap::Args;
use mosaic::embed::{Embedder, HashingEmbedder};
use std::sync::Arc;

#[derive(Args, Clone, Debug)]
pub struct EmbedderArgs {
    /// Embedding model: `local` (all-MiniLM-L6-v2, 384 dims) or `hashing`
    /// (deterministic feature hashing, for tests and large benchmarks).
    #[arg(long = "embedder", env = "MOSAIC_EMBEDDER", default_value = "hashing",
          value_parser = ["local", "hashing"])]
    pub kind: String,
    /// Dimension of the hashing embedder.
    #[arg(long, env = "MOSAIC_EMBEDDING_DIM", default_value_t = 384)]
    pub embedding_dim: usize,
}

impl EmbedderArgs {
    pub fn build(&self) -> Result<Arc<dyn Embedder>> {
        match self.kind.as_str() {
            "hashing" => Ok(Arc::new(HashingEmbedder::new(self.embedding_dim))),
            other => anyhow::bail!("embedder `{other}` is not available in this build"),
        }
    }
}
