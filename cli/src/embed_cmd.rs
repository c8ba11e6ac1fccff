//! `mosaic embed`: embeds the projection rows whose text or model changed
//! (resumable).

use crate::args::DbArgs;
use crate::embedder::EmbedderArgs;
use anyhow::Result;
use clap::Args;
use std::io::{IsTerminal, Write};
use std::time::Instant;

#[derive(Args)]
pub struct EmbedArgs {
    #[command(flatten)]
    db: DbArgs,
    #[command(flatten)]
    embedder: EmbedderArgs,
    /// Rows per model call.
    #[arg(long, default_value_t = 32)]
    batch: usize,
    /// Model calls in flight (the local model uses one core per call).
    #[arg(long, default_value_t = 2)]
    workers: usize,
}

pub async fn run(args: EmbedArgs) -> Result<()> {
    let client = args.db.connect_migrated().await?;
    let embedder = args.embedder.build()?;
    eprintln!("embedding with {}", embedder.model_id());
    let mut last_print = Instant::now();
    let report = mosaic::embed_job::embed_pending(
        &client,
        embedder.as_ref(),
        args.batch.max(1),
        args.workers.max(1),
        &mut |done, total, secs| {
            let tty = std::io::stderr().is_terminal();
            let every = if tty { 500 } else { 5_000 };
            if last_print.elapsed().as_millis() > every || done as i64 >= total {
                last_print = Instant::now();
                let rate = done as f64 / secs.max(1e-9);
                let end = if tty { "\r" } else { "\n" };
                eprint!("{end}  embedded {done:>9} / {total:<9} {rate:>8.0} rows/s");
                let _ = std::io::stderr().flush();
            }
        },
    )
    .await?;
    if report.embedded > 0 {
        eprintln!();
    }
    println!(
        "embedded {} rows with {} in {:.1} s ({} were pending)",
        report.embedded, report.model, report.seconds, report.pending
    );
    if let Some(note) = report.skipped_note() {
        println!("{note}");
    }
    Ok(())
}
