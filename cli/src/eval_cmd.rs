//! `mosaic eval`: retrieval quality, side by side.
//!
//! * `mosaic eval generate --out FILE [--seed S] [--products N]` writes a
//!   judged query set built from the catalog generator's ground truth;
//! * `mosaic eval --queries FILE [--json OUT] [--limit-queries N]` runs every
//!   query through `search_variant` under each variant (each arm alone,
//!   unweighted RRF without and with the rerank — the serving pipeline — and
//!   a weighted-RRF comparison) and prints one table of metric × variant and
//!   one table per intent. Progress goes to stderr; receipts are written
//!   under the principal `eval` so they can be told apart.

use anyhow::{bail, Context, Result};
use clap::{Args, Subcommand};
use mosaic::Principal;
use mosaic_devtools::eval::{self, queryset, EvalReport, Intent, Summary};
use mosaic_devtools::generator::{DEFAULT_PRODUCTS, DEFAULT_SEED};
use std::io::{BufReader, IsTerminal, Write};
use std::path::PathBuf;

#[derive(Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct EvalArgs {
    #[command(subcommand)]
    action: Option<EvalAction>,
    /// Judged query set (JSONL; format in EVALUATION.md).
    #[arg(long)]
    queries: Option<PathBuf>,
    /// Also write the whole report (every variant, intent and query) as JSON.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Evaluate at most N queries, spread evenly over the intents.
    #[arg(long)]
    limit_queries: Option<usize>,
    /// Principal recorded in the receipts.
    #[arg(long, default_value = "eval")]
    principal: String,
    /// Run only these variants (comma-separated keys, e.g. `rrf,rrf_rerank`).
    #[arg(long, value_delimiter = ',')]
    variants: Vec<String>,
    #[command(flatten)]
    runtime: crate::args::RuntimeArgs,
    #[command(flatten)]
    embedder: crate::embedder::EmbedderArgs,
}

#[derive(Subcommand)]
enum EvalAction {
    /// Write a judged query set generated from the sample catalog's ground truth.
    Generate {
        /// Output file (JSONL).
        #[arg(long)]
        out: PathBuf,
        /// Seed of the sample catalog the judgments describe.
        #[arg(long, default_value_t = DEFAULT_SEED)]
        seed: u64,
        /// Size of that catalog.
        #[arg(long, default_value_t = DEFAULT_PRODUCTS)]
        products: u64,
        /// Queries per intent (7 intents).
        #[arg(long, default_value_t = 50)]
        per_intent: usize,
    },
}

pub async fn run(args: EvalArgs) -> Result<()> {
    if let Some(EvalAction::Generate {
        out,
        seed,
        products,
        per_intent,
    }) = args.action
    {
        let opts = eval::QuerySetOptions {
            seed,
            products,
            per_intent,
        };
        let queries = queryset::generate(&opts);
        if let Some(dir) = out.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)?;
        }
        let file = std::fs::File::create(&out)
            .with_context(|| format!("cannot create {}", out.display()))?;
        queryset::write_jsonl(std::io::BufWriter::new(file), &queries)?;
        let judgments: usize = queries.iter().map(|q| q.judgments.len()).sum();
        println!(
            "wrote {} queries ({} judgments) for the sample catalog (seed {seed}, {products} products) to {}",
            queries.len(),
            judgments,
            out.display()
        );
        return Ok(());
    }
    let Some(path) = args.queries else {
        bail!("give --queries FILE (or `mosaic eval generate --out FILE` to make one)");
    };
    let file =
        std::fs::File::open(&path).with_context(|| format!("cannot open {}", path.display()))?;
    let mut queries = queryset::read_jsonl(BufReader::new(file))
        .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    if let Some(n) = args.limit_queries {
        queries = queryset::spread(&queries, n);
    }
    if queries.is_empty() {
        bail!("{} holds no queries", path.display());
    }
    let ctx = args.runtime.ctx(&args.embedder, 2)?;
    let catalog = eval::load_catalog(&ctx).await.map_err(|e| {
        anyhow::anyhow!(
            "reading the catalog: {e} (is the database running? `make db` starts the local one)"
        )
    })?;
    let (judged, missing) = eval::judged_missing(&queries, &catalog);
    if judged > 0 && missing.len() == judged {
        bail!(
            "none of the {judged} products {} judges relevant is in the catalog ({} products): \
             load the catalog its queries were judged on",
            path.display(),
            catalog.len()
        );
    }
    if !missing.is_empty() {
        eprintln!(
            "warning: {} of the {judged} products judged relevant are not in the catalog \
             (first: {}); their queries score as if they had not been found",
            missing.len(),
            missing[0]
        );
    }
    let mut variants = eval::standard_variants();
    if !args.variants.is_empty() {
        if let Some(unknown) = args
            .variants
            .iter()
            .find(|k| !variants.iter().any(|v| v.key == k.as_str()))
        {
            let keys: Vec<&str> = variants.iter().map(|v| v.key).collect();
            bail!("unknown variant {unknown:?}: use {}", keys.join(", "));
        }
        variants.retain(|v| args.variants.iter().any(|k| k == v.key));
    }
    eprintln!(
        "evaluating {} queries × {} variants as principal {:?}",
        queries.len(),
        variants.len(),
        args.principal
    );
    let tty = std::io::stderr().is_terminal();
    let started = std::time::Instant::now();
    let mut progress = |variant: &str, done: usize, total: usize| {
        let secs = started.elapsed().as_secs_f64();
        if tty {
            eprint!("\r  {variant:<13} {done:>5} / {total:<5} {secs:>6.0} s");
            if done == total {
                eprintln!();
            }
            let _ = std::io::stderr().flush();
        } else if done.is_multiple_of(50) || done == total {
            eprintln!("  {variant:<13} {done:>5} / {total}  {secs:.0} s");
        }
    };
    let report = eval::run(
        &ctx,
        &Principal(args.principal),
        &catalog,
        &queries,
        &variants,
        &mut progress,
    )
    .await?;
    print_report(&report);
    if let Some(out) = args.json {
        let file = std::fs::File::create(&out)
            .with_context(|| format!("cannot create {}", out.display()))?;
        serde_json::to_writer_pretty(std::io::BufWriter::new(file), &report)?;
        eprintln!("wrote the full report to {}", out.display());
    }
    Ok(())
}

fn num(v: Option<f64>) -> String {
    v.map_or_else(|| "–".into(), |x| format!("{x:.3}"))
}

fn pct(v: Option<f64>) -> String {
    v.map_or_else(|| "–".into(), |x| format!("{:.1}%", x * 100.0))
}

type Row = (&'static str, fn(&Summary) -> String);

fn rows(intent: Option<Intent>) -> Vec<Row> {
    let mut r: Vec<Row> = vec![
        ("nDCG@10", |s| num(s.ndcg10)),
        ("Recall@10", |s| num(s.recall10)),
        ("Recall@50", |s| num(s.recall50)),
        ("MRR", |s| num(s.mrr)),
    ];
    if intent.is_none_or(|i| i.is_exact()) {
        r.push(("exact-id top-1", |s| pct(s.exact_top1)));
    }
    if intent.is_none_or(|i| i == Intent::Typo) {
        r.push(("typo recovery@10", |s| pct(s.typo_recovery10)));
    }
    r.push(("zero-result rate", |s| pct(Some(s.zero_result_rate))));
    r.push(("searches warned", |s| s.with_warnings.to_string()));
    if intent.is_none_or(|i| i == Intent::Filtered) {
        r.push(("filter violations", |s| {
            format!("{} / {}", s.filter_violations, s.filter_checked)
        }));
    }
    r.push(("p50 latency ms", |s| format!("{:.0}", s.p50_ms)));
    r.push(("p95 latency ms", |s| format!("{:.0}", s.p95_ms)));
    r
}

fn table(report: &EvalReport, intent: Option<Intent>) {
    let keys: Vec<&str> = report.variants.iter().map(|v| v.variant.key).collect();
    let summary = |i: usize| -> Option<&Summary> {
        let v = &report.variants[i];
        match intent {
            None => Some(&v.overall),
            Some(it) => v.per_intent.get(&it),
        }
    };
    let Some(first) = summary(0) else {
        return;
    };
    let title = match intent {
        None => format!("all intents ({} queries)", first.queries),
        Some(i) => format!("{} ({} queries)", i.as_str(), first.queries),
    };
    println!("\n{title}\n");
    print!("| {:<18} |", "metric");
    for k in &keys {
        print!(" {k:>12} |");
    }
    println!();
    print!("|{}|", "-".repeat(20));
    for _ in &keys {
        print!("{}:|", "-".repeat(13));
    }
    println!();
    for (name, f) in rows(intent) {
        print!("| {name:<18} |");
        for i in 0..keys.len() {
            print!(" {:>12} |", summary(i).map_or_else(|| "–".into(), f));
        }
        println!();
    }
}

fn print_report(report: &EvalReport) {
    println!(
        "mosaic eval: {} queries, limit {}, principal {:?}, embedding {}, reranker {} ({:.0} s)",
        report.queries,
        report.limit,
        report.principal,
        report.models["embedding"].as_str().unwrap_or("none"),
        report.models["reranker"].as_str().unwrap_or("none"),
        report.seconds
    );
    println!("\nvariants:");
    for v in &report.variants {
        println!(
            "  {:<13} {} ({:.0} s)",
            v.variant.key, v.variant.label, v.seconds
        );
    }
    table(report, None);
    for intent in Intent::ALL {
        table(report, Some(intent));
    }
    let single = ["lexical", "trigram", "semantic"]
        .iter()
        .filter_map(|k| report.variant(k))
        .filter_map(|v| v.overall.ndcg10.map(|n| (v.variant.key, n)))
        .max_by(|a, b| a.1.total_cmp(&b.1));
    println!();
    for key in ["rrf", "rrf_rerank", "weighted_rrf"] {
        if let (Some((best, b)), Some(n)) =
            (single, report.variant(key).and_then(|v| v.overall.ndcg10))
        {
            println!(
                "{key}: nDCG@10 {n:.3} vs best single arm ({best}) {b:.3}: {:+.1}%",
                (n / b - 1.0) * 100.0
            );
        }
    }
    for v in &report.variants {
        if v.variant.variant.rerank {
            let statuses: Vec<String> = v
                .rerank_status
                .iter()
                .map(|(s, n)| format!("{s} {n}"))
                .collect();
            println!("{} rerank status: {}", v.variant.key, statuses.join(", "));
        }
    }
    for v in report.variants.iter().filter(|v| !v.warnings.is_empty()) {
        let mut common: Vec<(&String, &usize)> = v.warnings.iter().collect();
        common.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        println!("{} warnings:", v.variant.key);
        for (w, n) in common.iter().take(5) {
            println!("  {n:>5} × {w}");
        }
        if common.len() > 5 {
            println!("  … and {} more kinds (see --json)", common.len() - 5);
        }
    }
    let errors: usize = report.variants.iter().map(|v| v.overall.errors).sum();
    if errors > 0 {
        println!("{errors} searches failed (counted as zero-result queries; see --json)");
    }
}
