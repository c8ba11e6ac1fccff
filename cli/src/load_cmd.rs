//! `mosaic load`: the deterministic sample catalog (`--sample`), or
//! products and evidence imported from files.

use crate::args::DbArgs;
use anyhow::{bail, Context, Result};
use clap::Args;
use mosaic::catalog::import;
use mosaic_devtools::generator::{self, Generator, DEFAULT_PRODUCTS, DEFAULT_SEED};
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::time::Instant;

#[derive(Args)]
pub struct LoadArgs {
    #[command(flatten)]
    db: DbArgs,
    /// Generate the deterministic sample catalog (replaces the catalog).
    #[arg(long)]
    sample: bool,
    /// With --sample: number of products. Otherwise: a products file, CSV
    /// (.csv) or JSON Lines (any other name), optionally gzip-compressed
    /// (.csv.gz, .jsonl.gz); imported over the catalog (products it does
    /// not name stay).
    #[arg(long)]
    products: Option<String>,
    /// Evidence file, JSON Lines, optionally gzip-compressed (.jsonl.gz).
    #[arg(long)]
    evidence: Option<PathBuf>,
    /// With --sample: generator seed.
    #[arg(long, default_value_t = DEFAULT_SEED)]
    seed: u64,
    /// With --sample: do nothing when the catalog already holds products.
    #[arg(long)]
    if_empty: bool,
    /// With a products file: the file is the whole catalog; products it
    /// does not name are removed, with their evidence and vectors.
    #[arg(long, requires = "products", conflicts_with = "sample")]
    replace: bool,
}

/// Prints load progress: one updating line on a terminal, plain lines in logs.
pub(crate) fn progress_line(stage: &str, done: u64, total: u64) {
    let mut err = std::io::stderr();
    if err.is_terminal() {
        let _ = write!(err, "\r  {stage:<11} {done:>9} / ~{total:<9}");
        if done >= total {
            let _ = writeln!(err);
        }
        let _ = err.flush();
    } else {
        let _ = writeln!(err, "  {stage:<11} {done:>9} / ~{total}");
    }
}

pub async fn run(args: LoadArgs) -> Result<()> {
    let mut client = args.db.connect_migrated().await?;
    if args.sample && args.if_empty {
        let n: i64 = client
            .query_one("SELECT count(*) FROM catalog.products", &[])
            .await?
            .get(0);
        if n > 0 {
            println!("catalog already holds {n} products; leaving it as it is (drop --if-empty to reload)");
            return Ok(());
        }
    }
    let mut progress = |stage: &str, done: u64, total: u64| progress_line(stage, done, total);
    if args.sample {
        if args.evidence.is_some() {
            bail!("--evidence is for file imports; --sample generates its own evidence");
        }
        let n = match args.products {
            None => DEFAULT_PRODUCTS,
            Some(s) => s.replace('_', "").parse().with_context(|| {
                format!("with --sample, --products takes a number of products, not `{s}`")
            })?,
        };
        let seed = args.seed;
        eprintln!("loading the sample catalog: {n} products, seed {seed}");
        let report =
            generator::load_sample(&mut client, Generator::new(seed, n), &mut progress).await?;
        println!(
            "loaded {} products and {} evidence units in {:.1} s ({} projection rows)",
            report.products, report.evidence, report.seconds, report.projection_rows
        );
    } else {
        if args.products.is_none() && args.evidence.is_none() {
            bail!("nothing to load: use --sample, or --products FILE and/or --evidence FILE");
        }
        let started = Instant::now();
        let products = args.products.map(PathBuf::from);
        let report = import::import_with(
            &mut client,
            products.as_deref(),
            args.evidence.as_deref(),
            import::ImportOptions {
                replace: args.replace,
            },
            &mut progress,
        )
        .await?;
        let removed = match args.replace {
            true => format!(", {} removed", report.removed),
            false => String::new(),
        };
        println!(
            "imported {} products and {} evidence units in {:.1} s ({} projection rows refreshed{removed})",
            report.products,
            report.evidence,
            started.elapsed().as_secs_f64(),
            report.projection_rows
        );
    }
    Ok(())
}
