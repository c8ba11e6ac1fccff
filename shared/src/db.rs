//! Database connections and migrations.
//!
//! Migrations are the numbered files in `sql/`, compiled into the binary so
//! `mosaic migrate` works from anywhere. They are applied in order inside one
//! transaction under an advisory lock, recorded in `mosaic_meta.migrations`
//! with a checksum, and skipped when already applied: running them twice is a
//! no-op. A migration that changed after it was applied is an error, never a
//! silent re-run.

use sha2::{Digest, Sha256};
use tokio_postgres::{Client, NoTls};

/// The local development database the project starts itself
/// (`scripts/db.sh`): the owner role, used for migrations and loading.
pub const LOCAL_OWNER_URL: &str = "postgres://mosaic_owner:mosaic_owner@127.0.0.1:54329/mosaic";
/// The local runtime role: reads the catalog, appends receipts.
pub const LOCAL_RUNTIME_URL: &str =
    "postgres://mosaic_runtime:mosaic_runtime@127.0.0.1:54329/mosaic";

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
];

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
    if !(1..=16_000).contains(&opts.embedding_dim) {
        return Err(MigrateError::Option(format!(
            "embedding dimension {} is outside 1..16000",
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
    tx.commit().await?;
    Ok(report)
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
