//! `mosaic serve`: the API on a local port, through the same router the
//! Lambda functions use ([`mosaic::http`]), until Ctrl-C or SIGTERM.

use crate::args::RuntimeArgs;
use crate::embedder::EmbedderArgs;
use anyhow::{Context, Result};
use clap::Args;
use mosaic::Ctx;
use std::net::SocketAddr;

/// Database connections of the server's pool.
pub const POOL_SIZE: usize = 8;

/// Default listen address.
pub const DEFAULT_ADDR: &str = "127.0.0.1:8787";

#[derive(Args)]
pub struct ServeArgs {
    /// Address to listen on.
    #[arg(long, env = "MOSAIC_ADDR", default_value = DEFAULT_ADDR)]
    addr: SocketAddr,
    /// Another name the server answers to in the `Host` header (repeatable),
    /// such as the name other machines reach it by; it always answers
    /// localhost, the loopback addresses and the address it is bound to.
    #[arg(long = "allowed-host", value_name = "NAME")]
    allowed_hosts: Vec<String>,
    #[command(flatten)]
    runtime: RuntimeArgs,
    #[command(flatten)]
    embedder: EmbedderArgs,
}

pub async fn run(args: ServeArgs) -> Result<()> {
    let ctx = args.runtime.ctx(&args.embedder, POOL_SIZE)?;
    serve(ctx, args.addr, &args.allowed_hosts).await
}

/// Serves on `addr` until Ctrl-C or SIGTERM.
async fn serve(ctx: Ctx, addr: SocketAddr, allowed_hosts: &[String]) -> Result<()> {
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("cannot listen on {addr}"))?;
    let addr = listener.local_addr()?;
    if !addr.ip().is_loopback() {
        eprintln!(
            "mosaic: WARNING: listening on {addr}, reachable beyond this machine; the local \
             server authenticates nobody, so any caller there may name any local principal. \
             Bind 127.0.0.1 or put an authenticating proxy in front."
        );
    }
    let hosts = mosaic::server::allowed_hosts(addr, allowed_hosts);
    eprintln!(
        "mosaic: answering the Host names {} (more with --allowed-host)",
        hosts.join(", ")
    );
    let base = format!("http://{addr}");
    println!("mosaic: serving on {base}");
    println!("  curl -s {base}/healthz");
    println!(
        "  curl -s -X POST {base}/api/search -H 'content-type: application/json' \\\n       -d '{{\"query\": \"wireless noise cancelling headphones\", \"limit\": 5}}'"
    );
    println!(
        "  curl -s {base}/api/retrieval/events/SEARCH_EVENT_ID   (same caller: no x-mosaic-principal, or the same one)"
    );
    println!("  (request logs: MOSAIC_LOG=info; stop with Ctrl-C)");
    mosaic::server::serve_with(
        ctx,
        listener,
        shutdown_signal(),
        mosaic::http::MAX_BODY,
        allowed_hosts,
    )
    .await
    .context("server failed")?;
    eprintln!("mosaic: stopped");
    Ok(())
}

/// Resolves on Ctrl-C or (on Unix) SIGTERM.
pub(crate) async fn shutdown_signal() {
    let ctrl_c = async {
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {},
        () = term => {},
    }
    eprintln!("mosaic: shutting down (finishing requests in flight)");
}
