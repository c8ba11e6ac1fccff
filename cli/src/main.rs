//! `mosaic`: the developer command of Mosaic Hybrid Retrieval.
//!
//! It manages the local database, applies migrations, loads and embeds the
//! catalog. Every subcommand is a thin adapter over the `mosaic` library.

mod bench_cmd;
mod bench_load;
mod contract_cmd;
mod embedder;
mod eval_cmd;
mod mcp_cmd;
mod receipts_cmd;
mod replay_cmd;
mod scoped_cmd;
mod search_cmd;
mod serve_cmd;

use anyhow::{bail, Context, Result};
use clap::{Args, Parser, Subcommand};
use mosaic::catalog::import;
use mosaic::db;
use mosaic::operation::Operation;
use mosaic_devtools::generator::{self, Generator, DEFAULT_PRODUCTS, DEFAULT_SEED};
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::time::Instant;

#[derive(Parser)]
#[command(
    name = "mosaic",
    version,
    about = "Mosaic Hybrid Retrieval developer command"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Args, Clone)]
struct DbArgs {
    /// Owner-role connection string (migrations and loading).
    #[arg(long, env = "MOSAIC_DATABASE_URL", default_value = db::LOCAL_OWNER_URL, hide_env_values = true)]
    database_url: String,
}

#[derive(Args, Clone)]
struct RuntimeArgs {
    /// Runtime-role connection string (what the service uses).
    #[arg(long = "runtime-database-url", env = "MOSAIC_RUNTIME_DATABASE_URL",
          default_value = db::LOCAL_RUNTIME_URL, hide_env_values = true)]
    url: String,
}

impl RuntimeArgs {
    /// The service context of the `mosaic` commands: the runtime-role
    /// connection, and the embedder and reranker the settings name.
    fn ctx(&self, embedder: &embedder::EmbedderArgs, connections: usize) -> Result<mosaic::Ctx> {
        let settings = mosaic::config::Settings::from_lookup(|k| match k {
            "MOSAIC_DATABASE_URL" => Some(self.url.clone()),
            k if k.starts_with("MOSAIC_DB_") => None,
            k => embedder.lookup(k),
        })
        .map_err(anyhow::Error::msg)?;
        embedder::block_on(mosaic::config::build_context(&settings, connections))
            .map_err(anyhow::Error::msg)
    }
}

/// Where an operation runs: in-process (default) or against `--server`.
#[derive(Args, Clone)]
struct TargetArgs {
    /// Base URL of a running `mosaic serve` (e.g. http://127.0.0.1:8787);
    /// without it the operation runs in-process.
    #[arg(long, env = "MOSAIC_SERVER")]
    server: Option<String>,
    /// Principal of the caller (receipts are bound to it).
    #[arg(long, default_value = "anonymous")]
    principal: String,
    #[command(flatten)]
    runtime: RuntimeArgs,
    #[command(flatten)]
    embedder: embedder::EmbedderArgs,
}

impl TargetArgs {
    fn target(&self) -> Result<scoped_cmd::Target> {
        Ok(match &self.server {
            Some(url) => scoped_cmd::Target::Server(url.clone()),
            None => scoped_cmd::Target::Local(Box::new(self.runtime.ctx(&self.embedder, 2)?)),
        })
    }

    fn principal(&self) -> mosaic::Principal {
        mosaic::Principal(self.principal.clone())
    }

    /// Runs `op` on flat logical arguments where these flags say.
    async fn call(&self, op: Operation, args: serde_json::Value) -> Result<serde_json::Value> {
        scoped_cmd::call(&self.target()?, &self.principal(), op, args).await
    }
}

#[derive(Subcommand)]
enum Command {
    /// Manage the local PostgreSQL cluster (start, stop, status, url).
    Db {
        #[arg(value_parser = ["start", "stop", "status", "url", "ensure", "install"])]
        action: String,
        /// For `url`: owner, runtime or admin.
        role: Option<String>,
    },
    /// Apply pending migrations (idempotent).
    Migrate {
        #[command(flatten)]
        db: DbArgs,
        /// Dimension of the embedding column (384 local model, 1024 Titan v2 / Cohere).
        #[arg(long, env = "MOSAIC_EMBEDDING_DIM", default_value_t = 384)]
        embedding_dim: usize,
        /// Role the functions connect as.
        #[arg(long, env = "MOSAIC_RUNTIME_ROLE", default_value = "mosaic_runtime")]
        runtime_role: String,
    },
    /// Load the sample catalog (`--sample`) or import files.
    Load {
        #[command(flatten)]
        db: DbArgs,
        /// Generate the deterministic sample catalog (replaces the catalog).
        #[arg(long)]
        sample: bool,
        /// With --sample: number of products. Otherwise: a products file (.jsonl or .csv).
        #[arg(long)]
        products: Option<String>,
        /// Evidence file (.jsonl).
        #[arg(long)]
        evidence: Option<PathBuf>,
        /// With --sample: generator seed.
        #[arg(long, default_value_t = DEFAULT_SEED)]
        seed: u64,
        /// With --sample: do nothing when the catalog already holds products.
        #[arg(long)]
        if_empty: bool,
    },
    /// Embed projection rows whose text or model changed (resumable).
    Embed {
        #[command(flatten)]
        db: DbArgs,
        #[command(flatten)]
        embedder: embedder::EmbedderArgs,
        /// Rows per model call.
        #[arg(long, default_value_t = 32)]
        batch: usize,
        /// Model calls in flight (the local model uses one core per call).
        #[arg(long, default_value_t = 2)]
        workers: usize,
    },
    /// Search the catalog (search_products) and print the results.
    Search {
        /// The query; omit it to search by filters alone.
        query: Option<String>,
        /// A filter, KEY=VALUE (repeatable): domain, category_key, brand,
        /// availability (comma list), in_stock_only, min_price_cents,
        /// max_price_cents, min_rating, attributes.NAME.
        #[arg(long = "filter", short = 'f')]
        filters: Vec<String>,
        #[arg(long, default_value_t = 10)]
        limit: i64,
        /// How many of the results to grant (defaults to --limit).
        #[arg(long)]
        authorized_limit: Option<i64>,
        /// Skip the rerank stage.
        #[arg(long)]
        no_rerank: bool,
        /// Print the JSON response instead of a table.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        target: TargetArgs,
    },
    /// Evidence for one granted product of a search (get_product_evidence).
    Evidence {
        /// The search_event_id of the search (the retrieval scope).
        event: String,
        product_id: String,
        /// The question the evidence should answer.
        question: String,
        #[arg(long, default_value_t = 5)]
        limit: i64,
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        target: TargetArgs,
    },
    /// Compare 2 to 5 granted products of a search (compare_products).
    Compare {
        event: String,
        #[arg(num_args = 2..=5, required = true)]
        product_ids: Vec<String>,
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        target: TargetArgs,
    },
    /// Show what a search did: the event and its whole pool (explain_retrieval).
    Explain {
        event: String,
        /// Pool rows to print.
        #[arg(long, default_value_t = 15)]
        rows: usize,
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        target: TargetArgs,
    },
    /// Serve the HTTP API locally (the routes of the Lambda functions).
    Serve {
        /// Address to listen on.
        #[arg(long, env = "MOSAIC_ADDR", default_value = serve_cmd::DEFAULT_ADDR)]
        addr: std::net::SocketAddr,
        #[command(flatten)]
        runtime: RuntimeArgs,
        #[command(flatten)]
        embedder: embedder::EmbedderArgs,
    },
    /// Serve the four operations as an MCP server (stdio, or streamable
    /// HTTP with --http) for agents and desktop MCP clients.
    Mcp(mcp_cmd::McpArgs),
    /// Generate the artefacts projected from the contract (SKILL.md table,
    /// HTTP reference, OpenAPI, AgentCore tools); --check only compares.
    Contract {
        #[arg(value_parser = ["generate"])]
        action: String,
        /// Write nothing; fail when a generated file is missing or differs.
        #[arg(long)]
        check: bool,
    },
    /// Measure retrieval quality (`eval generate` writes a judged query set).
    Eval(eval_cmd::EvalArgs),
    /// Benchmark latency per stage, recall, floor ratio and throughput on
    /// dedicated databases (hashing embedder; local reranker off).
    Bench(bench_cmd::BenchArgs),
    /// Replay a recorded search (or a sample of recent ones) against the
    /// current catalog and models and show what changed (owner role).
    Replay(replay_cmd::ReplayArgs),
    /// Keep receipts for the retention period: purge now, or schedule the
    /// purge with pg_cron (owner role).
    Receipts(receipts_cmd::ReceiptsArgs),
    /// Print catalog statistics.
    Stats {
        #[command(flatten)]
        db: DbArgs,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

fn print_or_json(
    v: &serde_json::Value,
    json: bool,
    table: impl Fn(&serde_json::Value),
) -> Result<()> {
    if json {
        println!("{}", serde_json::to_string_pretty(v)?);
    } else {
        table(v);
    }
    Ok(())
}

/// Prints load progress: one updating line on a terminal, plain lines in logs.
fn progress_line(stage: &str, done: u64, total: u64) {
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

async fn connect(db: &DbArgs) -> Result<tokio_postgres::Client> {
    db::connect(&db.database_url).await.map_err(|e| {
        anyhow::anyhow!(
            "cannot connect to the database: {e}\n(for the local one run `mosaic db start` or `make db`)"
        )
    })
}

fn repo_script(name: &str) -> PathBuf {
    if let Ok(dir) = std::env::var("MOSAIC_REPO") {
        return PathBuf::from(dir).join("scripts").join(name);
    }
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../scripts")).join(name)
}

#[tokio::main]
async fn main() -> Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("MOSAIC_LOG")
                .unwrap_or_else(|_| "warn".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    match cli.command {
        Command::Db { action, role } => {
            let script = repo_script("db.sh");
            let mut cmd = std::process::Command::new("bash");
            cmd.arg(&script).arg(&action);
            if let Some(role) = role {
                cmd.arg(role);
            }
            let status = cmd
                .status()
                .with_context(|| format!("cannot run {}", script.display()))?;
            std::process::exit(status.code().unwrap_or(1));
        }
        Command::Migrate {
            db: d,
            embedding_dim,
            runtime_role,
        } => {
            let mut client = connect(&d).await?;
            let opts = db::MigrateOptions {
                embedding_dim,
                runtime_role,
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
        }
        Command::Load {
            db: d,
            sample,
            products,
            evidence,
            seed,
            if_empty,
        } => {
            let mut client = connect(&d).await?;
            if sample && if_empty {
                let n: i64 = client
                    .query_one("SELECT count(*) FROM catalog.products", &[])
                    .await?
                    .get(0);
                if n > 0 {
                    println!("catalog already holds {n} products; leaving it as it is (drop --if-empty to reload)");
                    return Ok(());
                }
            }
            let mut progress =
                |stage: &str, done: u64, total: u64| progress_line(stage, done, total);
            if sample {
                if evidence.is_some() {
                    bail!("--evidence is for file imports; --sample generates its own evidence");
                }
                let n = match products {
                    None => DEFAULT_PRODUCTS,
                    Some(s) => s.replace('_', "").parse().with_context(|| {
                        format!("with --sample, --products takes a number of products, not `{s}`")
                    })?,
                };
                eprintln!("loading the sample catalog: {n} products, seed {seed}");
                let report =
                    generator::load_sample(&mut client, Generator::new(seed, n), &mut progress)
                        .await?;
                println!(
                    "loaded {} products and {} evidence units in {:.1} s ({} projection rows)",
                    report.products, report.evidence, report.seconds, report.projection_rows
                );
            } else {
                if products.is_none() && evidence.is_none() {
                    bail!(
                        "nothing to load: use --sample, or --products FILE and/or --evidence FILE"
                    );
                }
                let started = Instant::now();
                let products = products.map(PathBuf::from);
                let report = import::import(
                    &mut client,
                    products.as_deref(),
                    evidence.as_deref(),
                    &mut progress,
                )
                .await?;
                println!(
                    "imported {} products and {} evidence units in {:.1} s ({} projection rows refreshed)",
                    report.products,
                    report.evidence,
                    started.elapsed().as_secs_f64(),
                    report.projection_rows
                );
            }
        }
        Command::Embed {
            db: d,
            embedder,
            batch,
            workers,
        } => {
            let client = connect(&d).await?;
            let embedder = embedder.build()?;
            eprintln!("embedding with {}", embedder.model_id());
            let mut last_print = Instant::now();
            let report = mosaic::embed_job::embed_pending(
                &client,
                embedder.as_ref(),
                batch.max(1),
                workers.max(1),
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
        }
        Command::Search {
            query,
            filters,
            limit,
            authorized_limit,
            no_rerank,
            json,
            target,
        } => {
            let mut args = search_cmd::parse_filters(&filters)?;
            args.insert("limit".into(), limit.into());
            args.insert("rerank".into(), (!no_rerank).into());
            args.insert("include_diagnostics".into(), true.into());
            if let Some(q) = query {
                args.insert("query".into(), q.into());
            }
            if let Some(a) = authorized_limit {
                args.insert("authorized_limit".into(), a.into());
            }
            let r = target.call(Operation::SearchProducts, args.into()).await?;
            print_or_json(&r, json, search_cmd::print_table)?;
        }
        Command::Evidence {
            event,
            product_id,
            question,
            limit,
            json,
            target,
        } => {
            let args = serde_json::json!({"retrieval_scope_id": event, "product_id": product_id,
                "evidence_query": question, "limit": limit});
            let r = target.call(Operation::GetProductEvidence, args).await?;
            print_or_json(&r, json, scoped_cmd::print_evidence)?;
        }
        Command::Compare {
            event,
            product_ids,
            json,
            target,
        } => {
            let args = serde_json::json!({"retrieval_scope_id": event, "product_ids": product_ids});
            let r = target.call(Operation::CompareProducts, args).await?;
            print_or_json(&r, json, scoped_cmd::print_compare)?;
        }
        Command::Explain {
            event,
            rows,
            json,
            target,
        } => {
            let args = serde_json::json!({ "retrieval_scope_id": event });
            let r = target.call(Operation::ExplainRetrieval, args).await?;
            print_or_json(&r, json, |v| scoped_cmd::print_explain(v, rows))?;
        }
        Command::Serve {
            addr,
            runtime,
            embedder,
        } => {
            let ctx = runtime.ctx(&embedder, serve_cmd::POOL_SIZE)?;
            serve_cmd::run(ctx, addr).await?;
        }
        Command::Mcp(args) => mcp_cmd::run(args).await?,
        Command::Contract { action, check } => contract_cmd::run(&action, check)?,
        Command::Eval(args) => eval_cmd::run(args).await?,
        Command::Bench(args) => bench_cmd::run(args).await?,
        Command::Receipts(args) => receipts_cmd::run(args).await?,
        Command::Replay(args) => replay_cmd::run(args).await?,
        Command::Stats { db: d, json } => {
            let client = connect(&d).await?;
            let s = mosaic::catalog::stats(&client).await?;
            if json {
                println!("{}", serde_json::to_string_pretty(&s)?);
            } else {
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
            }
        }
    }
    Ok(())
}
