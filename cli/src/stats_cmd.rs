//! `mosaic stats`: catalog and search-projection statistics.

use crate::args::DbArgs;
use anyhow::Result;
use clap::Args;

#[derive(Args)]
pub struct StatsArgs {
    #[command(flatten)]
    db: DbArgs,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

pub async fn run(args: StatsArgs) -> Result<()> {
    let client = args.db.connect().await?;
    let s = mosaic::catalog::stats(&client).await?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&s)?);
        return Ok(());
    }
    println!("catalog");
    println!("  products        {:>9}", s.products);
    println!(
        "  evidence units  {:>9}  ({} specifications, {} reviews)",
        s.evidence, s.specifications, s.reviews
    );
    println!("  domains         {:>9}", s.domains);
    println!("  categories      {:>9}", s.categories);
    println!("  brands          {:>9}", s.brands);
    println!("search projection");
    println!("  rows            {:>9}", s.projection_rows);
    println!(
        "  embedded        {:>9}  ({})",
        s.embedded_rows,
        s.embedding_models.join(", ")
    );
    Ok(())
}
