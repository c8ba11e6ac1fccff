//! Choosing the embedder from the command line or the environment.

use anyhow::{Context, Result};
use clap::Args;
use mosaic::embed::minilm::MiniLmEmbedder;
use mosaic::embed::{Embedder, HashingEmbedder};
use std::sync::Arc;

#[derive(Args, Clone, Debug)]
pub struct EmbedderArgs {
    /// Embedding model: `local` (all-MiniLM-L6-v2, 384 dims, fetched by
    /// scripts/fetch-model.sh), `hashing` (deterministic feature hashing,
    /// for tests and large benchmarks only) or `bedrock:<model>[:<dim>]`
    /// (Amazon Bedrock with the usual AWS credentials and region, e.g.
    /// `bedrock:titan-v2:1024`; see the README's deployment section).
    #[arg(long = "embedder", env = "MOSAIC_EMBEDDER", default_value = "local",
          value_parser = parse_kind)]
    pub kind: String,
    /// Dimension of the hashing embedder.
    #[arg(long, env = "MOSAIC_EMBEDDING_DIM", default_value_t = 384)]
    pub embedding_dim: usize,
}

fn parse_kind(s: &str) -> Result<String, String> {
    match s {
        "local" | "hashing" => Ok(s.to_string()),
        _ => match s.strip_prefix("bedrock:") {
            Some(model) => model
                .parse::<mosaic::aws::EmbeddingModel>()
                .map(|_| s.to_string())
                .map_err(|e| e.to_string()),
            None => Err("use `local`, `hashing` or `bedrock:<model>[:<dim>]`".into()),
        },
    }
}

impl EmbedderArgs {
    pub fn build(&self) -> Result<Arc<dyn Embedder>> {
        match self.kind.as_str() {
            "hashing" => Ok(Arc::new(HashingEmbedder::new(self.embedding_dim))),
            kind if kind.starts_with("bedrock:") => bedrock(kind),
            _ => {
                let e = MiniLmEmbedder::load_default()
                    .context("cannot load the local embedding model (run scripts/fetch-model.sh or `make model`)")?;
                Ok(Arc::new(e))
            }
        }
    }
}

/// A Bedrock embedder from the environment's AWS configuration, with the
/// retrieval profile's embedding deadline per call.
fn bedrock(kind: &str) -> Result<Arc<dyn Embedder>> {
    let aws = aws_components(Some(kind))?;
    let e = aws.embedder().context("not a Bedrock embedding model")?;
    Ok(Arc::new(e))
}

/// The Bedrock reranker `MOSAIC_RERANKER=bedrock:<model>` names.
pub fn bedrock_reranker() -> Result<mosaic::aws::BedrockReranker> {
    aws_components(None)?
        .reranker()
        .context("MOSAIC_RERANKER: not a Bedrock rerank model")
}

/// The AWS settings (with `embedder` in place of `MOSAIC_EMBEDDER` when
/// given) and the SDK configuration from the environment.
fn aws_components(embedder: Option<&str>) -> Result<mosaic::aws::AwsComponents> {
    let profile = mosaic::RetrievalProfile::from_env().map_err(anyhow::Error::msg)?;
    let lookup = |k: &str| match (k, embedder) {
        ("MOSAIC_EMBEDDER", Some(kind)) => Some(kind.to_string()),
        ("MOSAIC_EMBEDDER", None) => None,
        (other, _) => std::env::var(other).ok(),
    };
    let settings =
        mosaic::aws::AwsSettings::from_lookup(&profile, lookup).map_err(anyhow::Error::msg)?;
    Ok(tokio::task::block_in_place(|| {
        tokio::runtime::Handle::current().block_on(mosaic::aws::AwsComponents::load(settings))
    }))
}
