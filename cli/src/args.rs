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
            anyhow::anyhow!(
                "cannot connect to the database: {e}\n(for the local one run `mosaic db start` or `make db`)"
            )
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
        embedder::block_on(self.check_migrations())?;
        let settings = mosaic::config::Settings::from_lookup(|k| match k {
            "MOSAIC_DATABASE_URL" => Some(self.url.clone()),
            k if k.starts_with("MOSAIC_DB_") => None,
            k => embedder.lookup(k),
        })
        .map_err(anyhow::Error::msg)?;
        embedder::block_on(mosaic::config::build_context(&settings, connections))
            .map_err(anyhow::Error::msg)
    }

    /// Refuses a database that lacks one of this build's migrations (or
    /// whose record this role may not read); an unreachable one passes.
    async fn check_migrations(&self) -> Result<()> {
        let Ok(client) = db::connect(&self.url).await else {
            return Ok(());
        };
        match db::migration_state(&client).await {
            Ok(state) => match state.problem() {
                Some(problem) => anyhow::bail!("{problem}"),
                None => Ok(()),
            },
            Err(_) => Ok(()),
        }
    }
}
