//! Arguments several commands share: the owner-role connection, and the
//! service context on the runtime role.

use crate::embedder::{self, EmbedderArgs};
use anyhow::Result;
use clap::Args;
use mosaic::db;

#[derive(Args, Clone)]
pub struct DbArgs {
    /// Owner-role connection string (migrations and loading).
    #[arg(long, env = "MOSAIC_DATABASE_URL", default_value_t = db::local_owner_url(), hide_env_values = true)]
    pub database_url: String,
}

impl DbArgs {
    /// Connects as the owner role.
    pub async fn connect(&self) -> Result<tokio_postgres::Client> {
        db::connect(&self.database_url).await.map_err(|e| {
            let cause = e.to_string();
            let hint = connect_hint(&cause, "--database-url or MOSAIC_DATABASE_URL");
            anyhow::anyhow!("cannot connect to the database: {cause}\n({hint})")
        })
    }

    /// Connects as the owner role to a database that holds every migration
    /// of this build: the commands that write the catalog call SQL functions
    /// the migrations define, and would otherwise fail on a missing one.
    pub async fn connect_migrated(&self) -> Result<tokio_postgres::Client> {
        let client = self.connect().await?;
        let pending = db::pending_migrations(&client).await?;
        if let Some(first) = pending.first() {
            anyhow::bail!(
                "the database lacks {} migration(s) of this build, from {first}: run `mosaic migrate` first",
                pending.len()
            );
        }
        Ok(client)
    }
}

/// What to do about a connection that failed with `cause` (its text),
/// whose connection string comes from `source`.
pub fn connect_hint(cause: &str, source: &str) -> String {
    if cause.contains("password authentication failed") || cause.contains("role \"") {
        format!("check the role and password in {source}")
    } else if cause.contains("database \"") && cause.contains("does not exist") {
        format!(
            "check the database name in {source}; `mosaic db start` creates only the local database `mosaic`"
        )
    } else if cause.contains("certificate") || cause.contains("UnknownIssuer") {
        format!(
            "the server's certificate is not trusted: add `sslrootcert=FILE` (with `sslmode=require`) to {source}; \
             the local cluster's CA is .mosaic/pg/tls/ca.crt"
        )
    } else {
        format!(
            "for the local database run `mosaic db start` or `make db`; elsewhere check {source}"
        )
    }
}

/// An error of a command that writes the schema or the catalog (migrate,
/// load, embed), with what to do when the database refused it for its
/// privileges.
pub fn owner_hint(e: anyhow::Error) -> anyhow::Error {
    let text = format!("{e:#}");
    if text.contains("permission denied to create extension") {
        anyhow::anyhow!(
            "{text}\n(the extensions vector, pg_trgm and btree_gin need a superuser to create them \
             once, before `mosaic migrate`: on Aurora or RDS the master user, `CREATE EXTENSION vector; \
             CREATE EXTENSION pg_trgm; CREATE EXTENSION btree_gin;`)"
        )
    } else if text.contains("permission denied") {
        anyhow::anyhow!(
            "{text}\n(this command writes the schema or the catalog: run it as the owner role, \
             --database-url or MOSAIC_DATABASE_URL, not the runtime role)"
        )
    } else {
        e
    }
}

#[derive(Args, Clone)]
pub struct RuntimeArgs {
    /// Runtime-role connection string (what the service uses).
    #[arg(long = "runtime-database-url", env = "MOSAIC_RUNTIME_DATABASE_URL",
          default_value_t = db::local_runtime_url(), hide_env_values = true)]
    pub url: String,
}

impl RuntimeArgs {
    /// The service context of the `mosaic` commands: the runtime-role
    /// connection, and the embedder and reranker the settings name. A
    /// database that lacks this build's migrations is refused here, naming
    /// `mosaic migrate`, rather than answering every operation "temporarily
    /// unavailable"; one that cannot be reached is left to the operation,
    /// whose error then says why.
    pub fn ctx(&self, embedder: &EmbedderArgs, connections: usize) -> Result<mosaic::Ctx> {
        let settings = mosaic::config::Settings::from_lookup(|k| match k {
            "MOSAIC_DATABASE_URL" => Some(self.url.clone()),
            k if k.starts_with("MOSAIC_DB_") => None,
            k => embedder.lookup(k),
        })
        .map_err(anyhow::Error::msg)?;
        embedder::block_on(async {
            let ctx = mosaic::config::build_context(&settings, connections)
                .await
                .map_err(anyhow::Error::msg)?;
            match mosaic::config::migrations_at_start(&ctx).await {
                Some(state @ db::MigrationState::Lacking(_)) => {
                    anyhow::bail!("{}", state.problem().unwrap_or_default())
                }
                // A role granted by hand may lack only the record's read:
                // said, and the command goes on.
                Some(state @ db::MigrationState::Unreadable) => {
                    tracing::warn!("{}", state.problem().unwrap_or_default())
                }
                _ => {}
            }
            Ok(ctx)
        })
    }
}
