//! `mosaic replay`: re-run recorded searches against the current catalog
//! and models and show what changed ([`mosaic::replay`]).
//!
//! * `mosaic replay EVENT [--profile current|recorded] [--json]` replays
//!   one event and prints the diff between its receipt and the replay's.
//! * `mosaic replay --sample N --since DATE` replays a random sample of the
//!   events recorded since DATE and summarises the moves.
//!
//! It is an operator's command: it connects with the owner-role URL (any
//! event, whoever's it is), reads the catalog and writes receipts only.

use crate::table::text;
use crate::target::{local_err, print_or_json};
use anyhow::{bail, Context, Result};
use chrono::{DateTime, NaiveDate, Utc};
use clap::Args;
use mosaic::db;
use mosaic::replay::{self, Caller, ProfileChoice};
use serde_json::Value;

#[derive(Args)]
pub struct ReplayArgs {
    /// The search_event_id to replay (omit it with --sample).
    #[arg(required_unless_present = "sample", conflicts_with = "sample")]
    event: Option<String>,
    /// The profile to replay with: `current` (this process's, with its
    /// MOSAIC_* overrides) or `recorded` (the event's own snapshot, so only
    /// the catalog and the models differ).
    #[arg(long, value_parser = ["current", "recorded"], default_value = "current")]
    profile: String,
    /// Replay a random sample of up to N events instead of one.
    #[arg(long, requires = "since")]
    sample: Option<i64>,
    /// With --sample: the events recorded since this UTC date (YYYY-MM-DD)
    /// or instant (RFC 3339).
    #[arg(long, requires = "sample")]
    since: Option<String>,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
    /// Owner-role connection string (the runtime role reads no receipt table).
    #[arg(long, env = "MOSAIC_DATABASE_URL", default_value_t = db::local_owner_url(), hide_env_values = true)]
    database_url: String,
    #[command(flatten)]
    embedder: crate::embedder::EmbedderArgs,
}

fn since(s: &str) -> Result<DateTime<Utc>> {
    if let Ok(d) = NaiveDate::parse_from_str(s, "%Y-%m-%d") {
        return Ok(d.and_hms_opt(0, 0, 0).expect("midnight exists").and_utc());
    }
    DateTime::parse_from_rfc3339(s)
        .map(|t| t.with_timezone(&Utc))
        .with_context(|| format!("--since {s:?}: use YYYY-MM-DD or an RFC 3339 instant"))
}

pub async fn run(args: ReplayArgs) -> Result<()> {
    let choice = match args.profile.as_str() {
        "recorded" => ProfileChoice::Recorded,
        _ => ProfileChoice::Current,
    };
    let runtime = crate::args::RuntimeArgs {
        url: args.database_url.clone(),
    };
    let ctx = runtime.ctx(&args.embedder, 2)?;
    let out = match (&args.event, args.sample) {
        (Some(event), _) => {
            let Ok(id) = uuid::Uuid::try_parse(event.trim()) else {
                bail!("{event:?} is not a search_event_id");
            };
            let r = replay::replay(&ctx, Caller::Operator, id, choice)
                .await
                .map_err(local_err)?;
            (serde_json::to_value(r)?, print_report as fn(&Value))
        }
        (None, Some(n)) => {
            let from = since(args.since.as_deref().unwrap_or_default())?;
            let s = replay::replay_sample(&ctx, n.max(1), from, choice)
                .await
                .map_err(local_err)?;
            (serde_json::to_value(s)?, print_sample as fn(&Value))
        }
        (None, None) => bail!("give an event to replay, or --sample N --since DATE"),
    };
    print_or_json(&out.0, args.json, out.1)
}

/// A rank move as `before -> after`, `-` where there is none.
fn ranks(m: &Value, key: &str) -> String {
    format!("{} -> {}", text(&m["before"][key]), text(&m["after"][key]))
}

/// Prints one replay report (`mosaic replay`, and the `replay` of an
/// explanation).
pub fn print_report(r: &Value) {
    let d = &r["diff"];
    println!(
        "replay {} of {}  profile {}",
        text(&r["replay_event_id"]),
        text(&r["replayed_event_id"]),
        text(&r["profile"])
    );
    if d["empty"].as_bool() == Some(true) {
        println!("no change: the same served order, the same pool, the same recorded values");
        return;
    }
    println!(
        "top-1 {}  mean served-rank displacement {:.2}",
        if d["top1_unchanged"].as_bool() == Some(true) {
            "unchanged"
        } else {
            "changed"
        },
        d["served_displacement"].as_f64().unwrap_or(0.0)
    );
    for c in d["changes"].as_array().into_iter().flatten() {
        println!(
            "  {:<36} {} -> {}",
            text(&c["field"]),
            text(&c["before"]),
            text(&c["after"])
        );
    }
    let moves = d["moves"].as_array().cloned().unwrap_or_default();
    if moves.is_empty() {
        return;
    }
    let (p, ch, sv, pl, ca) = ("product", "change", "served", "pool", "cause");
    println!("{p:<10} {ch:<14} {sv:>10} {pl:>10}  {ca:<11} arm ranks");
    for m in &moves {
        let arms: Vec<String> = m["arm_ranks"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|a| {
                format!(
                    "{} {} -> {}",
                    text(&a["arm"]),
                    text(&a["before"]),
                    text(&a["after"])
                )
            })
            .collect();
        let line = format!(
            "{:<10} {:<14} {:>10} {:>10}  {:<11} {}",
            text(&m["product_id"]),
            text(&m["change"]),
            ranks(m, "served_rank"),
            ranks(m, "pre_rerank_rank"),
            text(&m["cause"]),
            arms.join(", ")
        );
        println!("{}", line.trim_end());
    }
}

fn by_cause(v: &Value) -> String {
    let parts: Vec<String> = v
        .as_object()
        .into_iter()
        .flatten()
        .map(|(cause, n)| format!("{cause} {n}"))
        .collect();
    if parts.is_empty() {
        "none".into()
    } else {
        parts.join(", ")
    }
}

/// Prints the summary of `mosaic replay --sample`.
pub fn print_sample(s: &Value) {
    let failed = s["failed"].as_array().map_or(0, Vec::len);
    println!(
        "replayed {} searches recorded since {} (profile {}); {failed} could not be replayed",
        text(&s["replayed"]),
        text(&s["since"]),
        text(&s["profile"])
    );
    println!("  unchanged                      {}", text(&s["unchanged"]));
    println!(
        "  top-1 unchanged                {:.0}%",
        s["top1_unchanged_share"].as_f64().unwrap_or(0.0) * 100.0
    );
    println!(
        "  mean served-rank displacement  {:.2}",
        s["mean_served_displacement"].as_f64().unwrap_or(0.0)
    );
    println!(
        "  left the window, by cause      {}",
        by_cause(&s["left_window_by_cause"])
    );
    println!(
        "  left the pool, by cause        {}",
        by_cause(&s["left_pool_by_cause"])
    );
    for f in s["failed"].as_array().into_iter().flatten() {
        println!(
            "  failed {}: {}",
            text(&f["replayed_event_id"]),
            text(&f["error"])
        );
    }
}
