//! Keeping receipts for a set time: they hold the caller's principal,
//! session id and query text, so they are dropped a whole day at a time
//! once older than the retention period (`receipts.purge`, migration 0012).
//! Both the purge and its pg_cron schedule need the owner role: the runtime
//! role can neither delete nor drop receipts.

use tokio_postgres::Client;

/// What one receipt purge did ([`purge`]).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct PurgeReport {
    pub retention_days: u32,
    /// Day partitions (events and their candidates) dropped.
    pub dropped_days: i32,
    /// Expired rows deleted from the default partitions (rows written while
    /// their day had no partition of its own).
    pub deleted_events: i64,
    pub deleted_candidates: i64,
    /// Day partitions created for the coming week.
    pub created_days: i32,
}

/// Drops the receipts older than `retention_days` whole UTC days and
/// prepares the coming week's partitions (`receipts.purge`, migration 0012).
/// Needs the owner role: the runtime role can neither delete nor drop.
pub async fn purge(
    client: &Client,
    retention_days: u32,
) -> Result<PurgeReport, tokio_postgres::Error> {
    let days = i32::try_from(retention_days).unwrap_or(i32::MAX);
    let row = client
        .query_one(
            "SELECT dropped_days, deleted_events, deleted_candidates, created_days FROM receipts.purge($1)",
            &[&days],
        )
        .await?;
    Ok(PurgeReport {
        retention_days,
        dropped_days: row.get(0),
        deleted_events: row.get(1),
        deleted_candidates: row.get(2),
        created_days: row.get(3),
    })
}

/// The pg_cron job that runs the purge daily inside the database (Aurora
/// PostgreSQL ships pg_cron): the SQL to run as the owner role in the
/// database pg_cron is installed in (`cron.database_name`, by default
/// `postgres`). Scheduling again under the same job name replaces the job.
pub fn schedule_sql(retention_days: u32, cron: &str, database: &str) -> String {
    let quote = |s: &str| format!("'{}'", s.replace('\'', "''"));
    format!(
        "SELECT cron.schedule_in_database({}, {}, {}, {});",
        quote(PURGE_JOB),
        quote(cron),
        quote(&format!("SELECT * FROM receipts.purge({retention_days})")),
        quote(database)
    )
}

/// The pg_cron job name of the receipt purge.
pub const PURGE_JOB: &str = "mosaic-receipts-purge";
