//! Test support: throw-away databases on the project's local PostgreSQL.
//!
//! Every test gets its own database, created from a template that holds the
//! migrated schema and the sample catalog with hashing-embedder vectors. The
//! template is built once per schema/generator version (under an advisory
//! lock, so parallel tests wait for one builder) and copied with
//! `CREATE DATABASE ... TEMPLATE`, which takes well under a second.
//!
//! The server is the one `make test` starts (`scripts/db.sh ensure`); set
//! `MOSAIC_TEST_SERVER` (`postgres://user:pass@host:port`, a role with
//! CREATEDB) to use another.

pub mod aws_stub;
pub mod locks;
pub mod tls_door;

use mosaic::db::{self, MigrateOptions};
use mosaic::embed::HashingEmbedder;
use mosaic_devtools::generator::{self, Generator};
use sha2_free::short_hash;
use std::sync::atomic::{AtomicU32, Ordering};
use tokio_postgres::Client;

/// Products in the template catalog.
pub const SAMPLE_PRODUCTS: u64 = 5_000;
/// Seed of the template catalog.
pub const SAMPLE_SEED: u64 = 42;

mod sha2_free {
    /// FNV-1a, enough to version the template by its inputs.
    pub fn short_hash(parts: &[&str]) -> String {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for p in parts {
            for b in p.bytes() {
                h ^= u64::from(b);
                h = h.wrapping_mul(0x0100_0000_01b3);
            }
        }
        format!("{:012x}", h & 0xffff_ffff_ffff)
    }
}

pub fn server() -> String {
    std::env::var("MOSAIC_TEST_SERVER")
        .unwrap_or_else(|_| "postgres://mosaic_owner:mosaic_owner@127.0.0.1:54329".into())
}

fn runtime_server() -> String {
    std::env::var("MOSAIC_TEST_RUNTIME_SERVER")
        .unwrap_or_else(|_| "postgres://mosaic_runtime:mosaic_runtime@127.0.0.1:54329".into())
}

/// Connects, waiting out a server that is starting, recovering or out of
/// connection slots (up to 30 s); any other failure panics with the server's
/// own message and the end of the local server's log.
pub async fn connect(url: &str) -> Client {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let e = match db::connect_plain(url).await {
            Ok(c) => return c,
            Err(e) => e,
        };
        let code = e.as_db_error().map(|d| d.code().clone());
        let transient = matches!(
            code,
            Some(tokio_postgres::error::SqlState::CANNOT_CONNECT_NOW)
                | Some(tokio_postgres::error::SqlState::TOO_MANY_CONNECTIONS)
        );
        if transient && std::time::Instant::now() < deadline {
            eprintln!("test database server not ready ({e:?}); retrying");
            tokio::time::sleep(std::time::Duration::from_millis(500)).await;
            continue;
        }
        let detail = e
            .as_db_error()
            .map(|d| format!("{}: {}", d.code().code(), d.message()))
            .unwrap_or_else(|| format!("{e:?}"));
        panic!(
            "cannot connect to the test database server ({e}: {detail}); start it with `make db` \
             or `scripts/db.sh ensure`\n--- end of the server log ---\n{}",
            server_log_tail()
        )
    }
}

/// The last lines of the project's local server log, when there is one.
fn server_log_tail() -> String {
    let log =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../.mosaic/pg/log/postgres.log");
    match std::fs::read_to_string(&log) {
        Ok(text) => {
            let lines: Vec<&str> = text.lines().collect();
            lines[lines.len().saturating_sub(40)..].join("\n")
        }
        Err(e) => format!("({}: {e})", log.display()),
    }
}

fn template_name() -> String {
    let sqls: Vec<&str> = db::MIGRATIONS.iter().map(|m| m.sql).collect();
    let mut parts = sqls;
    let digest_input = format!(
        "{SAMPLE_PRODUCTS}/{SAMPLE_SEED}/gen-{}",
        Generator::new(SAMPLE_SEED, 20).digest()
    );
    parts.push(&digest_input);
    format!("mosaic_tpl_{}", short_hash(&parts))
}

/// A throw-away database, dropped when the value is dropped.
pub struct TestDb {
    pub name: String,
}

static COUNTER: AtomicU32 = AtomicU32::new(0);

fn fresh_name(hint: &str) -> String {
    let n = COUNTER.fetch_add(1, Ordering::SeqCst);
    let hint: String = hint
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '_')
        .take(20)
        .collect();
    format!("mt_{}_{}_{}", hint.to_lowercase(), std::process::id(), n)
}

impl TestDb {
    /// An empty database (extensions only, no migrations).
    pub async fn empty(hint: &str) -> TestDb {
        let admin = connect(&format!("{}/postgres", server())).await;
        let name = fresh_name(hint);
        admin
            .batch_execute(&format!("CREATE DATABASE {name} TEMPLATE template1"))
            .await
            .expect("create database");
        TestDb { name }
    }

    /// A database holding the migrated schema and the sample catalog
    /// (5,000 products, seed 42, hashing-embedder vectors).
    pub async fn with_sample(hint: &str) -> TestDb {
        let template = ensure_template().await;
        let admin = connect(&format!("{}/postgres", server())).await;
        let name = fresh_name(hint);
        admin
            .batch_execute(&format!("CREATE DATABASE {name} TEMPLATE {template}"))
            .await
            .expect("create database from template");
        TestDb { name }
    }

    /// Owner-role URL (migrations, loading).
    pub fn url(&self) -> String {
        format!("{}/{}", server(), self.name)
    }

    /// Runtime-role URL (what the functions use).
    pub fn runtime_url(&self) -> String {
        format!("{}/{}", runtime_server(), self.name)
    }

    pub async fn owner(&self) -> Client {
        connect(&self.url()).await
    }

    pub async fn runtime(&self) -> Client {
        connect(&self.runtime_url()).await
    }
}

impl Drop for TestDb {
    fn drop(&mut self) {
        let name = self.name.clone();
        // Drop runs outside any runtime guarantee: use a private one.
        let dropped = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| e.to_string())?;
            rt.block_on(async {
                let (client, conn) = tokio_postgres::connect(
                    &format!("{}/postgres", server()),
                    tokio_postgres::NoTls,
                )
                .await
                .map_err(|e| e.to_string())?;
                tokio::spawn(conn);
                client
                    .batch_execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
                    .await
                    .map_err(|e| format!("{e:?}"))
            })
        })
        .join();
        if let Ok(Err(e)) = dropped {
            eprintln!("could not drop test database {}: {e}", self.name);
        }
    }
}

async fn database_exists(c: &Client, name: &str) -> bool {
    c.query_opt("SELECT 1 FROM pg_database WHERE datname = $1", &[&name])
        .await
        .expect("query pg_database")
        .is_some()
}

/// Builds the sample template once; returns its name.
pub async fn ensure_template() -> String {
    let name = template_name();
    let admin = connect(&format!("{}/postgres", server())).await;
    if database_exists(&admin, &name).await {
        return name;
    }
    admin
        .batch_execute("SELECT pg_advisory_lock(4242001)")
        .await
        .expect("lock");
    if !database_exists(&admin, &name).await {
        let building = format!("{name}_building");
        admin
            .batch_execute(&format!("DROP DATABASE IF EXISTS {building} WITH (FORCE)"))
            .await
            .expect("drop a half-built template");
        admin
            .batch_execute(&format!("CREATE DATABASE {building} TEMPLATE template1"))
            .await
            .expect("create template database");
        {
            let mut c = connect(&format!("{}/{building}", server())).await;
            db::migrate(&mut c, &MigrateOptions::default())
                .await
                .expect("migrate template");
            generator::load_sample(
                &mut c,
                Generator::new(SAMPLE_SEED, SAMPLE_PRODUCTS),
                &mut |_, _, _| {},
            )
            .await
            .expect("load sample into template");
            let embedder = HashingEmbedder::new(384);
            mosaic::embed_job::embed_pending(&c, &embedder, 500, 1, &mut |_, _, _| {})
                .await
                .expect("embed template");
            c.batch_execute("VACUUM ANALYZE").await.expect("vacuum");
        }
        // The builder's connection closes asynchronously; retry the rename
        // until the database has no sessions left.
        let mut attempts = 0;
        while let Err(e) = admin
            .batch_execute(&format!("ALTER DATABASE {building} RENAME TO {name}"))
            .await
        {
            attempts += 1;
            assert!(attempts < 50, "cannot publish the template database: {e}");
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
    }
    admin
        .batch_execute("SELECT pg_advisory_unlock(4242001)")
        .await
        .expect("unlock");
    name
}

/// The catalog's distinct domains.
pub async fn domain_count(c: &Client) -> i64 {
    c.query_one("SELECT count(DISTINCT domain) FROM catalog.products", &[])
        .await
        .unwrap()
        .get(0)
}

/// A search context on the test database's runtime role, with the hashing
/// embedder the template was embedded with.
/// Makes a migrated database one migration behind this build, as a user who
/// upgrades the binary and forgets `mosaic migrate` has it: the last
/// migration's record is removed. Its name.
pub async fn forget_last_migration(c: &Client) -> &'static str {
    let last = db::MIGRATIONS.last().expect("migrations");
    c.execute(
        "DELETE FROM mosaic_meta.migrations WHERE version = $1",
        &[&last.version],
    )
    .await
    .expect("forget the last migration");
    last.name
}

pub fn ctx(db: &TestDb, profile: mosaic::RetrievalProfile) -> mosaic::Ctx {
    mosaic::Ctx::from_url(&db.runtime_url(), 4, profile)
        .expect("context")
        .with_embedder(std::sync::Arc::new(HashingEmbedder::new(384)))
}

/// Adds product `id` to the catalog, a copy of the first product whose
/// title starts with `word`, and refreshes its projection (as load and
/// import do), in one transaction of the owner.
pub async fn add_product_titled(db: &TestDb, id: &str, word: &str) {
    let mut owner = db.owner().await;
    let tx = owner.transaction().await.expect("begin");
    tx.execute(
        "INSERT INTO catalog.products (product_id, sku, model, brand, title, domain, category_key,
                                       description, price_cents, availability, source_uri)
         SELECT $1, 'SKU-' || $1, 'MODEL-' || $1, brand, $2 || ' ' || title, domain,
                category_key, description, price_cents, 'in_stock', 'catalog://added/' || $1
         FROM catalog.products ORDER BY product_id LIMIT 1",
        &[&id, &word],
    )
    .await
    .expect("insert the product");
    mosaic::catalog::load::refresh_projection(&tx, Some(&[id.to_string()]))
        .await
        .expect("refresh its projection");
    tx.commit().await.expect("commit");
}

/// A brand of the sample catalog that is no English word, with the
/// category of one of its products: (brand as written, brand lower case,
/// a category word).
pub async fn a_brand(db: &TestDb) -> (String, String, String) {
    let owner = db.owner().await;
    let rows = owner
        .query(
            "SELECT DISTINCT p.brand, split_part(p.category_key, '_', 1) AS word
             FROM catalog.products p
             WHERE length(p.brand) >= 7 AND p.brand ~ '^[A-Za-z]+$'
             ORDER BY p.brand, word",
            &[],
        )
        .await
        .unwrap();
    rows.iter()
        .map(|r| (r.get::<_, String>(0), r.get::<_, String>(1)))
        .find(|(b, _)| !mosaic::search::understand::is_english(&b.to_lowercase()))
        .map(|(b, w)| (b.clone(), b.to_lowercase(), w))
        .expect("the sample catalog has a brand that is no English word")
}

/// `word` with its fourth letter dropped: one edit away.
pub fn misspelt(word: &str) -> String {
    let mut w: Vec<char> = word.chars().collect();
    w.remove(3);
    w.into_iter().collect()
}

/// The product ids a search response (as JSON) served, in served order.
pub fn served(r: &serde_json::Value) -> Vec<String> {
    r["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["product_id"].as_str().unwrap().to_string())
        .collect()
}

/// Embedders that answer with what no column takes.
pub mod embedders {
    use async_trait::async_trait;
    use mosaic::embed::{EmbedError, EmbedKind, Embedder};

    /// Declares `dimension` and answers each text with `vector`.
    pub struct Fixed {
        pub dimension: usize,
        pub vector: Vec<f32>,
    }
    #[async_trait]
    impl Embedder for Fixed {
        fn model_id(&self) -> &str {
            "test/fixed"
        }
        fn dimension(&self) -> usize {
            self.dimension
        }
        async fn embed(
            &self,
            texts: &[String],
            _kind: EmbedKind,
        ) -> Result<Vec<Vec<f32>>, EmbedError> {
            Ok(texts.iter().map(|_| self.vector.clone()).collect())
        }
    }
}

/// Reranker test doubles.
pub mod rerankers {
    use async_trait::async_trait;
    use mosaic::rerank::{Pool, RerankError, Reranker};
    use std::time::Duration;

    /// Scores documents in reverse: the fused first becomes last.
    pub struct Reverse;
    #[async_trait]
    impl Reranker for Reverse {
        fn model_id(&self) -> &str {
            "test/reverse"
        }
        async fn rerank(&self, pool: &Pool<'_>) -> Result<Vec<(usize, f64)>, RerankError> {
            Ok((0..pool.candidates.len()).map(|i| (i, i as f64)).collect())
        }
    }

    /// Names indices that do not exist, repeats some, and scores the rest.
    pub struct Rogue;
    #[async_trait]
    impl Reranker for Rogue {
        fn model_id(&self) -> &str {
            "test/rogue"
        }
        async fn rerank(&self, pool: &Pool<'_>) -> Result<Vec<(usize, f64)>, RerankError> {
            let n = pool.candidates.len();
            let mut out: Vec<(usize, f64)> = vec![(n, 100.0), (n + 7, 99.0), (usize::MAX, 98.0)];
            out.extend((0..n).map(|i| (i, i as f64)));
            out.push((0, 1000.0));
            Ok(out)
        }
    }

    /// Sleeps past any sensible deadline.
    pub struct Slow(pub Duration);
    #[async_trait]
    impl Reranker for Slow {
        fn model_id(&self) -> &str {
            "test/slow"
        }
        async fn rerank(&self, pool: &Pool<'_>) -> Result<Vec<(usize, f64)>, RerankError> {
            tokio::time::sleep(self.0).await;
            Ok((0..pool.candidates.len()).map(|i| (i, i as f64)).collect())
        }
    }

    /// Scores only the first `.0` members sent, and names one more with a
    /// score that is not a number.
    pub struct Partial(pub usize);
    #[async_trait]
    impl Reranker for Partial {
        fn model_id(&self) -> &str {
            "test/partial"
        }
        async fn rerank(&self, pool: &Pool<'_>) -> Result<Vec<(usize, f64)>, RerankError> {
            let n = self.0.min(pool.candidates.len());
            let mut out: Vec<(usize, f64)> = (0..n).map(|i| (i, i as f64)).collect();
            out.push((n, f64::NAN));
            Ok(out)
        }
    }

    /// Always fails.
    pub struct Failing;
    #[async_trait]
    impl Reranker for Failing {
        fn model_id(&self) -> &str {
            "test/failing"
        }
        async fn rerank(&self, _pool: &Pool<'_>) -> Result<Vec<(usize, f64)>, RerankError> {
            Err(RerankError::Unavailable("simulated outage".into()))
        }
    }
}

/// The principal the receipt of search event `event` is bound to.
pub async fn principal_of(db: &TestDb, event: &str) -> String {
    let id = uuid::Uuid::parse_str(event).expect("search_event_id is a uuid");
    db.owner()
        .await
        .query_one(
            "SELECT principal FROM receipts.search_events WHERE search_event_id = $1",
            &[&id],
        )
        .await
        .expect("the event was recorded")
        .get(0)
}

/// The first column of every row of `sql`, as text (EXPLAIN lines, names).
pub async fn texts<C: tokio_postgres::GenericClient>(
    c: &C,
    sql: &str,
    params: &[&(dyn tokio_postgres::types::ToSql + Sync)],
) -> Vec<String> {
    c.query(sql, params)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
        .iter()
        .map(|r| r.get(0))
        .collect()
}

/// One request through the shared HTTP router, as `principal`: the status
/// and the parsed body (`Null` when the body is not JSON).
pub async fn http_call(
    ctx: &mosaic::Ctx,
    principal: &mosaic::Principal,
    method: &str,
    path: &str,
    body: &[u8],
) -> (u16, serde_json::Value) {
    let resp = mosaic::http::handle(
        ctx,
        principal,
        mosaic::http::HttpRequest {
            method,
            path,
            query: "",
            body,
            request_id: "test",
        },
    )
    .await;
    let body = serde_json::from_slice(&resp.body).unwrap_or(serde_json::Value::Null);
    (resp.status, body)
}
