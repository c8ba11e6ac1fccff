//! `mosaic bench --load`: the service under a hostile load, then every
//! answer checked against its receipt.
//!
//! The local HTTP server (the same router as the Lambdas) takes `requests`
//! searches from `concurrency` client threads: the bench queries under
//! rotating filter shapes, one in five a filters-only search, each with a
//! random `limit` (1..=20) and `authorized_limit` (0..=limit). Meanwhile a
//! killer, connected as the runtime role (a role may terminate its own
//! backends), terminates one of the server's database backends every
//! `kill_every_ms`. Afterwards, for every 200: its event exists,
//! `served_count` equals the results, the granted set is exactly the first
//! `authorized_limit` results (in the answer and in the receipt), and the
//! candidate rows equal the event's pool size. Any other status than 200 or
//! 503 is a failure too. Everything is seeded; nothing is timed by the
//! checks.

use anyhow::Result;
use mosaic::Ctx;
use mosaic_devtools::bench::{BenchQuery, ShapeBuilder, Summary};
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The load run's settings (`mosaic bench --load …`).
pub struct LoadOptions {
    pub requests: usize,
    pub concurrency: usize,
    pub kill_every_ms: u64,
}

/// One HTTP exchange of [`post_all`].
pub struct Reply {
    /// Which body was sent (its index).
    pub index: usize,
    /// The HTTP status; 0 when no answer came.
    pub status: u16,
    pub body: String,
    pub ms: f64,
}

/// Posts `n` JSON bodies (`bodies[i % len]`) to `url` from `c` client
/// threads, each with its own keep-alive connection and a 30 s timeout;
/// blocking. The throughput phase and the load check both send with it.
pub fn post_all(url: &str, bodies: &[String], n: usize, c: usize) -> Vec<Reply> {
    let next = AtomicUsize::new(0);
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..c.max(1))
            .map(|_| {
                let next = &next;
                scope.spawn(move || {
                    let agent = ureq::AgentBuilder::new()
                        .timeout(Duration::from_secs(30))
                        .build();
                    let mut out = Vec::new();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        if i >= n {
                            break;
                        }
                        let t = Instant::now();
                        let r = agent
                            .post(url)
                            .set("content-type", "application/json")
                            .send_string(&bodies[i % bodies.len()]);
                        let (status, body) = match r {
                            Ok(resp) => (resp.status(), resp.into_string().unwrap_or_default()),
                            Err(ureq::Error::Status(code, resp)) => {
                                (code, resp.into_string().unwrap_or_default())
                            }
                            Err(_) => (0, String::new()),
                        };
                        out.push(Reply {
                            index: i,
                            status,
                            body,
                            ms: t.elapsed().as_secs_f64() * 1000.0,
                        });
                    }
                    out
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_default())
            .collect()
    })
}

/// One request's outcome: the body it sent, the status and the answer.
struct Outcome {
    sent: Value,
    status: u16,
    answer: Value,
    ms: f64,
}

/// The request bodies, seeded.
fn bodies(shapes: &ShapeBuilder, queries: &[BenchQuery], n: usize) -> Vec<Value> {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(64);
    let filtered = ["broad", "selective", "very_selective", "anti_correlated"];
    (0..n)
        .map(|i| {
            let q = &queries[i % queries.len()];
            let limit: i64 = rng.gen_range(1..=20);
            let authorized: i64 = rng.gen_range(0..=limit);
            let mut b = if rng.gen_bool(0.2) {
                let shape = filtered[i % filtered.len()];
                json!({"filters": mosaic_devtools::bench::filters_json(&shapes.filters(shape, q))})
            } else {
                let shape =
                    mosaic_devtools::bench::SHAPES[i % mosaic_devtools::bench::SHAPES.len()];
                json!({"query": q.text,
                       "filters": mosaic_devtools::bench::filters_json(&shapes.filters(shape, q))})
            };
            b["limit"] = json!(limit);
            b["authorized_limit"] = json!(authorized);
            b
        })
        .collect()
}

/// What the receipt of one 200 says against the answer; `Some(reason)` when
/// they disagree.
async fn check(owner: &tokio_postgres::Client, o: &Outcome) -> Result<Option<String>> {
    let Some(id) = o.answer["search_event_id"]
        .as_str()
        .and_then(|s| uuid::Uuid::parse_str(s).ok())
    else {
        return Ok(Some("no search_event_id".into()));
    };
    let Some(tally) = mosaic::receipt::tally(owner, id).await? else {
        return Ok(Some(format!("{id}: a 200 without its receipt")));
    };
    let results = o.answer["results"].as_array().cloned().unwrap_or_default();
    let served = tally.served_count;
    let pool = tally.pool_size;
    let rows = tally.candidate_rows;
    let granted_ranks = tally.granted_served_ranks;
    let authorized = o.sent["authorized_limit"].as_i64().unwrap_or(-1);
    let want_granted = (authorized as usize).min(results.len());
    let answer_granted: Vec<bool> = results
        .iter()
        .map(|r| r["granted"].as_bool().unwrap_or(false))
        .collect();
    let first_only = answer_granted
        .iter()
        .enumerate()
        .all(|(i, g)| *g == (i < want_granted));
    let receipt_first: Vec<Option<i32>> = (1..=want_granted as i32).map(Some).collect();
    Ok(if served as usize != results.len() {
        Some(format!(
            "{id}: served_count {served}, {} results",
            results.len()
        ))
    } else if !first_only {
        Some(format!(
            "{id}: the answer's grants are not the first {want_granted}"
        ))
    } else if granted_ranks != receipt_first {
        Some(format!("{id}: the receipt grants {granted_ranks:?}"))
    } else if rows != i64::from(pool) {
        Some(format!("{id}: {rows} candidate rows for a pool of {pool}"))
    } else {
        None
    })
}

/// Runs the load and the checks; prints a summary and returns it as JSON.
pub async fn run(
    ctx: &Ctx,
    owner: &tokio_postgres::Client,
    runtime_url: &str,
    shapes: &ShapeBuilder,
    queries: &[BenchQuery],
    opts: &LoadOptions,
) -> Result<Value> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(mosaic::server::serve(ctx.clone(), listener, async {
        let _ = stopped.await;
    }));
    let url = format!("http://{addr}/api/search");
    let sent = Arc::new(bodies(shapes, queries, opts.requests));

    // The killer: one of the runtime role's other backends, terminated.
    let killer_client = mosaic::db::connect_plain(runtime_url).await?;
    let (kill_stop, mut kill_stopped) = tokio::sync::oneshot::channel::<()>();
    let every = Duration::from_millis(opts.kill_every_ms.max(1));
    let killer = tokio::spawn(async move {
        let mut killed = 0u64;
        loop {
            tokio::select! {
                _ = &mut kill_stopped => break,
                _ = tokio::time::sleep(every) => {
                    if let Ok(r) = killer_client
                        .query_one(
                            "SELECT count(pg_terminate_backend(pid)) FROM (
                                 SELECT pid FROM pg_stat_activity
                                 WHERE usename = current_user AND datname = current_database()
                                   AND pid <> pg_backend_pid()
                                 ORDER BY random() LIMIT 1) t",
                            &[],
                        )
                        .await
                    {
                        killed += r.get::<_, i64>(0) as u64;
                    }
                }
            }
        }
        killed
    });

    let (n, c) = (opts.requests, opts.concurrency.max(1));
    let started = Instant::now();
    let texts: Vec<String> = sent.iter().map(Value::to_string).collect();
    let replies = {
        let url = url.clone();
        tokio::task::spawn_blocking(move || post_all(&url, &texts, n, c)).await?
    };
    let outcomes: Vec<Outcome> = replies
        .into_iter()
        .map(|r| Outcome {
            sent: sent[r.index].clone(),
            status: r.status,
            answer: serde_json::from_str(&r.body).unwrap_or(Value::Null),
            ms: r.ms,
        })
        .collect();
    let secs = started.elapsed().as_secs_f64();
    let _ = kill_stop.send(());
    let killed = killer.await.unwrap_or(0);
    let _ = stop.send(());
    let _ = server.await;

    let mut failures: Vec<String> = Vec::new();
    let (mut ok, mut unavailable, mut other) = (0usize, 0usize, 0usize);
    let mut lat = Vec::new();
    for o in &outcomes {
        match o.status {
            200 => {
                ok += 1;
                lat.push(o.ms);
                if let Some(f) = check(owner, o).await? {
                    failures.push(f);
                }
            }
            503 => unavailable += 1,
            s => {
                other += 1;
                failures.push(format!("status {s}: {}", o.answer));
            }
        }
    }
    let x: Summary = mosaic_devtools::bench::summarize(&lat);
    println!(
        "\nload: {n} searches, concurrency {c}, a runtime backend terminated every {} ms ({killed} terminated)",
        opts.kill_every_ms
    );
    println!(
        "  200: {ok}   503: {unavailable} ({:.1}%)   other: {other}   {:.1} searches/s   p50 {:.1} ms   p95 {:.1} ms   p99 {:.1} ms",
        100.0 * unavailable as f64 / n.max(1) as f64,
        ok as f64 / secs,
        x.p50,
        x.p95,
        x.p99
    );
    println!(
        "  checked every 200 against its receipt (event, served_count, the first authorized_limit granted, candidate rows = pool): {}",
        if failures.is_empty() {
            "all hold".to_string()
        } else {
            format!("{} FAILED", failures.len())
        }
    );
    for f in failures.iter().take(10) {
        println!("    {f}");
    }
    Ok(json!({
        "requests": n, "concurrency": c, "kill_every_ms": opts.kill_every_ms,
        "backends_terminated": killed, "ok": ok, "unavailable": unavailable, "other": other,
        "unavailable_rate": unavailable as f64 / n.max(1) as f64,
        "seconds": secs, "latency_ms": x, "failures": failures,
    }))
}
