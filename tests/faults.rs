//! Fault injection between the service and PostgreSQL, through a TCP proxy
//! of the test's own that understands just enough of the protocol to cut a
//! connection at the worst moments of a receipt write:
//!
//! - after the receipt's write and its COMMIT reached the server, before
//!   the server's reply reaches the service (the receipt is committed, the
//!   service cannot know): the search is a 503, never a 200;
//! - before the COMMIT is forwarded (the server rolls back): a 503 and no
//!   receipt;
//! - a half-open connection (the proxy stops relaying but keeps both sockets
//!   open): a 503 within the request deadline.
//!
//! - a restart in the middle of load (8 concurrent searchers, 104
//!   searches): every open connection cut and new ones refused for a
//!   second, then the database back.
//!
//! - a catalog import that commits between the arms' statements and
//!   hydration (the proxy holds the hydration statement while the test
//!   commits): a product that left the filters meanwhile is not served.
//!
//! Whatever the fault, every 200 has its receipt (after the restart: the
//! event, `served_count` equal to the results, the candidate rows equal to
//! the pool size, exactly the first `authorized_limit` results granted),
//! every failure is a 503, and the searches after the fault are served.

use mosaic::context::Principal;
use mosaic::http::{self, HttpRequest};
use mosaic::{Ctx, RetrievalProfile};
use mosaic_integration_tests::TestDb;
use serde_json::{json, Value};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering};
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
    /// Hold the next hydration statement until the test releases it.
    HoldHydration = 4,
}

/// The hydration statement's own text (`shared/src/search/sql/hydrate.sql`).
const HYDRATION_MARK: &[u8] = b"CASE WHEN $12 THEN pp.document";

/// A held statement: the proxy says when it holds one, the test when to
/// forward it.
#[derive(Default)]
struct Hold {
    held: tokio::sync::Notify,
    release: tokio::sync::Notify,
}

struct Proxy {
    addr: SocketAddr,
    fault: Arc<AtomicU8>,
    hold: Arc<Hold>,
    /// While set, new connections are closed as soon as they are accepted.
    down: Arc<AtomicBool>,
    /// Bumped to cut every open connection.
    cut: Arc<tokio::sync::watch::Sender<u64>>,
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
    /// A proxy in front of `db`'s server, and `db`'s runtime URL through it.
    async fn in_front_of(db: &TestDb) -> (Proxy, String) {
        let url = db.runtime_url();
        let host_port = url
            .split('@')
            .nth(1)
            .and_then(|rest| rest.split('/').next())
            .unwrap()
            .to_string();
        let proxy = Proxy::start(host_port.clone()).await;
        let proxied = url.replacen(&host_port, &proxy.addr.to_string(), 1);
        (proxy, proxied)
    }

    async fn start(upstream: String) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let fault = Arc::new(AtomicU8::new(Fault::None as u8));
        let hold = Arc::new(Hold::default());
        let down = Arc::new(AtomicBool::new(false));
        let cut = Arc::new(tokio::sync::watch::channel(0u64).0);
        let task = {
            let (fault, hold, down, cut) = (fault.clone(), hold.clone(), down.clone(), cut.clone());
            tokio::spawn(async move {
                while let Ok((client, _)) = listener.accept().await {
                    if down.load(Ordering::SeqCst) {
                        drop(client);
                        continue;
                    }
                    let Ok(server) = TcpStream::connect(&upstream).await else {
                        continue;
                    };
                    let mut cut = cut.subscribe();
                    let relayed = relay(client, server, fault.clone(), hold.clone());
                    tokio::spawn(async move {
                        // A cut drops the relay, and with it both sockets.
                        tokio::select! {
                            _ = relayed => {}
                            _ = cut.changed() => {}
                        }
                    });
                }
            })
        };
        Proxy {
            addr,
            fault,
            hold,
            down,
            cut,
            task,
        }
    }

    fn arm(&self, f: Fault) {
        self.fault.store(f as u8, Ordering::SeqCst);
    }

    /// A database restart as the service sees it: every open connection is
    /// cut, new ones are refused for `outage`, then connections work again.
    async fn restart(&self, outage: Duration) {
        self.down.store(true, Ordering::SeqCst);
        self.cut.send_modify(|g| *g += 1);
        tokio::time::sleep(outage).await;
        self.down.store(false, Ordering::SeqCst);
    }
}

/// Relays one connection; when the client side sends the COMMIT of a
/// transaction that wrote a receipt, applies the armed fault once (or, for
/// [`Fault::HoldHydration`], holds the hydration statement until released).
async fn relay(client: TcpStream, server: TcpStream, fault: Arc<AtomicU8>, hold: Arc<Hold>) {
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
            if contains(chunk, HYDRATION_MARK)
                && fault
                    .compare_exchange(
                        Fault::HoldHydration as u8,
                        Fault::None as u8,
                        Ordering::SeqCst,
                        Ordering::SeqCst,
                    )
                    .is_ok()
            {
                hold.held.notify_one();
                hold.release.notified().await;
            }
            wrote_receipt |= contains(chunk, b"receipts.record(");
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
    search_with(ctx, &json!({"query": query, "rerank": false})).await
}

async fn search_with(ctx: &Ctx, body: &Value) -> (u16, Value) {
    let body = body.to_string();
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
    let (proxy, proxied) = Proxy::in_front_of(&db).await;
    let profile = RetrievalProfile {
        request_deadline_ms: 2_000,
        ..RetrievalProfile::default()
    };
    let ctx = Ctx::from_url(&proxied, 2, profile)
        .unwrap()
        .with_embedder(Arc::new(mosaic::embed::HashingEmbedder::new(384)));
    let observer = db.owner().await;

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
            Fault::HoldHydration => unreachable!(),
        }
    }
}

#[tokio::test]
async fn a_product_that_leaves_the_filters_while_a_search_runs_is_not_served() {
    let db = TestDb::with_sample("faults_hydration").await;
    let (proxy, proxied) = Proxy::in_front_of(&db).await;
    let ctx = Ctx::from_url(&proxied, 2, RetrievalProfile::default())
        .unwrap()
        .with_embedder(Arc::new(mosaic::embed::HashingEmbedder::new(384)));
    let mut owner = db.owner().await;
    // Everything under 1,000.00 qualifies at first.
    const MAX: i64 = 100_000;
    let body = json!({"query": "espresso machine", "rerank": false, "include_diagnostics": true,
                      "filters": {"max_price_cents": MAX}});
    let searched = || async {
        let (status, v) = search_with(&ctx, &body).await;
        assert_eq!(status, 200, "{v}");
        v
    };
    let ids = |v: &Value| -> Vec<String> {
        v["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["product_id"].as_str().unwrap().to_string())
            .collect()
    };
    let first = searched().await;
    let top = ids(&first)[0].clone();
    // The same search again, its hydration held while an import raises the
    // first result's price past the filter (the catalog and the projection
    // in one transaction, as `mosaic import` writes them) and commits.
    proxy.arm(Fault::HoldHydration);
    let raise = async {
        proxy.hold.held.notified().await;
        let tx = owner.transaction().await.unwrap();
        tx.execute(
            "UPDATE catalog.products SET price_cents = $2 WHERE product_id = $1",
            &[&top, &(MAX + 1)],
        )
        .await
        .unwrap();
        tx.execute("SELECT search.refresh_projection(ARRAY[$1::text])", &[&top])
            .await
            .unwrap();
        tx.commit().await.unwrap();
        proxy.hold.release.notify_one();
    };
    let (second, ()) = tokio::join!(searched(), raise);
    let served = ids(&second);
    assert!(
        !served.contains(&top),
        "{top} served above the filter: {second}"
    );
    for r in second["results"].as_array().unwrap() {
        assert!(r["price_cents"].as_i64().unwrap() <= MAX, "{r}");
    }
    // The arms still found it; its receipt's pool does not hold it either.
    let id: uuid::Uuid = second["search_event_id"].as_str().unwrap().parse().unwrap();
    let pooled: i64 = owner
        .query_one(
            "SELECT count(*) FROM receipts.search_candidates
              WHERE search_event_id = $1 AND product_id = $2",
            &[&id, &top],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(pooled, 0);
    // The answer says a member was dropped, and the pool's ranks run 1..its
    // size without the gap it left.
    let warnings = second["diagnostics"]["warnings"].to_string();
    assert!(warnings.contains("1 pool member was dropped"), "{warnings}");
    let ranks: Vec<i32> = owner
        .query(
            "SELECT pre_rerank_rank FROM receipts.search_candidates
              WHERE search_event_id = $1 ORDER BY pre_rerank_rank",
            &[&id],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(ranks, (1..=ranks.len() as i32).collect::<Vec<_>>());
    // The others keep their order.
    let before = ids(&first);
    assert_eq!(served[..before.len() - 1], before[1..]);
}

/// One search of the load run and what it answered.
struct Served {
    status: u16,
    body: Value,
    authorized_limit: i32,
    /// Sent after the restart was over.
    after_restart: bool,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_in_the_middle_of_load_loses_no_receipt_and_the_service_comes_back() {
    const TASKS: usize = 8;
    const PER_TASK: usize = 13;
    /// Requests each task sends before it waits for the restart to be over.
    const BEFORE: usize = 9;
    /// Completed requests after which the database restarts.
    const RESTART_AT: usize = 40;
    const LIMIT: i32 = 5;

    let db = TestDb::with_sample("faults_restart").await;
    let (proxy, proxied) = Proxy::in_front_of(&db).await;
    let profile = RetrievalProfile {
        request_deadline_ms: 2_000,
        ..RetrievalProfile::default()
    };
    let ctx = Arc::new(
        Ctx::from_url(&proxied, 4, profile)
            .unwrap()
            .with_embedder(Arc::new(mosaic::embed::HashingEmbedder::new(384))),
    );
    let observer = db.owner().await;
    let before_events = events(&observer).await;

    let queries = [
        "espresso machine",
        "wireless headphones",
        "trail running shoes",
        "kettle",
        "coffee grinder",
    ];
    let done = Arc::new(AtomicUsize::new(0));
    let (up_tx, up_rx) = tokio::sync::watch::channel(false);
    let started = Instant::now();
    let mut tasks = Vec::new();
    for t in 0..TASKS {
        let (ctx, done, mut up_rx) = (ctx.clone(), done.clone(), up_rx.clone());
        tasks.push(tokio::spawn(async move {
            let mut out = Vec::new();
            for i in 0..PER_TASK {
                if i == BEFORE {
                    up_rx.wait_for(|up| *up).await.unwrap();
                }
                let after_restart = *up_rx.borrow();
                let authorized_limit = ((t + i) % (LIMIT as usize + 1)) as i32;
                let body = json!({
                    "query": queries[(t * PER_TASK + i) % queries.len()],
                    "limit": LIMIT,
                    "authorized_limit": authorized_limit,
                    "rerank": false,
                })
                .to_string();
                let resp = http::handle(
                    &ctx,
                    &Principal("local:restart".into()),
                    HttpRequest {
                        method: "POST",
                        path: "/api/search",
                        query: "",
                        body: body.as_bytes(),
                        request_id: "restart",
                    },
                )
                .await;
                out.push(Served {
                    status: resp.status,
                    body: serde_json::from_slice(&resp.body).unwrap_or(Value::Null),
                    authorized_limit,
                    after_restart,
                });
                done.fetch_add(1, Ordering::SeqCst);
                // Paced, so that the restart finds requests in flight.
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            out
        }));
    }
    while done.load(Ordering::SeqCst) < RESTART_AT {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let restarted_at = started.elapsed();
    proxy.restart(Duration::from_secs(1)).await;
    up_tx.send(true).unwrap();
    let mut served = Vec::new();
    for task in tasks {
        served.extend(task.await.unwrap());
    }
    let took = started.elapsed();

    let mut ok = 0;
    let mut unavailable = 0;
    for s in &served {
        match s.status {
            200 => {
                ok += 1;
                check_receipt(&observer, s).await;
            }
            503 => {
                unavailable += 1;
                assert_eq!(s.body["error"]["code"], "unavailable", "{}", s.body);
                assert!(!s.after_restart, "a 503 after the restart: {}", s.body);
            }
            other => panic!("status {other}: {}", s.body),
        }
    }
    let after: Vec<&Served> = served.iter().filter(|s| s.after_restart).collect();
    assert!(after.len() >= TASKS * (PER_TASK - BEFORE));
    assert!(after.iter().all(|s| s.status == 200));
    // Every 200 wrote one receipt; a 503 may have (its COMMIT reached the
    // server, its reply did not), never more than one.
    let written = events(&observer).await - before_events;
    assert!(
        (ok..=ok + unavailable).contains(&(written as usize)),
        "{written} receipts for {ok} successes and {unavailable} failures"
    );
    eprintln!(
        "{} searches in {took:?} (restart at {restarted_at:?}, 1 s outage): {ok} x 200, {unavailable} x 503, {written} receipts",
        served.len()
    );
    assert!(took < Duration::from_secs(60), "the load run took {took:?}");
}

/// A served search's receipt: the event exists, `served_count` equals the
/// results, the candidate rows equal the pool size, and exactly the first
/// `authorized_limit` results are granted.
async fn check_receipt(c: &tokio_postgres::Client, s: &Served) {
    let id: uuid::Uuid = s.body["search_event_id"]
        .as_str()
        .unwrap_or_else(|| panic!("{}", s.body))
        .parse()
        .unwrap();
    let results = s.body["results"].as_array().unwrap();
    let event = c
        .query_opt(
            "SELECT pool_size, served_count, authorized_limit
             FROM receipts.search_events WHERE search_event_id = $1",
            &[&id],
        )
        .await
        .unwrap()
        .unwrap_or_else(|| panic!("a 200 without its receipt: {id}"));
    let (pool, served_count, authorized): (i32, i32, Option<i32>) =
        (event.get(0), event.get(1), event.get(2));
    assert_eq!(served_count as usize, results.len(), "{id}");
    assert_eq!(authorized, Some(s.authorized_limit), "{id}");
    let candidates: i64 = c
        .query_one(
            "SELECT count(*) FROM receipts.search_candidates WHERE search_event_id = $1",
            &[&id],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(candidates, i64::from(pool), "{id}");
    let granted: Vec<String> = c
        .query(
            "SELECT product_id FROM receipts.search_candidates
             WHERE search_event_id = $1 AND granted ORDER BY served_rank",
            &[&id],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    let first: Vec<String> = results
        .iter()
        .take(s.authorized_limit as usize)
        .map(|r| r["product_id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(granted, first, "{id}");
    for (i, r) in results.iter().enumerate() {
        assert_eq!(r["granted"], (i < s.authorized_limit as usize), "{id}: {r}");
    }
}
