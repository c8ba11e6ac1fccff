//! `mosaic`: the developer command of Mosaic Hybrid Retrieval.
//!
//! It manages the local database, applies migrations, loads and embeds the
//! catalog, runs the four operations and serves them. Every subcommand is a
//! thin adapter over the `mosaic` library, in its own `<name>_cmd` module;
//! this file only parses the arguments and dispatches.

mod args;
mod bench_cmd;
mod bench_load;
mod bench_relay;
mod compare_cmd;
mod contract_cmd;
mod db_cmd;
mod embed_cmd;
mod embedder;
mod eval_cmd;
mod evidence_cmd;
mod explain_cmd;
mod load_cmd;
mod mcp_cmd;
mod migrate_cmd;
mod receipts_cmd;
mod replay_cmd;
mod search_cmd;
mod serve_cmd;
mod stats_cmd;
mod table;
mod target;

use anyhow::Result;
use clap::{Parser, Subcommand};

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

#[derive(Subcommand)]
enum Command {
    /// Manage the local PostgreSQL cluster (start, stop, status, url).
    Db(db_cmd::DbCmdArgs),
    /// Apply pending migrations (idempotent).
    Migrate(migrate_cmd::MigrateArgs),
    /// Load the sample catalog (`--sample`) or import files.
    Load(load_cmd::LoadArgs),
    /// Embed projection rows whose text or model changed (resumable).
    Embed(embed_cmd::EmbedArgs),
    /// Search the catalog (search_products) and print the results.
    Search(search_cmd::SearchArgs),
    /// Evidence for one granted product of a search (get_product_evidence).
    Evidence(evidence_cmd::EvidenceArgs),
    /// Compare 2 to 5 granted products of a search (compare_products).
    Compare(compare_cmd::CompareArgs),
    /// Show what a search did: the event and its whole pool (explain_retrieval).
    Explain(explain_cmd::ExplainArgs),
    /// Serve the HTTP API locally (the routes of the Lambda functions).
    Serve(serve_cmd::ServeArgs),
    /// Serve the four operations as an MCP server (stdio, or streamable
    /// HTTP with --http) for agents and desktop MCP clients.
    Mcp(mcp_cmd::McpArgs),
    /// Generate the artefacts projected from the contract (SKILL.md table,
    /// HTTP reference, OpenAPI, AgentCore tools); --check only compares.
    Contract(contract_cmd::ContractArgs),
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
    Stats(stats_cmd::StatsArgs),
}

#[tokio::main]
async fn main() -> Result<()> {
    init_logging();
    match Cli::parse().command {
        Command::Db(args) => db_cmd::run(args),
        Command::Migrate(args) => migrate_cmd::run(args).await.map_err(args::owner_hint),
        Command::Load(args) => load_cmd::run(args).await.map_err(args::owner_hint),
        Command::Embed(args) => embed_cmd::run(args).await.map_err(args::owner_hint),
        Command::Search(args) => search_cmd::run(args).await,
        Command::Evidence(args) => evidence_cmd::run(args).await,
        Command::Compare(args) => compare_cmd::run(args).await,
        Command::Explain(args) => explain_cmd::run(args).await,
        Command::Serve(args) => serve_cmd::run(args).await,
        Command::Mcp(args) => mcp_cmd::run(args).await,
        Command::Contract(args) => contract_cmd::run(args),
        Command::Eval(args) => eval_cmd::run(args).await,
        Command::Bench(args) => bench_cmd::run(args).await,
        Command::Replay(args) => replay_cmd::run(args).await,
        Command::Receipts(args) => receipts_cmd::run(args).await,
        Command::Stats(args) => stats_cmd::run(args).await,
    }
}

/// Logs on stderr, filtered by `MOSAIC_LOG` (`warn` when unset or not a
/// filter). The MCP SDK's (`rmcp`) events below WARN are left out unless
/// `MOSAIC_LOG` names its target (`rmcp=debug`, `rmcp::service=info`...):
/// at INFO and DEBUG it prints the messages it receives whole, a call's
/// arguments and the client's details included, which a log must not
/// carry unless asked.
fn init_logging() {
    use tracing_subscriber::prelude::*;
    let (filter, names_rmcp) = match tracing_subscriber::EnvFilter::try_from_env("MOSAIC_LOG") {
        Ok(filter) => {
            let spec = std::env::var("MOSAIC_LOG").unwrap_or_default();
            (filter, names_target(&spec, "rmcp"))
        }
        Err(_) => (tracing_subscriber::EnvFilter::new("warn"), false),
    };
    let sdk = tracing_subscriber::filter::filter_fn(move |meta| {
        names_rmcp || *meta.level() <= tracing::Level::WARN || !in_target(meta.target(), "rmcp")
    });
    tracing_subscriber::registry()
        .with(filter)
        .with(
            tracing_subscriber::fmt::layer()
                .with_writer(std::io::stderr)
                .with_filter(sdk),
        )
        .init();
}

/// Whether a filter's directives (`target[span{field}]=level`, comma
/// separated) name `target` or a module within it.
fn names_target(spec: &str, target: &str) -> bool {
    spec.split(',').any(|directive| {
        let named = directive.split(['[', '=']).next().unwrap_or("").trim();
        in_target(named, target)
    })
}

/// Whether `module` is `target` or a module within it.
fn in_target(module: &str, target: &str) -> bool {
    module
        .strip_prefix(target)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with("::"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_filter_names_the_sdk_only_by_its_target() {
        assert!(names_target("info,rmcp=debug", "rmcp"));
        assert!(names_target("rmcp", "rmcp"));
        assert!(names_target("warn, rmcp::service=info", "rmcp"));
        assert!(names_target("rmcp[serve_inner]=trace", "rmcp"));
        assert!(!names_target("info", "rmcp"));
        assert!(!names_target("info,rmcpx=debug,mosaic=rmcp", "rmcp"));
        assert!(in_target("rmcp::transport::io", "rmcp"));
        assert!(!in_target("rmcp_macros", "rmcp"));
    }
}
