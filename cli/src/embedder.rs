//! Choosing the embedder from the command line or the environment.

use anyhow::{Context, Result};
use clap::Args;
use mosaic::embed::minilm::MiniLmEmbedder;
use mosaic::embed::{Embedder, HashingEmbedder};
use std::sync::Arc;

#[derive(Args, Clone, Debug)]
pub struct EmbedderArgs {
    /// Embedding model: `local` (all-MiniLM-L6-v2, 384 dims, fetched by
    /// scripts/fetch-model.sh) or `hashing` (deterministic feature hashing,
    /// for tests and large benchmarks only).
    #[arg(long = "embedder", env = "MOSAIC_EMBEDDER", default_value = "local",
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
            _ => {
                let e = MiniLmEmbedder::load_default()
                    .context("cannot load the local embedding model (run scripts/fetch-model.sh or `make model`)")?;
                Ok(Arc::new(e))
            }
        }
    }
}
