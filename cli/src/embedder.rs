//! Choosing the embedder from the command line or the environment. The
//! values, their defaults and their meaning are `mosaic::config`'s; the
//! flags only override the environment.

use anyhow::{Context, Result};
use clap::Args;
use mosaic::config::{EmbedderSetting, Settings, DEFAULT_EMBEDDING_DIM};
use mosaic::embed::Embedder;
use std::sync::Arc;

#[derive(Args, Clone, Debug)]
pub struct EmbedderArgs {
    /// Embedding model: `local` (all-MiniLM-L6-v2, 384 dims, fetched by
    /// scripts/fetch-model.sh; the default), `hashing[:<dim>]` (deterministic
    /// feature hashing, for tests and large benchmarks only),
    /// `bedrock:<model>[:<dim>]` (Amazon Bedrock with the usual AWS
    /// credentials and region, e.g. `bedrock:titan-v2:1024`; see the README's
    /// deployment section) or `none`.
    #[arg(long = "embedder", env = "MOSAIC_EMBEDDER", value_parser = parse_kind)]
    pub kind: Option<String>,
    /// Dimension of the hashing embedder (default 384).
    #[arg(long, env = "MOSAIC_EMBEDDING_DIM")]
    pub embedding_dim: Option<usize>,
}

fn parse_kind(s: &str) -> Result<String, String> {
    if let EmbedderSetting::Bedrock(_) = EmbedderSetting::parse(s, DEFAULT_EMBEDDING_DIM)? {
        let model = &s.trim()["bedrock:".len()..];
        model
            .parse::<mosaic::aws::EmbeddingModel>()
            .map_err(|e| e.to_string())?;
    }
    Ok(s.to_string())
}

impl EmbedderArgs {
    /// The environment lookup with these flags in place of the variables
    /// they override.
    pub fn lookup(&self, var: &str) -> Option<String> {
        match var {
            "MOSAIC_EMBEDDER" => self.kind.clone(),
            "MOSAIC_EMBEDDING_DIM" => self.embedding_dim.map(|d| d.to_string()),
            other => std::env::var(other).ok(),
        }
    }

    /// The embedder on its own (the `embed` job, the bench), without a
    /// database context.
    pub fn build(&self) -> Result<Arc<dyn Embedder>> {
        let settings = Settings::from_lookup(|k| match k {
            k if k.starts_with("MOSAIC_DB_") || k == "MOSAIC_DATABASE_URL" => None,
            k => self.lookup(k),
        })
        .map_err(anyhow::Error::msg)?;
        block_on(mosaic::config::build_embedder(&settings))
            .map_err(anyhow::Error::msg)?
            .context("this command needs an embedder, not `none`")
    }
}

/// Runs a future to completion from synchronous command code.
pub fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::task::block_in_place(|| tokio::runtime::Handle::current().block_on(f))
}
