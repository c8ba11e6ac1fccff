//! `mosaic bench --network-delay-ms`: a TCP relay between the service and
//! the database that holds every chunk for a fixed delay in each direction.
//! The local cluster answers a few microseconds away; a Lambda function
//! reaches Aurora through RDS Proxy about a millisecond away per round
//! trip, so a search's round trips, invisible locally, are what it waits for
//! there. The relay keeps the order of the bytes and adds no other cost
//! than the delay and one copy. It runs on plain threads, whose sleeps are
//! precise to tens of microseconds (the async runtime's timer ticks in
//! whole milliseconds).

use anyhow::{Context, Result};
use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Starts the relay to `target` (`host:port`) on an ephemeral local port
/// and returns that port. It runs until the process ends.
pub fn start(target: String, delay: Duration) -> Result<u16> {
    let listener =
        TcpListener::bind("127.0.0.1:0").context("network delay relay: cannot listen")?;
    let port = listener.local_addr()?.port();
    std::thread::spawn(move || {
        for client in listener.incoming().flatten() {
            let Ok(server) = TcpStream::connect(&target) else {
                continue;
            };
            for s in [&client, &server] {
                let _ = s.set_nodelay(true);
            }
            let (Ok(c2), Ok(s2)) = (client.try_clone(), server.try_clone()) else {
                continue;
            };
            delayed(client, s2, delay);
            delayed(server, c2, delay);
        }
    });
    Ok(port)
}

/// Copies `from` to `to` on two threads, each chunk written `delay` after
/// it was read.
fn delayed(mut from: TcpStream, mut to: TcpStream, delay: Duration) {
    let (tx, rx) = mpsc::channel::<(Instant, Vec<u8>)>();
    std::thread::spawn(move || {
        let mut buf = vec![0u8; 64 * 1024];
        while let Ok(n) = from.read(&mut buf) {
            if n == 0
                || tx
                    .send((Instant::now() + delay, buf[..n].to_vec()))
                    .is_err()
            {
                break;
            }
        }
    });
    std::thread::spawn(move || {
        while let Ok((due, chunk)) = rx.recv() {
            std::thread::sleep(due.saturating_duration_since(Instant::now()));
            if to.write_all(&chunk).is_err() {
                break;
            }
        }
        let _ = to.shutdown(Shutdown::Write);
    });
}

/// `url` with its host and port replaced by the relay's.
pub fn through(url: &str, port: u16) -> Result<String> {
    let at = format!("@{}/", target_of(url)?);
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
