//! Database connections and migrations.
//!
//! Migrations are the numbered files in `sql/`, compiled into the binary so
//! `mosaic migrate` works from anywhere. They are applied in order inside one
//! transaction under an advisory lock, recorded in `mosaic_meta.migrations`
//! with a checksum, and skipped when already applied: running them twice is a
//! no-op. A migration that changed after it was applied is an error, never a
//! silent re-run.
//!
//! Bounded statements: every statement an operation runs sits in a
//! transaction that sets `statement_timeout` with `SET LOCAL`
//! ([`bounded_transaction`], [`set_statement_timeout`]), so the server stops
//! it even when the client is gone; and every pooled connection an operation
//! holds is a [`Conn`], which cancels a statement still in flight when the
//! operation is abandoned (its future dropped at a deadline) and then closes
//! the connection instead of handing it to the next request.

use sha2::{Digest, Sha256};
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tokio_postgres::types::Type;
use tokio_postgres::{CancelToken, Client, GenericClient, NoTls, Transaction};

/// The local development database the project starts itself
/// (`scripts/db.sh`), on its default port: the owner role, used for
/// migrations and loading.
pub const LOCAL_OWNER_URL: &str = "postgres://mosaic_owner:mosaic_owner@127.0.0.1:54329/mosaic";
/// The local runtime role: reads the catalog, writes and reads receipts through their functions.
pub const LOCAL_RUNTIME_URL: &str =
    "postgres://mosaic_runtime:mosaic_runtime@127.0.0.1:54329/mosaic";

/// [`LOCAL_OWNER_URL`] on the port `scripts/db.sh` runs the cluster on:
/// `MOSAIC_PG_PORT` when it is a port number, 54329 otherwise.
pub fn local_owner_url() -> String {
    on_port(
        LOCAL_OWNER_URL,
        std::env::var("MOSAIC_PG_PORT").ok().as_deref(),
    )
}

/// [`LOCAL_RUNTIME_URL`] on the port `scripts/db.sh` runs the cluster on.
pub fn local_runtime_url() -> String {
    on_port(
        LOCAL_RUNTIME_URL,
        std::env::var("MOSAIC_PG_PORT").ok().as_deref(),
    )
}

/// A local URL on `port` (`MOSAIC_PG_PORT`'s value) when that is a port
/// number; as it is otherwise.
fn on_port(url: &str, port: Option<&str>) -> String {
    match port
        .and_then(|p| p.trim().parse::<u16>().ok())
        .filter(|p| *p > 0)
    {
        Some(port) => url.replace(":54329/", &format!(":{port}/")),
        None => url.to_string(),
    }
}

pub struct Migration {
    pub version: i32,
    pub name: &'static str,
    pub sql: &'static str,
}

macro_rules! migration {
    ($version:expr, $file:literal) => {
        Migration {
            version: $version,
            name: $file,
            sql: include_str!(concat!("../../sql/", $file)),
        }
    };
}

pub const MIGRATIONS: &[Migration] = &[
    migration!(1, "0001_schemas.sql"),
    migration!(2, "0002_catalog.sql"),
    migration!(3, "0003_search_projection.sql"),
    migration!(4, "0004_receipts.sql"),
    migration!(5, "0005_runtime_role.sql"),
    migration!(6, "0006_domain_indexes.sql"),
    migration!(7, "0007_trigram_planning.sql"),
    migration!(8, "0008_inline_embeddings.sql"),
    migration!(9, "0009_hnsw_build_quality.sql"),
    migration!(10, "0010_metadata_order.sql"),
    migration!(11, "0011_feed_values.sql"),
    migration!(12, "0012_receipt_retention.sql"),
    migration!(13, "0013_receipt_replay.sql"),
    migration!(14, "0014_query_vocabulary.sql"),
    migration!(15, "0015_semantic_probe.sql"),
    migration!(16, "0016_receipt_candidate_check.sql"),
    migration!(17, "0017_catalog_terms_by_difference.sql"),
    migration!(18, "0018_text_indexes_with_taxonomy.sql"),
    migration!(19, "0019_category_price_probe.sql"),
    migration!(20, "0020_trigram_selectivity.sql"),
    migration!(21, "0021_candidate_bounds.sql"),
    migration!(22, "0022_price_ceiling_graphs.sql"),
    migration!(23, "0023_price_ceiling_kept.sql"),
    migration!(24, "0024_domain_vectors.sql"),
    migration!(25, "0025_term_domains.sql"),
    migration!(26, "0026_receipt_functions.sql"),
    migration!(27, "0027_receipt_grant_checks.sql"),
    migration!(28, "0028_vectors_follow_their_text.sql"),
    migration!(29, "0029_stale_vectors_cleared.sql"),
    migration!(30, "0030_sku_passes_within_an_import.sql"),
    migration!(31, "0031_runtime_reads_migrations.sql"),
];

/// The statements that give pg_trgm's word-similarity operators the cost
/// migration 0007 wants and the estimate migration 0020 wants; only the
/// extension's owner may run them.
pub const TRIGRAM_PLANNING_SQL: &str = "ALTER FUNCTION word_similarity_op(text, text) COST 100; \
ALTER FUNCTION word_similarity_commutator_op(text, text) COST 100; \
ALTER OPERATOR <% (text, text) SET (RESTRICT = contsel); \
ALTER OPERATOR %> (text, text) SET (RESTRICT = contsel);";

/// Parameters substituted into the migrations.
#[derive(Debug, Clone)]
pub struct MigrateOptions {
    /// Dimension of `search.product_projection.embedding` (384 for the local
    /// model, 1024 for Titan v2 / Cohere Embed).
    pub embedding_dim: usize,
    /// The role the functions connect as.
    pub runtime_role: String,
}

impl Default for MigrateOptions {
    fn default() -> Self {
        Self {
            embedding_dim: 384,
            runtime_role: "mosaic_runtime".into(),
        }
    }
}

#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct MigrateReport {
    pub applied: Vec<String>,
    pub already_applied: usize,
    /// What the database still lacks for full speed (never for correctness),
    /// with what to run.
    pub warnings: Vec<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum MigrateError {
    #[error("invalid migration option: {0}")]
    Option(String),
    #[error("migration {name} was changed after it was applied (recorded checksum {recorded}, file {current}); add a new migration instead")]
    Changed {
        name: String,
        recorded: String,
        current: String,
    },
    #[error("the database was migrated with embedding dimension {existing}, not {requested}; use --embedding-dim {existing} or a fresh database")]
    Dimension { existing: usize, requested: usize },
    #[error("migration {name} failed: {source}")]
    Failed {
        name: String,
        #[source]
        source: tokio_postgres::Error,
    },
    #[error(transparent)]
    Db(#[from] tokio_postgres::Error),
}

fn checksum(sql: &str) -> String {
    format!("{:x}", Sha256::digest(sql.as_bytes()))
}

/// Applies every pending migration.
pub async fn migrate(
    client: &mut Client,
    opts: &MigrateOptions,
) -> Result<MigrateReport, MigrateError> {
    // pgvector's HNSW index takes vectors of at most 2,000 dimensions; a
    // larger column would fail migration 0003 after the first two.
    if !(1..=2_000).contains(&opts.embedding_dim) {
        return Err(MigrateError::Option(format!(
            "embedding dimension {} is outside 1..2000 (pgvector's HNSW index takes at most 2,000)",
            opts.embedding_dim
        )));
    }
    let role_ok = !opts.runtime_role.is_empty()
        && opts.runtime_role.len() <= 63
        && opts
            .runtime_role
            .starts_with(|c: char| c.is_ascii_lowercase() || c == '_')
        && opts
            .runtime_role
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if !role_ok {
        return Err(MigrateError::Option(format!(
            "runtime role `{}` must be a lower-case SQL identifier",
            opts.runtime_role
        )));
    }

    let tx = client.transaction().await?;
    tx.batch_execute(
        "SELECT pg_advisory_xact_lock(7355608);
         CREATE SCHEMA IF NOT EXISTS mosaic_meta;
         CREATE TABLE IF NOT EXISTS mosaic_meta.migrations (
             version    integer PRIMARY KEY,
             name       text NOT NULL,
             checksum   text NOT NULL,
             applied_at timestamptz NOT NULL DEFAULT now());
         CREATE TABLE IF NOT EXISTS mosaic_meta.settings (
             key   text PRIMARY KEY,
             value text NOT NULL);",
    )
    .await?;
    if let Some(row) = tx
        .query_opt(
            "SELECT value FROM mosaic_meta.settings WHERE key = 'embedding_dim'",
            &[],
        )
        .await?
    {
        let existing: usize = row.get::<_, String>(0).parse().unwrap_or(0);
        if existing != opts.embedding_dim {
            return Err(MigrateError::Dimension {
                existing,
                requested: opts.embedding_dim,
            });
        }
    }

    let mut report = MigrateReport::default();
    for m in MIGRATIONS {
        let current = checksum(m.sql);
        let recorded = tx
            .query_opt(
                "SELECT checksum FROM mosaic_meta.migrations WHERE version = $1",
                &[&m.version],
            )
            .await?;
        match recorded {
            Some(row) => {
                let recorded: String = row.get(0);
                if recorded != current {
                    return Err(MigrateError::Changed {
                        name: m.name.into(),
                        recorded,
                        current,
                    });
                }
                report.already_applied += 1;
            }
            None => {
                let sql = m
                    .sql
                    .replace("{{EMBEDDING_DIM}}", &opts.embedding_dim.to_string())
                    .replace("{{RUNTIME_ROLE}}", &opts.runtime_role);
                tx.batch_execute(&sql)
                    .await
                    .map_err(|source| MigrateError::Failed {
                        name: m.name.into(),
                        source,
                    })?;
                tx.execute(
                    "INSERT INTO mosaic_meta.migrations (version, name, checksum) VALUES ($1, $2, $3)",
                    &[&m.version, &m.name, &current],
                )
                .await?;
                report.applied.push(m.name.into());
            }
        }
    }
    tx.execute(
        "INSERT INTO mosaic_meta.settings (key, value) VALUES ('embedding_dim', $1)
         ON CONFLICT (key) DO NOTHING",
        &[&opts.embedding_dim.to_string()],
    )
    .await?;
    // pg_trgm's planning (migrations 0007 and 0020): only the extension's
    // owner may set it, so a migration run without that privilege leaves it.
    let row = tx
        .query_one(
            "SELECT (SELECT procost FROM pg_proc
                     WHERE oid = to_regprocedure('word_similarity_op(text, text)')),
                    (SELECT string_agg(oprname || ' ' || oprrest::text, ', ' ORDER BY oprname)
                     FROM pg_operator
                     WHERE oprname IN ('<%', '%>') AND oprleft = 'text'::regtype
                       AND oprright = 'text'::regtype AND oprrest <> 'contsel'::regproc)",
            &[],
        )
        .await?;
    let (cost, estimates): (Option<f32>, Option<String>) = (row.get(0), row.get(1));
    let mut left = Vec::new();
    if let Some(cost) = cost.filter(|c| *c < 100.0) {
        left.push(format!(
            "cost {cost}, so filtered trigram searches compute similarity before the filters \
             (migration 0007)"
        ));
    }
    if let Some(estimates) = estimates {
        left.push(format!(
            "the estimate {estimates}, so trigram searches under a broad price filter intersect \
             the price index's bitmap (migration 0020)"
        ));
    }
    if !left.is_empty() {
        report.warnings.push(format!(
            "pg_trgm's word-similarity operators still have {}. Run as the extension owner: \
             {TRIGRAM_PLANNING_SQL}",
            left.join("; and ")
        ));
    }
    tx.commit().await?;
    Ok(report)
}

/// The migrations this build has that the database has not recorded (all of
/// them for a database never migrated). Loading into a database that lacks
/// some would fail on a missing function or column; the loaders check first
/// and name `mosaic migrate`. For the owner role, which may read the record.
pub async fn pending_migrations(
    client: &Client,
) -> Result<Vec<&'static str>, tokio_postgres::Error> {
    Ok(match migration_state(client).await? {
        MigrationState::Current => Vec::new(),
        MigrationState::Lacking(names) => names,
        MigrationState::Unreadable => MIGRATIONS.iter().map(|m| m.name).collect(),
    })
}

/// What a connection can tell of this build's migrations in its database.
#[derive(Debug, Clone, PartialEq)]
pub enum MigrationState {
    /// Every migration of this build is recorded.
    Current,
    /// These of this build's are not (every one for a database never
    /// migrated).
    Lacking(Vec<&'static str>),
    /// The connection's role may not read the record: the database predates
    /// migration 0031, which lets the runtime role read it, or the role is
    /// not the one the migrations granted to (`mosaic migrate
    /// --runtime-role`).
    Unreadable,
}

/// The state of this build's migrations as `client`'s role can read it,
/// without an error for a record it may not read.
pub async fn migration_state(client: &Client) -> Result<MigrationState, tokio_postgres::Error> {
    let readable: Option<bool> = client
        .query_one(
            "SELECT CASE
                 WHEN NOT EXISTS (SELECT 1 FROM pg_catalog.pg_namespace WHERE nspname = 'mosaic_meta')
                     THEN NULL
                 WHEN NOT has_schema_privilege('mosaic_meta', 'USAGE') THEN false
                 WHEN to_regclass('mosaic_meta.migrations') IS NULL THEN NULL
                 ELSE has_table_privilege('mosaic_meta.migrations', 'SELECT')
             END",
            &[],
        )
        .await?
        .get(0);
    let applied: Vec<i32> = match readable {
        None => Vec::new(),
        Some(false) => return Ok(MigrationState::Unreadable),
        Some(true) => client
            .query("SELECT version FROM mosaic_meta.migrations", &[])
            .await?
            .iter()
            .map(|r| r.get(0))
            .collect(),
    };
    let lacking: Vec<&'static str> = MIGRATIONS
        .iter()
        .filter(|m| !applied.contains(&m.version))
        .map(|m| m.name)
        .collect();
    Ok(match lacking.is_empty() {
        true => MigrationState::Current,
        false => MigrationState::Lacking(lacking),
    })
}

impl MigrationState {
    /// What to tell the operator, when the build cannot run on this
    /// database as it is; `None` when it can.
    pub fn problem(&self) -> Option<String> {
        match self {
            MigrationState::Current => None,
            MigrationState::Lacking(names) => Some(format!(
                "the database lacks {} migration(s) of this build, from {}: run `mosaic migrate` \
                 (as the owner role) first",
                names.len(),
                names[0]
            )),
            MigrationState::Unreadable => Some(
                "this role may not read which migrations the database holds, so this build \
                 cannot tell whether they are all there: the database lacks this build's \
                 migration 0031 (run `mosaic migrate` as the owner role), or this role is not \
                 the runtime role the migrations granted to (as the owner: GRANT USAGE ON \
                 SCHEMA mosaic_meta TO this_role; GRANT SELECT ON mosaic_meta.migrations TO \
                 this_role)"
                    .to_string(),
            ),
        }
    }
}

/// The embedding dimension the projection column was created with.
pub async fn embedding_dimension(client: &Client) -> Result<Option<usize>, tokio_postgres::Error> {
    let row = client
        .query_opt(
            "SELECT atttypmod FROM pg_attribute
             WHERE attrelid = 'search.product_projection'::regclass AND attname = 'embedding'",
            &[],
        )
        .await?;
    Ok(row
        .map(|r| r.get::<_, i32>(0))
        .filter(|d| *d > 0)
        .map(|d| d as usize))
}

/// What a connection string asks for, ready to connect: the parsed
/// configuration and, when it asks for TLS, the verifying client
/// configuration.
pub struct Target {
    pub config: tokio_postgres::Config,
    #[cfg(feature = "tls")]
    pub tls: Option<std::sync::Arc<rustls::ClientConfig>>,
}

impl std::fmt::Debug for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Target")
            .field("dbname", &self.config.get_dbname())
            .field("tls", &self.uses_tls())
            .finish_non_exhaustive()
    }
}

impl Target {
    /// Reads a connection string (URL or `key=value` form).
    ///
    /// * `sslmode=require` asks for TLS that verifies the chain and the host
    ///   name (what libpq calls `verify-full`; rustls has no weaker mode).
    ///   libpq's `verify-full` and `verify-ca` are accepted as the same.
    /// * `sslrootcert=<file>` adds a PEM CA file to the trusted roots (the
    ///   Mozilla roots and the Amazon RDS bundle, see [`crate::tls`]).
    /// * `disable`, `prefer`, `allow` or no `sslmode`: plain TCP, for the
    ///   local cluster. (`prefer` would otherwise try TLS first and fail on a
    ///   certificate nothing here trusts.)
    ///
    /// Errors never repeat the string, which may hold a password.
    pub fn parse(url: &str) -> Result<Self, String> {
        let (rest, sslmode, rootcert) = split_tls_options(url)?;
        let mut config = tokio_postgres::Config::from_str(&rest)
            .map_err(|e| format!("invalid database connection string: {e}"))?;
        let wants_tls = matches!(
            sslmode.as_deref(),
            Some("require" | "verify-ca" | "verify-full")
        );
        match sslmode.as_deref() {
            None
            | Some("disable" | "allow" | "prefer" | "require" | "verify-ca" | "verify-full") => {}
            Some(other) => {
                return Err(format!(
                    "sslmode={other:?} is not understood; use `require` (verified TLS) or `disable`"
                ))
            }
        }
        if rootcert.is_some() && !wants_tls {
            return Err("sslrootcert needs sslmode=require".into());
        }
        if wants_tls {
            config.ssl_mode(tokio_postgres::config::SslMode::Require);
        } else {
            config.ssl_mode(tokio_postgres::config::SslMode::Disable);
        }
        #[cfg(feature = "tls")]
        {
            let tls = match wants_tls {
                true => Some(crate::tls::client_config(
                    crate::tls::Roots::Public,
                    rootcert.as_deref().map(std::path::Path::new),
                )?),
                false => None,
            };
            Ok(Self { config, tls })
        }
        #[cfg(not(feature = "tls"))]
        {
            let _ = rootcert;
            if wants_tls {
                return Err(
                    "sslmode=require: this build has no TLS support (feature `tls`)".into(),
                );
            }
            Ok(Self { config })
        }
    }

    /// Whether connections to this target use TLS.
    pub fn uses_tls(&self) -> bool {
        #[cfg(feature = "tls")]
        {
            self.tls.is_some()
        }
        #[cfg(not(feature = "tls"))]
        {
            false
        }
    }

    /// Opens one connection, driving it on a background task.
    pub async fn connect(&self) -> Result<Client, tokio_postgres::Error> {
        #[cfg(feature = "tls")]
        if let Some(tls) = &self.tls {
            let (client, connection) = self
                .config
                .connect(crate::tls::MakeRustlsConnect::new(tls.clone()))
                .await?;
            spawn_connection(connection);
            return Ok(client);
        }
        let (client, connection) = self.config.connect(NoTls).await?;
        spawn_connection(connection);
        Ok(client)
    }
}

fn spawn_connection<S, T>(connection: tokio_postgres::Connection<S, T>)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    tokio::spawn(async move {
        if let Err(e) = connection.await {
            tracing::warn!(error = %e, "database connection closed");
        }
    });
}

/// Takes `sslmode` and `sslrootcert` out of a connection string (the
/// driver's parser knows neither `verify-full` nor `sslrootcert`).
fn split_tls_options(url: &str) -> Result<(String, Option<String>, Option<String>), String> {
    let mut sslmode = None;
    let mut rootcert = None;
    let mut take = |key: &str, value: &str| -> bool {
        match key {
            "sslmode" => {
                sslmode = Some(value.to_ascii_lowercase());
                true
            }
            "sslrootcert" => {
                rootcert = Some(value.to_string());
                true
            }
            _ => false,
        }
    };
    if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        let Some((base, query)) = url.split_once('?') else {
            return Ok((url.to_string(), None, None));
        };
        let mut kept = Vec::new();
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            let v = crate::contract::decode_segment(v)
                .ok_or("invalid percent-encoding in the connection string, or not UTF-8")?;
            if !take(k, &v) {
                kept.push(pair);
            }
        }
        let rest = match kept.is_empty() {
            true => base.to_string(),
            false => format!("{base}?{}", kept.join("&")),
        };
        Ok((rest, sslmode, rootcert))
    } else {
        let mut kept = Vec::new();
        for token in url.split_whitespace() {
            match token.split_once('=') {
                Some((k, v)) if take(k.trim(), v.trim_matches('\'')) => {}
                _ => kept.push(token),
            }
        }
        Ok((kept.join(" "), sslmode, rootcert))
    }
}

/// Connects as the connection string says: verified TLS with
/// `sslmode=require`, plain TCP otherwise (see [`Target::parse`]).
pub async fn connect(url: &str) -> Result<Client, String> {
    let target = Target::parse(url)?;
    target
        .connect()
        .await
        .map_err(|e| describe_connect_error(&e))
}

/// A connection error as one line: the driver's message plus the TLS or
/// I/O cause underneath it, which the driver's `Display` leaves out.
pub fn describe_connect_error(e: &tokio_postgres::Error) -> String {
    use std::error::Error as _;
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let more = s.to_string();
        if !text.contains(&more) {
            text.push_str(": ");
            text.push_str(&more);
        }
        source = s.source();
    }
    text
}

/// Connects without TLS (local development database). Errors name the
/// database host but never the password.
pub async fn connect_plain(url: &str) -> Result<Client, tokio_postgres::Error> {
    let (client, connection) = tokio_postgres::connect(url, NoTls).await?;
    tokio::spawn(async move {
        if let Err(e) = connection.await {
            tracing::warn!(error = %e, "database connection closed");
        }
    });
    Ok(client)
}

/// Sets `statement_timeout` for the rest of the current transaction
/// (`set_config(..., true)` is `SET LOCAL`: outside a transaction it would do
/// nothing). Needs no startup option, so it works through RDS Proxy without
/// pinning the connection.
pub async fn set_statement_timeout<C: GenericClient>(
    tx: &C,
    timeout_ms: u64,
) -> Result<(), tokio_postgres::Error> {
    set_local(tx, "statement_timeout", timeout_ms.to_string()).await?;
    Ok(())
}

/// `SET LOCAL name = value` as one statement, for a caller to send in the
/// same round trip as the statements it governs (`tokio::try_join!`; see
/// [`begin`]).
pub async fn set_local<C: GenericClient>(
    db: &C,
    name: &str,
    value: String,
) -> Result<u64, tokio_postgres::Error> {
    db.execute_typed(
        "SELECT set_config($1, $2, true)",
        &[(&name, Type::TEXT), (&value, Type::TEXT)],
    )
    .await
}

/// `START TRANSACTION` on `client`, for a caller that joins it with the
/// transaction's statements and its [`commit`] in one `tokio::try_join!`:
/// the join polls them in order, each sends its messages on its first poll,
/// and the connection pipelines them, so the whole transaction costs one
/// round trip instead of one per statement. A statement that fails aborts
/// the transaction and the `COMMIT` behind it rolls it back; the join
/// returns the first error. A connection left mid-transaction (an error, a
/// dropped future) is never reused: [`Conn`] closes it unless settled.
pub async fn begin(client: &Client, read_only: bool) -> Result<(), tokio_postgres::Error> {
    client
        .batch_execute(match read_only {
            true => "START TRANSACTION READ ONLY",
            false => "START TRANSACTION",
        })
        .await
}

/// `COMMIT` of a transaction opened with [`begin`].
pub async fn commit(client: &Client) -> Result<(), tokio_postgres::Error> {
    client.batch_execute("COMMIT").await
}

/// Starts a transaction whose every statement the server stops after
/// `timeout_ms` (see [`set_statement_timeout`]). A read-only one is
/// REPEATABLE READ: its statements see one snapshot, so reads that belong
/// together (an event and its pool) agree even if a retention purge runs
/// between them. Read-only, it can never fail to serialize.
pub async fn bounded_transaction(
    client: &mut Client,
    timeout_ms: u64,
    read_only: bool,
) -> Result<Transaction<'_>, tokio_postgres::Error> {
    let mut builder = client.build_transaction().read_only(read_only);
    if read_only {
        builder = builder.isolation_level(tokio_postgres::IsolationLevel::RepeatableRead);
    }
    let tx = builder.start().await?;
    set_statement_timeout(&tx, timeout_ms).await?;
    Ok(tx)
}

/// Runs an operation under a deadline: past it the operation's future is
/// dropped (any [`Conn`] it held cancels its statement) and the answer is
/// [`Error::Unavailable`](crate::error::Error::Unavailable).
pub async fn within<T, F>(deadline: Duration, what: &str, f: F) -> Result<T, crate::error::Error>
where
    F: std::future::Future<Output = Result<T, crate::error::Error>>,
{
    match tokio::time::timeout(deadline, f).await {
        Ok(out) => out,
        Err(_) => Err(crate::error::Error::Unavailable(format!(
            "{what}: the {} ms deadline passed",
            deadline.as_millis()
        ))),
    }
}

/// How a pool's connections send PostgreSQL cancel requests: over the same
/// kind of transport as the connections themselves (a cancel request is a
/// new connection to the server).
#[derive(Clone, Default)]
pub enum Canceller {
    /// Plain TCP (the local cluster).
    #[default]
    Plain,
    /// Verified TLS with this client configuration.
    #[cfg(feature = "tls")]
    Tls(std::sync::Arc<rustls::ClientConfig>),
}

impl std::fmt::Debug for Canceller {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Canceller::Plain => f.write_str("Canceller::Plain"),
            #[cfg(feature = "tls")]
            Canceller::Tls(_) => f.write_str("Canceller::Tls"),
        }
    }
}

impl Canceller {
    /// The canceller for connections to `target`.
    pub fn for_target(target: &Target) -> Self {
        #[cfg(feature = "tls")]
        if let Some(tls) = &target.tls {
            return Canceller::Tls(tls.clone());
        }
        let _ = target;
        Canceller::Plain
    }

    async fn cancel(&self, token: &CancelToken) -> Result<(), tokio_postgres::Error> {
        match self {
            Canceller::Plain => token.cancel_query(NoTls).await,
            #[cfg(feature = "tls")]
            Canceller::Tls(tls) => {
                token
                    .cancel_query(crate::tls::MakeRustlsConnect::new(tls.clone()))
                    .await
            }
        }
    }
}

/// A pooled connection that is never reused while a statement of an
/// abandoned operation may still run on it.
///
/// It dereferences to the [`Client`]; every use marks it busy, and
/// [`Conn::settle`] marks that nothing is in flight any more. Dropped while
/// busy (the operation's future was dropped at its deadline, or it returned
/// early with an error), it does not go back to the pool: a background task
/// sends the server a cancel request for whatever the connection is running,
/// then closes the connection, and the pool opens a fresh one when it is
/// next needed.
///
/// Closing rather than reusing is deliberate: a cancel request is delivered
/// asynchronously (the postmaster signals the backend), so on a reused
/// connection a late cancel could hit the next request's statement. If the
/// cancel cannot be sent (a proxy that does not forward cancel requests),
/// the server still stops the statement at its `statement_timeout`.
///
/// The local server and the Lambda functions share this through the
/// operations themselves: whichever transport's deadline drops the future,
/// the statement is cancelled and its connection serves no one else.
pub struct Conn {
    obj: Option<deadpool_postgres::Object>,
    canceller: Canceller,
    busy: AtomicBool,
}

impl Conn {
    /// Takes a connection from `pool`.
    pub async fn get(
        pool: &deadpool_postgres::Pool,
        canceller: &Canceller,
    ) -> Result<Conn, deadpool_postgres::PoolError> {
        Ok(Conn::wrap(pool.get().await?, canceller))
    }

    /// Guards a connection already taken from a pool.
    pub fn wrap(obj: deadpool_postgres::Object, canceller: &Canceller) -> Conn {
        Conn {
            obj: Some(obj),
            canceller: canceller.clone(),
            busy: AtomicBool::new(false),
        }
    }

    /// Marks that no statement is in flight: dropped now, the connection
    /// goes straight back to the pool.
    pub fn settle(&self) {
        self.busy.store(false, Ordering::Relaxed);
    }

    fn object(&self) -> &deadpool_postgres::Object {
        self.busy.store(true, Ordering::Relaxed);
        self.obj
            .as_ref()
            .expect("a Conn holds its connection until dropped")
    }
}

impl std::ops::Deref for Conn {
    type Target = Client;
    fn deref(&self) -> &Client {
        self.object()
    }
}

impl std::ops::DerefMut for Conn {
    fn deref_mut(&mut self) -> &mut Client {
        self.busy.store(true, Ordering::Relaxed);
        self.obj
            .as_mut()
            .expect("a Conn holds its connection until dropped")
    }
}

impl Drop for Conn {
    fn drop(&mut self) {
        let Some(obj) = self.obj.take() else { return };
        if !self.busy.load(Ordering::Relaxed) {
            return;
        }
        match tokio::runtime::Handle::try_current() {
            Ok(rt) => {
                rt.spawn(abandon(obj, self.canceller.clone()));
            }
            // No runtime to cancel from: close the connection instead of
            // handing it on.
            Err(_) => drop(deadpool_postgres::Object::take(obj)),
        }
    }
}

/// Cancels what an abandoned connection runs, then closes it.
async fn abandon(obj: deadpool_postgres::Object, canceller: Canceller) {
    if let Err(e) = canceller.cancel(&obj.cancel_token()).await {
        tracing::warn!(error = %describe_connect_error(&e), "cancel request failed");
    }
    drop(deadpool_postgres::Object::take(obj));
}

#[cfg(test)]
mod target_tests {
    use super::*;

    #[test]
    fn the_local_urls_follow_the_cluster_s_port() {
        assert_eq!(on_port(LOCAL_OWNER_URL, None), LOCAL_OWNER_URL);
        assert_eq!(
            on_port(LOCAL_RUNTIME_URL, Some(" 54330 ")),
            "postgres://mosaic_runtime:mosaic_runtime@127.0.0.1:54330/mosaic"
        );
        for not_a_port in ["", "0", "65536", "54330x", "-1"] {
            assert_eq!(on_port(LOCAL_OWNER_URL, Some(not_a_port)), LOCAL_OWNER_URL);
        }
    }

    #[test]
    fn tls_options_are_taken_out_of_urls_and_key_value_strings() {
        let (rest, mode, ca) = split_tls_options(
            "postgres://u:p@h:5432/db?sslmode=verify-full&application_name=x&sslrootcert=%2Ftmp%2Fca.pem",
        )
        .unwrap();
        assert_eq!(rest, "postgres://u:p@h:5432/db?application_name=x");
        assert_eq!(mode.as_deref(), Some("verify-full"));
        assert_eq!(ca.as_deref(), Some("/tmp/ca.pem"));
        let (rest, mode, ca) =
            split_tls_options("host=h user=u sslmode=require dbname=db").unwrap();
        assert_eq!(rest, "host=h user=u dbname=db");
        assert_eq!(mode.as_deref(), Some("require"));
        assert_eq!(ca, None);
        let (rest, mode, _) = split_tls_options("postgres://u@h/db").unwrap();
        assert_eq!((rest.as_str(), mode), ("postgres://u@h/db", None));
    }

    #[test]
    fn sslmodes_map_to_plain_or_verified() {
        let plain = Target::parse("postgres://u:secret@h/db?sslmode=prefer").unwrap();
        assert!(!plain.uses_tls());
        assert_eq!(
            plain.config.get_ssl_mode(),
            tokio_postgres::config::SslMode::Disable
        );
        let e = Target::parse("postgres://u:secret@h/db?sslmode=sometimes").unwrap_err();
        assert!(e.contains("sometimes") && !e.contains("secret"), "{e}");
        let e = Target::parse("postgres://u:secret@h/db?sslrootcert=/x.pem").unwrap_err();
        assert!(e.contains("sslmode=require"), "{e}");
        let e = Target::parse("postgres://u:secret@h:notaport/db").unwrap_err();
        assert!(!e.contains("secret"), "{e}");
    }

    #[cfg(feature = "tls")]
    #[test]
    fn require_means_verified_tls() {
        let t = Target::parse("postgres://u:p@h/db?sslmode=require").unwrap();
        assert!(t.uses_tls());
        assert_eq!(
            t.config.get_ssl_mode(),
            tokio_postgres::config::SslMode::Require
        );
    }
}
