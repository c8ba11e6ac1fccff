//! `mosaic bench --network-delay-ms`: a TCP relay between the service and
//! the database that holds every chunk for a fixed delay in each direction.
//! The local cluster answers a few microseconds away; a Lambda function
//! reaches Aurora through RDS Proxy about a millisecond away per round
//! trip, so a search's round trips, invisible locally, are what it waits for
//! there. The relay keeps the order of the bytes and adds no other cost
//! than the delay and one copy.

use anyhow::{Context, Result};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio::time::Instant;

/// Starts the relay to `target` (`host:port`) on an ephemeral local port
/// and returns that port. It runs until the process ends.
pub async fn start(target: String, delay: Duration) -> Result<u16> {
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .context("network delay relay: cannot listen")?;
    let port = listener.local_addr()?.port();
    tokio::spawn(async move {
        while let Ok((client, _)) = listener.accept().await {
            let target = target.clone();
            tokio::spawn(async move {
                if let Ok(server) = TcpStream::connect(&target).await {
                    let _ = client.set_nodelay(true);
                    let _ = server.set_nodelay(true);
                    let (cr, cw) = client.into_split();
                    let (sr, sw) = server.into_split();
                    tokio::spawn(delayed(cr, sw, delay));
                    tokio::spawn(delayed(sr, cw, delay));
                }
            });
        }
    });
    Ok(port)
}

/// Copies `from` to `to`, each chunk written `delay` after it was read.
async fn delayed(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    delay: Duration,
) {
    let (tx, mut rx) = mpsc::unbounded_channel::<(Instant, Vec<u8>)>();
    let writer = tokio::spawn(async move {
        while let Some((due, chunk)) = rx.recv().await {
            tokio::time::sleep_until(due).await;
            if to.write_all(&chunk).await.is_err() {
                break;
            }
        }
        let _ = to.shutdown().await;
    });
    let mut buf = vec![0u8; 64 * 1024];
    while let Ok(n) = from.read(&mut buf).await {
        if n == 0
            || tx
                .send((Instant::now() + delay, buf[..n].to_vec()))
                .is_err()
        {
            break;
        }
    }
    drop(tx);
    let _ = writer.await;
}

/// `url` with its host and port replaced by the relay's.
pub fn through(url: &str, port: u16) -> Result<String> {
    let config: tokio_postgres::Config = url.parse().context("database URL")?;
    let host = match config.get_hosts().first() {
        Some(tokio_postgres::config::Host::Tcp(h)) => h.clone(),
        _ => anyhow::bail!("network delay relay: the database URL needs a TCP host"),
    };
    let at = format!(
        "@{host}:{}/",
        config.get_ports().first().copied().unwrap_or(5432)
    );
    anyhow::ensure!(
        url.contains(&at),
        "network delay relay: the database URL must spell user@host:port/database"
    );
    Ok(url.replacen(&at, &format!("@127.0.0.1:{port}/"), 1))
}

/// The `host:port` a URL names.
pub fn target_of(url: &str) -> Result<String> {
    let config: tokio_postgres::Config = url.parse().context("database URL")?;
    match config.get_hosts().first() {
        Some(tokio_postgres::config::Host::Tcp(h)) => Ok(format!(
            "{h}:{}",
            config.get_ports().first().copied().unwrap_or(5432)
        )),
        _ => anyhow::bail!("network delay relay: the database URL needs a TCP host"),
    }
}
