//! Fault injection between the service and PostgreSQL, through a TCP proxy
//! of the test's own that understands just enough of the protocol to cut a
//! connection at the worst moments of a receipt write:
//!
//! - after the receipt's INSERTs and its COMMIT reached the server, before
//!   the server's reply reaches the service (the receipt is committed, the
//!   service cannot know): the search is a 503, never a 200;
//! - before the COMMIT is forwarded (the server rolls back): a 503 and no
//!   receipt;
//! - a half-open connection (the proxy stops relaying but keeps both sockets
//!   open): a 503 within the request deadline.
//!
//! Whatever the fault, every 200 has its receipt, and the next search after
//! the fault is served.

use mosaic::context::Principal;
use mosaic::http::{self, HttpRequest};
use mosaic::{Ctx, RetrievalProfile};
use mosaic_integration_tests::TestDb;
use serde_json::{json, Value};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

/// What the proxy does to the next receipt write it sees.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
enum Fault {
    None = 0,
    /// Forward the COMMIT, then close both sockets before the reply.
    CutAfterCommit = 1,
    /// Close both sockets instead of forwarding the COMMIT.
    CutBeforeCommit = 2,
    /// Stop relaying in both directions at the COMMIT; keep the sockets.
    HalfOpen = 3,
}

struct Proxy {
    addr: SocketAddr,
    fault: Arc<AtomicU8>,
    task: JoinHandle<()>,
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

impl Proxy {
    async fn start(upstream: String) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let fault = Arc::new(AtomicU8::new(Fault::None as u8));
        let task = {
            let fault = fault.clone();
            tokio::spawn(async move {
                while let Ok((client, _)) = listener.accept().await {
                    let Ok(server) = TcpStream::connect(&upstream).await else {
                        continue;
                    };
                    tokio::spawn(relay(client, server, fault.clone()));
                }
            })
        };
        Proxy { addr, fault, task }
    }

    fn arm(&self, f: Fault) {
        self.fault.store(f as u8, Ordering::SeqCst);
    }
}

/// Relays one connection; when the client side sends the COMMIT of a
/// transaction that inserted candidates, applies the armed fault once.
async fn relay(client: TcpStream, server: TcpStream, fault: Arc<AtomicU8>) {
    let (mut cr, mut cw) = client.into_split();
    let (mut sr, mut sw) = server.into_split();
    let (stop_tx, mut stop_rx) = tokio::sync::watch::channel(false);
    let up = async move {
        let mut buf = vec![0u8; 64 * 1024];
        let mut wrote_receipt = false;
        loop {
            let n = match cr.read(&mut buf).await {
                Ok(0) | Err(_) => return None,
                Ok(n) => n,
            };
            let chunk = &buf[..n];
            wrote_receipt |= contains(chunk, b"receipts.search_candidates");
            if wrote_receipt && contains(chunk, b"COMMIT") {
                wrote_receipt = false;
                let f = fault.swap(Fault::None as u8, Ordering::SeqCst);
                match f {
                    x if x == Fault::CutAfterCommit as u8 => {
                        let _ = stop_tx.send(true);
                        let _ = sw.write_all(chunk).await;
                        // Give the server the COMMIT, then vanish.
                        tokio::time::sleep(Duration::from_millis(200)).await;
                        return None;
                    }
                    x if x == Fault::CutBeforeCommit as u8 => {
                        let _ = stop_tx.send(true);
                        return None;
                    }
                    x if x == Fault::HalfOpen as u8 => {
                        let _ = stop_tx.send(true);
                        // Keep both sockets, relay nothing more.
                        return Some((cr, sw));
                    }
                    _ => {}
                }
            }
            if sw.write_all(chunk).await.is_err() {
                return None;
            }
        }
    };
    let down = async move {
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            tokio::select! {
                r = sr.read(&mut buf) => {
                    let n = match r { Ok(0) | Err(_) => return None, Ok(n) => n };
                    if *stop_rx.borrow() {
                        continue;
                    }
                    if cw.write_all(&buf[..n]).await.is_err() {
                        return None;
                    }
                }
                changed = stop_rx.changed() => {
                    // Stopped, or the client side is gone.
                    if changed.is_err() || *stop_rx.borrow() {
                        return Some((sr, cw));
                    }
                }
            }
        }
    };
    let (kept_up, kept_down) = tokio::join!(up, down);
    if kept_up.is_some() {
        // Half-open: hold the sockets until the far side gives up.
        tokio::time::sleep(Duration::from_secs(30)).await;
    }
    drop(kept_down);
}

async fn search(ctx: &Ctx, query: &str) -> (u16, Value) {
    let body = json!({"query": query, "rerank": false}).to_string();
    let resp = http::handle(
        ctx,
        &Principal("local:faults".into()),
        HttpRequest {
            method: "POST",
            path: "/api/search",
            query: "",
            body: body.as_bytes(),
            request_id: "faults",
        },
    )
    .await;
    (
        resp.status,
        serde_json::from_slice(&resp.body).unwrap_or(Value::Null),
    )
}

async fn receipt_exists(c: &tokio_postgres::Client, id: &str) -> bool {
    let id: uuid::Uuid = id.parse().unwrap();
    c.query_one(
        "SELECT count(*) FROM receipts.search_events WHERE search_event_id = $1",
        &[&id],
    )
    .await
    .unwrap()
    .get::<_, i64>(0)
        == 1
}

async fn events(c: &tokio_postgres::Client) -> i64 {
    c.query_one("SELECT count(*) FROM receipts.search_events", &[])
        .await
        .unwrap()
        .get(0)
}

#[tokio::test]
async fn a_connection_cut_around_the_receipt_commit_never_yields_a_200_without_its_receipt() {
    let db = TestDb::with_sample("faults_commit").await;
    let url = db.runtime_url();
    let host_port = url
        .split('@')
        .nth(1)
        .and_then(|rest| rest.split('/').next())
        .unwrap()
        .to_string();
    let proxy = Proxy::start(host_port.clone()).await;
    let proxied = url.replacen(&host_port, &proxy.addr.to_string(), 1);
    let profile = RetrievalProfile {
        request_deadline_ms: 2_000,
        ..RetrievalProfile::default()
    };
    let ctx = Ctx::from_url(&proxied, 2, profile)
        .unwrap()
        .with_embedder(Arc::new(mosaic::embed::HashingEmbedder::new(384)));
    let observer = db.runtime().await;

    let queries = [
        "espresso machine",
        "wireless headphones",
        "trail running shoes",
    ];
    let faults = [
        Fault::None,
        Fault::CutAfterCommit,
        Fault::None,
        Fault::CutBeforeCommit,
        Fault::None,
        Fault::HalfOpen,
        Fault::None,
        Fault::CutAfterCommit,
        Fault::None,
    ];
    for (i, fault) in faults.iter().enumerate() {
        proxy.arm(*fault);
        let before = events(&observer).await;
        let t = Instant::now();
        let (status, body) = search(&ctx, queries[i % queries.len()]).await;
        let took = t.elapsed();
        match status {
            200 => {
                let id = body["search_event_id"].as_str().unwrap();
                assert!(
                    receipt_exists(&observer, id).await,
                    "{fault:?}: a 200 without its receipt"
                );
            }
            503 => assert_eq!(body["error"]["code"], "unavailable"),
            other => panic!("{fault:?}: status {other}: {body}"),
        }
        let grew = events(&observer).await - before;
        match fault {
            Fault::None => assert_eq!((status, grew), (200, 1), "{body}"),
            // The server committed; the service could not know it did.
            Fault::CutAfterCommit => assert_eq!((status, grew), (503, 1), "{body}"),
            Fault::CutBeforeCommit => assert_eq!((status, grew), (503, 0), "{body}"),
            Fault::HalfOpen => {
                assert_eq!(status, 503, "{body}");
                assert!(took < Duration::from_secs(4), "half-open took {took:?}");
            }
        }
    }
}
