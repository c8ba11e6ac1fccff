//! `mosaic receipts`: keeping receipts for a set time.
//!
//! Receipts (one event per search and one row per pool candidate) hold the
//! caller's principal, session id and query text, so they are kept for
//! `receipt_retention_days` (the retrieval profile; 30 by default) and then
//! dropped a whole day at a time. Both commands need the owner role: the
//! runtime role the service uses can neither delete nor drop receipts.
//!
//! * `purge` runs the purge now (`receipts.purge`, migration 0012): drops
//!   the expired day partitions and creates the coming week's.
//! * `schedule` installs the same purge as a daily pg_cron job inside the
//!   database (Aurora PostgreSQL ships pg_cron); `--print` only prints the
//!   SQL.

use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use mosaic::db;
use mosaic::receipt::purge;

#[derive(Args)]
pub struct ReceiptsArgs {
    #[command(subcommand)]
    action: Action,
}

#[derive(Subcommand)]
enum Action {
    /// Drop the receipts older than the retention period, now.
    Purge {
        /// Owner-role connection string of the service's database.
        #[arg(long, env = "MOSAIC_DATABASE_URL", default_value_t = db::local_owner_url(), hide_env_values = true)]
        database_url: String,
        /// Days to keep; defaults to the profile's `receipt_retention_days`
        /// (MOSAIC_RECEIPT_RETENTION_DAYS).
        #[arg(long)]
        retention_days: Option<u32>,
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Run the purge daily with pg_cron (in AWS: Aurora's pg_cron).
    Schedule {
        /// Owner-role connection string of the database pg_cron is installed
        /// in (its `cron.database_name`, usually `postgres`).
        #[arg(long, env = "MOSAIC_CRON_DATABASE_URL", hide_env_values = true)]
        cron_database_url: Option<String>,
        /// The database whose receipts are purged.
        #[arg(long, default_value = "mosaic")]
        database: String,
        /// When, in cron syntax (UTC).
        #[arg(long, default_value = "17 3 * * *")]
        at: String,
        /// Days to keep; defaults to the profile's `receipt_retention_days`.
        #[arg(long)]
        retention_days: Option<u32>,
        /// Only print the SQL to run.
        #[arg(long)]
        print: bool,
    },
}

fn retention(days: Option<u32>) -> Result<u32> {
    match days {
        Some(0) => anyhow::bail!("--retention-days must be at least 1"),
        Some(d) => Ok(d),
        None => Ok(mosaic::RetrievalProfile::from_env()
            .map_err(anyhow::Error::msg)?
            .receipt_retention_days),
    }
}

pub async fn run(args: ReceiptsArgs) -> Result<()> {
    match args.action {
        Action::Purge {
            database_url,
            retention_days,
            json,
        } => {
            let days = retention(retention_days)?;
            let client = db::connect(&database_url)
                .await
                .map_err(|e| anyhow::anyhow!("cannot connect to the database: {e}"))?;
            let report = purge::purge(&client, days)
                .await
                .context("receipt purge failed (it needs the owner role)")?;
            if json {
                println!("{}", serde_json::to_string_pretty(&report)?);
            } else {
                println!(
                    "receipts older than {} days purged: {} day partitions dropped, {} events and {} candidates deleted from the default partitions; {} day partitions created",
                    report.retention_days,
                    report.dropped_days,
                    report.deleted_events,
                    report.deleted_candidates,
                    report.created_days
                );
            }
        }
        Action::Schedule {
            cron_database_url,
            database,
            at,
            retention_days,
            print,
        } => {
            let sql = purge::schedule_sql(retention(retention_days)?, &at, &database);
            match (print, cron_database_url) {
                (true, _) => println!("{sql}"),
                (false, None) => {
                    anyhow::bail!("--cron-database-url is required (or --print to see the SQL)")
                }
                (false, Some(url)) => {
                    let client = db::connect(&url)
                        .await
                        .map_err(|e| anyhow::anyhow!("cannot connect to the database: {e}"))?;
                    client
                        .batch_execute("CREATE EXTENSION IF NOT EXISTS pg_cron")
                        .await
                        .context("cannot create pg_cron (is it in shared_preload_libraries, and is this the database named by cron.database_name?)")?;
                    let job: i64 = client
                        .query_one(sql.trim_end_matches(';'), &[])
                        .await
                        .context("cron.schedule_in_database failed (is pg_cron installed in this database?)")?
                        .get(0);
                    println!("scheduled pg_cron job {job} ({}): {sql}", purge::PURGE_JOB);
                }
            }
        }
    }
    Ok(())
}
