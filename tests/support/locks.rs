//! An operation under a held lock: the answer is a 503 within the bound,
//! no statement of the runtime role is left running on the server, and the
//! next request after the lock is released is served at once. Shared by the
//! router's tests and the Lambda functions' tests.

use crate::TestDb;
use mosaic::RetrievalProfile;
use serde_json::Value;
use std::future::Future;
use std::time::{Duration, Instant};
use tokio_postgres::Client;

/// Time the machine may add to a bound before the 503 counts as late.
pub const SLACK: Duration = Duration::from_millis(1_500);

/// Statements of the runtime role still running (or waiting, or holding a
/// transaction open) on `db`. `observer` must be a session of the runtime
/// role itself: pg_stat_activity hides the state and query of other roles'
/// sessions from a role without pg_read_all_stats.
pub async fn running(observer: &Client, db: &TestDb) -> Vec<String> {
    let rows = observer
        .query(
            "SELECT coalesce(state, '?') || ' ' || coalesce(wait_event_type, '-') || ': ' || coalesce(query, '?')
               FROM pg_stat_activity
              WHERE datname = $1 AND usename = 'mosaic_runtime' AND pid <> pg_backend_pid()
                AND backend_type = 'client backend' AND state IS DISTINCT FROM 'idle'",
            &[&db.name],
        )
        .await
        .unwrap();
    rows.iter().map(|r| r.get(0)).collect()
}

/// Waits (briefly) until no runtime statement runs on `db`; returns what
/// still runs after the grace period.
pub async fn settled(observer: &Client, db: &TestDb, grace: Duration) -> Vec<String> {
    let until = Instant::now() + grace;
    loop {
        let left = running(observer, db).await;
        if left.is_empty() || Instant::now() > until {
            return left;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

/// The two bounds: the server's statement timeout alone, and the request
/// deadline alone (the statement would run a minute; the deadline cancels
/// it). Each with the time its 503 may take.
pub fn bounded_profiles() -> [(&'static str, RetrievalProfile, Duration); 2] {
    let statement = RetrievalProfile {
        statement_timeout_ms: 800,
        request_deadline_ms: 20_000,
        ..RetrievalProfile::default()
    };
    let deadline = RetrievalProfile {
        statement_timeout_ms: 60_000,
        request_deadline_ms: 1_200,
        ..RetrievalProfile::default()
    };
    [
        ("statement timeout", statement, Duration::from_millis(800)),
        ("request deadline", deadline, Duration::from_millis(1_200)),
    ]
}

/// The profile's two bounds as the functions read them from the environment.
pub fn bound_env(profile: &RetrievalProfile) -> [(&'static str, String); 2] {
    [
        (
            "MOSAIC_STATEMENT_TIMEOUT_MS",
            profile.statement_timeout_ms.to_string(),
        ),
        (
            "MOSAIC_REQUEST_DEADLINE_MS",
            profile.request_deadline_ms.to_string(),
        ),
    ]
}

/// Runs `op` while `lock` is held by another session, expecting a 503
/// within `budget` (plus [`SLACK`]), nothing left running, and a fast
/// success once the lock is gone.
pub async fn locked_then_served<F, Fut>(
    db: &TestDb,
    what: &str,
    lock: &str,
    budget: Duration,
    op: F,
) where
    F: Fn() -> Fut,
    Fut: Future<Output = (u16, Value)>,
{
    let mut locker = db.owner().await;
    let observer = db.runtime().await;
    assert!(
        running(&observer, db).await.is_empty(),
        "{what}: busy before"
    );
    let tx = locker.transaction().await.unwrap();
    tx.batch_execute(lock).await.unwrap();

    let t = Instant::now();
    let (status, body) = op().await;
    let took = t.elapsed();
    assert_eq!(status, 503, "{what}: {body}");
    assert_eq!(body["error"]["code"], "unavailable", "{what}");
    assert!(
        took < budget + SLACK,
        "{what}: 503 after {took:?}, budget {budget:?}"
    );
    // While the lock is still held: nothing of the runtime role waits on it.
    let left = settled(&observer, db, Duration::from_secs(2)).await;
    assert!(left.is_empty(), "{what}: still running: {left:?}");

    tx.rollback().await.unwrap();
    let t = Instant::now();
    let (status, body) = op().await;
    assert_eq!(status, 200, "{what}, next request: {body}");
    assert!(
        t.elapsed() < Duration::from_secs(2),
        "{what}: the next request took {:?}",
        t.elapsed()
    );
}
