//! The `mosaic` command against databases it must refuse. This test belongs
//! to the `mosaic-cli` package (see cli/Cargo.toml) so that cargo builds the
//! `mosaic` binary for it.

use mosaic::db::{self, MigrateOptions};
use mosaic_integration_tests::{forget_last_migration, TestDb};
use std::process::{Command, Output};

const MOSAIC: &str = env!("CARGO_BIN_EXE_mosaic");

/// `mosaic ARGS --database-url URL`, run to its end.
fn mosaic(args: &[&str], url: &str) -> Output {
    Command::new(MOSAIC)
        .args(args)
        .args(["--database-url", url])
        .output()
        .expect("run mosaic")
}

#[tokio::test]
async fn the_catalog_writing_commands_refuse_a_database_behind_this_build() {
    // Migrated, then one migration short: what a user who upgrades the
    // binary and forgets `mosaic migrate` has.
    let db = TestDb::empty("cli_behind").await;
    let mut c = db.owner().await;
    db::migrate(&mut c, &MigrateOptions::default())
        .await
        .unwrap();
    let last = forget_last_migration(&c).await;

    let dir = std::env::temp_dir().join(format!("mosaic-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let products = dir.join("products.jsonl");
    std::fs::write(
        &products,
        concat!(
            r#"{"product_id": "P0000001", "sku": "AC-KT0001", "model": "ACKT-1", "brand": "Acme", "#,
            r#""title": "Acme ACKT-1 Kettle", "domain": "home_kitchen", "category_key": "kettles", "#,
            r#""description": "A kettle.", "price_cents": 2500, "currency": "USD", "rating": 4.1, "#,
            r#""review_count": 3, "availability": "in_stock", "attributes": {}}"#,
            "\n"
        ),
    )
    .unwrap();
    let url = db.url();
    for args in [
        vec!["load", "--products", products.to_str().unwrap()],
        vec!["embed", "--embedder", "hashing"],
    ] {
        let out = mosaic(&args, &url);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?} succeeded: {stderr}");
        assert!(
            stderr.contains(&format!("lacks 1 migration(s) of this build, from {last}"))
                && stderr.contains("run `mosaic migrate` first"),
            "{args:?}: {stderr}"
        );
    }
    let count = |c: tokio_postgres::Client| async move {
        let n: i64 = c
            .query_one("SELECT count(*) FROM catalog.products", &[])
            .await
            .unwrap()
            .get(0);
        n
    };
    assert_eq!(
        count(db.owner().await).await,
        0,
        "a refused load wrote the catalog"
    );

    // Migrated again, the same load goes through.
    db::migrate(&mut c, &MigrateOptions::default())
        .await
        .unwrap();
    let out = mosaic(&["load", "--products", products.to_str().unwrap()], &url);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(count(db.owner().await).await, 1);
    std::fs::remove_dir_all(&dir).ok();
}

/// `mosaic ARGS` against the runtime role of `db`, with the hashing
/// embedder the sample's vectors were made with. It blocks in place: a
/// server the test runs goes on answering on the runtime's other worker.
fn mosaic_runtime(args: &[&str], db: &TestDb) -> Output {
    tokio::task::block_in_place(|| {
        Command::new(MOSAIC)
            .args(args)
            .args(["--runtime-database-url", &db.runtime_url()])
            .args(["--embedder", "hashing"])
            .env("MOSAIC_EMBEDDING_DIM", "384")
            .output()
            .expect("run mosaic")
    })
}

/// The JSON a command printed; a failure says what it wrote to stderr.
fn printed(out: &Output) -> serde_json::Value {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "failed: {stderr}");
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {stderr}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_named_principal_is_the_same_caller_in_process_and_through_a_server() {
    let db = TestDb::with_sample("cli_principal").await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let ctx = mosaic_integration_tests::ctx(&db, mosaic::RetrievalProfile::default());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(mosaic::server::serve(ctx, listener, async {
        let _ = stopped.await;
    }));
    let search = [
        "search",
        "kettle",
        "--no-rerank",
        "--json",
        "--principal",
        "alice",
    ];
    let event_of = |out: &Output| {
        printed(out)["search_event_id"]
            .as_str()
            .unwrap()
            .to_string()
    };

    // In-process, alice's search is bound to `local:alice`: what the server
    // makes of the same name.
    let event = event_of(&mosaic_runtime(&search, &db));
    assert_eq!(
        mosaic_integration_tests::principal_of(&db, &event).await,
        "local:alice"
    );
    // So alice reads it back through the server; bob reads it neither way.
    let explain = |who: &'static str| {
        ["explain", event.as_str(), "--json", "--principal", who].map(String::from)
    };
    let through = |mut a: Vec<String>| {
        a.extend(["--server".to_string(), base.clone()]);
        a
    };
    let run =
        |a: Vec<String>| mosaic_runtime(&a.iter().map(String::as_str).collect::<Vec<_>>(), &db);
    let r = printed(&run(through(explain("alice").to_vec())));
    assert_eq!(r["search_event_id"].as_str(), Some(event.as_str()), "{r}");
    assert!(
        !run(through(explain("bob").to_vec())).status.success(),
        "bob, through the server"
    );
    assert!(
        !run(explain("bob").to_vec()).status.success(),
        "bob, in-process"
    );

    // Through the server, alice's search reads back in-process as alice.
    let search_through = through(search.map(String::from).to_vec());
    let event = event_of(&run(search_through));
    assert_eq!(
        mosaic_integration_tests::principal_of(&db, &event).await,
        "local:alice"
    );
    printed(&mosaic_runtime(
        &["explain", &event, "--json", "--principal", "alice"],
        &db,
    ));

    // A name the server would refuse is refused in-process too, before any call.
    let out = mosaic_runtime(
        &["search", "kettle", "--json", "--principal", "alice smith"],
        &db,
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && stderr.contains("--principal"),
        "{stderr}"
    );

    stop.send(()).unwrap();
    server.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn explain_prints_the_stated_bounds_and_each_candidate_s_standing() {
    let db = TestDb::with_sample("cli_bounds").await;
    let search = [
        "search",
        "kettle under $30",
        "--json",
        "--principal",
        "alice",
    ];
    let r = printed(&mosaic_runtime(&search, &db));
    let event = r["search_event_id"].as_str().unwrap().to_string();
    let out = mosaic_runtime(
        &["explain", &event, "--principal", "alice", "--rows", "50"],
        &db,
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("bound \"under $30\": price at_most 3000 cents"),
        "{text}"
    );
    // Standing broken/kept: kettles at most $30 are 0/1, the rest 1/0.
    assert!(text.contains(" 0/1 ") && text.contains(" 1/0 "), "{text}");
}

/// `mosaic ARGS` with `url` as the runtime-role connection, to its end.
fn mosaic_at(args: &[&str], url: &str) -> Output {
    tokio::task::block_in_place(|| {
        Command::new(MOSAIC)
            .args(args)
            .args(["--runtime-database-url", url])
            .args(["--embedder", "hashing"])
            .env("MOSAIC_EMBEDDING_DIM", "384")
            .output()
            .expect("run mosaic")
    })
}

/// Runs `mosaic ARGS` with `url` as the runtime-role connection and
/// expects it to exit by itself within a minute (a server that started
/// instead is stopped and fails the test). Its stderr.
fn exits_refusing(args: &[&str], url: &str) -> String {
    let mut child = Command::new(MOSAIC)
        .args(args)
        .args(["--runtime-database-url", url])
        .args(["--embedder", "hashing"])
        .env("MOSAIC_EMBEDDING_DIM", "384")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run mosaic");
    let started = std::time::Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let mut stderr = String::new();
            std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut stderr).unwrap();
            assert!(!status.success(), "{args:?} succeeded: {stderr}");
            return stderr;
        }
        if started.elapsed() > std::time::Duration::from_secs(60) {
            child.kill().ok();
            panic!("{args:?} kept running against a database it should refuse");
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_service_commands_say_what_their_database_lacks_or_why_it_cannot_be_reached() {
    let db = TestDb::with_sample("cli_service_behind").await;
    let owner = db.owner().await;
    let runtime = db.runtime_url();
    // Current: the search runs.
    printed(&mosaic_at(&["search", "kettle", "--json"], &runtime));

    // One migration short: every service command refuses before it
    // starts, naming the migration and `mosaic migrate`.
    let last = forget_last_migration(&owner).await;
    let behind = format!("lacks 1 migration(s) of this build, from {last}: run `mosaic migrate`");
    let out = mosaic_at(&["search", "kettle"], &runtime);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && stderr.contains(&behind),
        "{stderr}"
    );
    for args in [
        vec!["serve", "--addr", "127.0.0.1:0"],
        vec!["mcp", "--anonymous"],
    ] {
        let stderr = exits_refusing(&args, &runtime);
        assert!(stderr.contains(&behind), "{args:?}: {stderr}");
    }

    // A record this role may not read (a role granted by hand): said as
    // such, and the search goes on.
    let mut c = db.owner().await;
    db::migrate(&mut c, &MigrateOptions::default())
        .await
        .unwrap();
    printed(&mosaic_at(&["search", "kettle", "--json"], &runtime));
    c.batch_execute("REVOKE SELECT ON mosaic_meta.migrations FROM mosaic_runtime")
        .await
        .unwrap();
    let out = mosaic_at(&["search", "kettle", "--json"], &runtime);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("may not read which migrations the database holds")
            && stderr.contains("GRANT SELECT ON mosaic_meta.migrations"),
        "{stderr}"
    );
    printed(&out);

    // A database never migrated: every migration is missing.
    let empty = TestDb::empty("cli_service_empty").await;
    let out = mosaic_at(&["search", "kettle"], &empty.runtime_url());
    let stderr = String::from_utf8_lossy(&out.stderr);
    let all = format!("lacks {} migration(s)", db::MIGRATIONS.len());
    assert!(!out.status.success() && stderr.contains(&all), "{stderr}");

    // No database at the address: the cause and where to look.
    let out = mosaic_at(
        &["search", "kettle"],
        "postgres://mosaic_runtime:mosaic_runtime@127.0.0.1:1/mosaic",
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success()
            && stderr.contains("temporarily unavailable")
            && stderr.contains("refused")
            && stderr.contains("mosaic db start"),
        "{stderr}"
    );
}

#[tokio::test]
async fn a_catalog_command_says_which_role_or_login_it_needs() {
    let db = TestDb::with_sample("cli_owner_hint").await;
    // The runtime role may not write the schema: the owner role may.
    let out = mosaic(&["migrate"], &db.runtime_url());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && stderr.contains("run it as the owner role"),
        "{stderr}"
    );
    // A wrong password says to check the login, not to start a database.
    let wrong = db.url().replacen(":mosaic_owner@", ":not-the-password@", 1);
    assert_ne!(wrong, db.url(), "the test's owner URL carries a password");
    let out = mosaic(&["migrate"], &wrong);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && stderr.contains("check the role and password"),
        "{stderr}"
    );
}
