//! `mosaic migrate`: applies the pending migrations (idempotent).

use crate::args::DbArgs;
use anyhow::Result;
use clap::Args;
use mosaic::db;

#[derive(Args)]
pub struct MigrateArgs {
    #[command(flatten)]
    db: DbArgs,
    /// Dimension of the embedding column (384 local model, 1024 Titan v2 / Cohere).
    #[arg(long, env = "MOSAIC_EMBEDDING_DIM", default_value_t = 384)]
    embedding_dim: usize,
    /// Role the functions connect as.
    #[arg(long, env = "MOSAIC_RUNTIME_ROLE", default_value = "mosaic_runtime")]
    runtime_role: String,
}

pub async fn run(args: MigrateArgs) -> Result<()> {
    let mut client = args.db.connect().await?;
    let opts = db::MigrateOptions {
        embedding_dim: args.embedding_dim,
        runtime_role: args.runtime_role,
    };
    let report = db::migrate(&mut client, &opts).await?;
    if report.applied.is_empty() {
        println!(
            "migrations: up to date ({} applied earlier)",
            report.already_applied
        );
    } else {
        for name in &report.applied {
            println!("migrations: applied {name}");
        }
    }
    for w in &report.warnings {
        eprintln!("migrations: warning: {w}");
    }
    Ok(())
}
