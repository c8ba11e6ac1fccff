//! Reads on a replica: with a read pool on a streaming replica of the test
//! server (`scripts/db.sh replica start`, which `make test` runs), a search's
//! arms read the replica and its receipt is written on the writer, and the
//! scoped calls that check the receipt's grant read the writer, so they never
//! meet the replica's lag.
//!
//! The tests make sure the replica runs and streams first (`scripts/db.sh
//! replica start`, idempotent: it remakes a replica that fell too far behind).
//! The replica's URLs come from `MOSAIC_TEST_REPLICA_SERVER` (runtime role)
//! and `MOSAIC_TEST_REPLICA_ADMIN` (a superuser, to pause replay and to read
//! every session of `pg_stat_activity`). The tests pause the shared replica's
//! replay, so they run one at a time.

use mosaic::embed::HashingEmbedder;
use mosaic::scope::{compare_products, explain_retrieval, get_product_evidence};
use mosaic::search::{search_json, Shape};
use mosaic::{Ctx, Principal, RetrievalProfile};
use mosaic_integration_tests::{add_product_titled, connect, ctx, served, TestDb};
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_postgres::Client;

/// The replica's replay is shared by every test here.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

fn replica_server() -> String {
    std::env::var("MOSAIC_TEST_REPLICA_SERVER")
        .unwrap_or_else(|_| "postgres://mosaic_runtime:mosaic_runtime@127.0.0.1:54331".into())
}

fn replica_admin() -> String {
    std::env::var("MOSAIC_TEST_REPLICA_ADMIN")
        .unwrap_or_else(|_| "postgres://mosaic_admin:mosaic_admin@127.0.0.1:54331".into())
}

fn alice() -> Principal {
    Principal("alice".into())
}

/// Starts the replica, or checks that it streams, once per test binary.
fn replica_running() {
    static STARTED: std::sync::Once = std::sync::Once::new();
    STARTED.call_once(|| {
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../scripts/db.sh");
        let out = std::process::Command::new("bash")
            .args([script, "replica", "start"])
            .output()
            .expect("run scripts/db.sh replica start");
        assert!(
            out.status.success(),
            "scripts/db.sh replica start failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    });
}

/// A test database on the writer, replayed onto the replica, with the
/// replica's administrator connection (replay resumed).
async fn replicated(hint: &str) -> (TestDb, Client) {
    replica_running();
    let db = TestDb::with_sample(hint).await;
    let admin = connect(&format!("{}/postgres", replica_admin())).await;
    admin
        .batch_execute("SELECT pg_wal_replay_resume() WHERE pg_is_wal_replay_paused()")
        .await
        .expect("resume replay");
    caught_up(&db, &admin).await;
    (db, admin)
}

/// Waits until the replica has replayed everything the writer wrote so far.
async fn caught_up(db: &TestDb, replica_admin: &Client) {
    let writer = db.owner().await;
    let lsn: String = writer
        .query_one("SELECT pg_current_wal_lsn()::text", &[])
        .await
        .unwrap()
        .get(0);
    let deadline = Instant::now() + Duration::from_secs(180);
    loop {
        let done: bool = replica_admin
            .query_one(
                "SELECT coalesce(pg_last_wal_replay_lsn() >= $1::text::pg_lsn, false)",
                &[&lsn],
            )
            .await
            .unwrap()
            .get(0);
        if done {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the replica did not replay up to {lsn}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The serving context: writer on the test server, reads on the replica.
fn on_replica(db: &TestDb) -> Ctx {
    ctx(db, RetrievalProfile::default())
        .with_read_url(&format!("{}/{}", replica_server(), db.name), 4)
        .expect("read pool")
}

async fn search(c: &Ctx, body: Value) -> Value {
    search_json(c, &alice(), &body, Shape::Nested)
        .await
        .expect("search")
}

#[tokio::test]
async fn the_arms_read_the_replica_and_the_receipt_is_on_the_writer() {
    let _one = ONE_AT_A_TIME.lock().await;
    let (db, replica) = replicated("replica_arms").await;
    let c = on_replica(&db);

    // A lock replayed from the writer holds the replica's readers of the
    // projection: the arms wait there, where pg_stat_activity shows them.
    let mut writer = db.owner().await;
    let lock = writer.transaction().await.unwrap();
    lock.batch_execute("LOCK TABLE search.product_projection IN ACCESS EXCLUSIVE MODE")
        .await
        .unwrap();
    let held = "SELECT count(*) FROM pg_locks l JOIN pg_database d ON d.oid = l.database
                WHERE d.datname = $1 AND l.mode = 'AccessExclusiveLock' AND l.granted";
    wait_for(&replica, held, &db.name, |n| n > 0).await;
    let body = json!({"query": "wireless headphones", "limit": 5, "include_diagnostics": true});
    let pending = tokio::spawn({
        let c = c.clone();
        async move { search(&c, body).await }
    });
    // One statement per lane, each waiting for the lock on the replica.
    let waiting = "SELECT count(*) FROM pg_stat_activity
                   WHERE datname = $1 AND usename = 'mosaic_runtime' AND wait_event_type = 'Lock'";
    wait_for(&replica, waiting, &db.name, |n| n == 3).await;
    let mut statements: Vec<String> = replica
        .query(
            "SELECT split_part(query, ':', 1) FROM pg_stat_activity
             WHERE datname = $1 AND usename = 'mosaic_runtime' AND wait_event_type = 'Lock'",
            &[&db.name],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    statements.sort();
    assert_eq!(
        statements,
        [
            "-- Exact-identifier strategy",
            "-- Selectivity probe of the semantic arm",
            "-- Typo-tolerant arm, one step of its threshold cascade",
        ],
        "the arms' statements, one lane each, on the replica"
    );
    lock.rollback().await.unwrap();

    let r = pending.await.unwrap();
    for arm in ["lexical", "trigram", "semantic"] {
        assert_eq!(
            r["diagnostics"]["arms"][arm]["pool"],
            json!("reader"),
            "{arm}"
        );
    }
    let event = r["search_event_id"].as_str().unwrap().to_string();
    let receipts = "SELECT count(*) FROM receipts.search_events WHERE search_event_id::text = $1";
    let on_writer: i64 = writer.query_one(receipts, &[&event]).await.unwrap().get(0);
    assert_eq!(on_writer, 1, "the receipt is written on the writer");
}

/// Polls `sql` (one bigint, `$1` the database name) on `c` until `ok`.
async fn wait_for(c: &Client, sql: &str, dbname: &str, ok: impl Fn(i64) -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let n: i64 = c.query_one(sql, &[&dbname]).await.unwrap().get(0);
        if ok(n) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "timed out waiting for: {sql} (last {n})"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn a_new_product_reaches_the_arms_after_replay() {
    let _one = ONE_AT_A_TIME.lock().await;
    let (db, replica) = replicated("replica_lag").await;
    let c = on_replica(&db);
    let writer_only = ctx(&db, RetrievalProfile::default());
    replica
        .batch_execute("SELECT pg_wal_replay_pause()")
        .await
        .unwrap();

    add_product_titled(&db, "P-REPLICA-1", "Zephyrquill").await;

    let body = json!({"query": "zephyrquill", "limit": 5});
    let new = "P-REPLICA-1".to_string();
    assert_eq!(served(&search(&writer_only, body.clone()).await)[0], new);
    assert!(
        !served(&search(&c, body.clone()).await).contains(&new),
        "the paused replica has not replayed the product yet"
    );
    replica
        .batch_execute("SELECT pg_wal_replay_resume()")
        .await
        .unwrap();
    caught_up(&db, &replica).await;
    assert_eq!(served(&search(&c, body).await)[0], new);
}

#[tokio::test]
async fn scoped_calls_right_after_a_search_read_the_writer() {
    let _one = ONE_AT_A_TIME.lock().await;
    let (db, replica) = replicated("replica_scope").await;
    let c = on_replica(&db).with_reranker(Arc::new(mosaic::rerank::local::LocalReranker::new()));
    // With replay paused the receipt never reaches the replica: a scoped
    // call that read it there would be the generic 404.
    replica
        .batch_execute("SELECT pg_wal_replay_pause()")
        .await
        .unwrap();
    let r = search(
        &c,
        json!({"query": "wireless headphones", "limit": 5, "authorized_limit": 3}),
    )
    .await;
    let scope = r["search_event_id"].as_str().unwrap();
    let ids = served(&r);
    let evidence = get_product_evidence(
        &c,
        &alice(),
        &json!({"retrieval_scope_id": scope, "product_id": ids[0], "evidence_query": "battery"}),
    )
    .await;
    let compared = compare_products(
        &c,
        &alice(),
        &json!({"retrieval_scope_id": scope, "product_ids": [ids[0], ids[1]]}),
    )
    .await;
    let explained = explain_retrieval(&c, &alice(), &json!({"retrieval_scope_id": scope})).await;
    replica
        .batch_execute("SELECT pg_wal_replay_resume()")
        .await
        .unwrap();
    evidence.expect("evidence right after the search");
    compared.expect("compare right after the search");
    explained.expect("explain right after the search");
}

#[tokio::test]
async fn without_a_read_pool_the_arms_report_no_pool() {
    let db = TestDb::with_sample("replica_none").await;
    let c =
        ctx(&db, RetrievalProfile::default()).with_embedder(Arc::new(HashingEmbedder::new(384)));
    let r = search(
        &c,
        json!({"query": "wireless headphones", "limit": 3, "include_diagnostics": true}),
    )
    .await;
    for arm in ["lexical", "trigram", "semantic"] {
        assert!(r["diagnostics"]["arms"][arm].get("pool").is_none(), "{arm}");
    }
}

#[tokio::test]
async fn a_replica_that_cannot_be_reached_leaves_searches_on_the_writer() {
    let db = TestDb::with_sample("replica_gone").await;
    // A read pool on a port nothing listens on: every checkout is refused.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let c = ctx(&db, RetrievalProfile::default())
        .with_embedder(Arc::new(HashingEmbedder::new(384)))
        .with_read_url(
            &format!(
                "postgres://mosaic_runtime:mosaic_runtime@127.0.0.1:{port}/{}",
                db.name
            ),
            4,
        )
        .expect("read pool");
    let body = json!({"query": "wireless headphones", "limit": 5, "include_diagnostics": true});
    for _ in 0..2 {
        // The first search finds the replica gone; the second, within the
        // pause, reads the writer at once. Both are answered and recorded.
        let r = search(&c, body.clone()).await;
        let warnings = r["diagnostics"]["warnings"].to_string();
        assert!(warnings.contains("read replica unavailable"), "{warnings}");
        assert!(!r["results"].as_array().unwrap().is_empty());
        for arm in ["lexical", "trigram", "semantic"] {
            assert!(r["diagnostics"]["arms"][arm].get("pool").is_none(), "{arm}");
        }
        let event = r["search_event_id"].as_str().unwrap().to_string();
        let n: i64 = db
            .owner()
            .await
            .query_one(
                "SELECT count(*) FROM receipts.search_events WHERE search_event_id::text = $1",
                &[&event],
            )
            .await
            .unwrap()
            .get(0);
        assert_eq!(n, 1, "the receipt is written");
    }
    assert!(c.reader.as_ref().unwrap().paused.active());
}
