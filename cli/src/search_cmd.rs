//! `mosaic search`: runs `search_products` through the library and prints a
//! readable table (or the JSON response).

use crate::table::{cut, fixed, text};
use crate::target::{print_or_json, TargetArgs};
use anyhow::{bail, Result};
use clap::Args;
use mosaic::operation::Operation;
use serde_json::{Map, Value};

#[derive(Args)]
pub struct SearchArgs {
    /// The query; omit it to search by filters alone.
    query: Option<String>,
    /// A filter, KEY=VALUE (repeatable): domain, category_key, brand,
    /// availability (comma list), in_stock_only, min_price_cents,
    /// max_price_cents, min_rating, attributes.NAME.
    #[arg(long = "filter", short = 'f')]
    filters: Vec<String>,
    #[arg(long, default_value_t = 10)]
    limit: i64,
    /// How many of the results to grant (defaults to --limit).
    #[arg(long)]
    authorized_limit: Option<i64>,
    /// Skip the rerank stage.
    #[arg(long)]
    no_rerank: bool,
    /// Print the JSON response instead of a table.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    target: TargetArgs,
}

pub async fn run(a: SearchArgs) -> Result<()> {
    let mut args = parse_filters(&a.filters)?;
    args.insert("limit".into(), a.limit.into());
    args.insert("rerank".into(), (!a.no_rerank).into());
    args.insert("include_diagnostics".into(), true.into());
    if let Some(q) = a.query {
        args.insert("query".into(), q.into());
    }
    if let Some(n) = a.authorized_limit {
        args.insert("authorized_limit".into(), n.into());
    }
    let r = a
        .target
        .call(Operation::SearchProducts, args.into())
        .await?;
    print_or_json(&r, a.json, print_table)
}

const NUMERIC: &[&str] = &["min_price_cents", "max_price_cents", "min_rating"];

/// Turns `key=value` filter arguments into the flat logical filter arguments.
/// `attributes.KEY=VALUE` sets one attribute; values that parse as JSON
/// scalars (numbers, booleans) keep that type.
pub fn parse_filters(args: &[String]) -> Result<Map<String, Value>> {
    let mut filters = Map::new();
    let mut attributes = Map::new();
    for arg in args {
        let Some((key, raw)) = arg.split_once('=') else {
            bail!("--filter takes KEY=VALUE, not `{arg}`");
        };
        let scalar = || match serde_json::from_str::<Value>(raw) {
            Ok(v @ (Value::Number(_) | Value::Bool(_))) => v,
            _ => Value::from(raw),
        };
        if let Some(attr) = key.strip_prefix("attributes.") {
            attributes.insert(attr.to_string(), scalar());
        } else if key == "availability" && raw.contains(',') {
            filters.insert(key.into(), Value::from(raw.split(',').collect::<Vec<_>>()));
        } else if key == "in_stock_only" || NUMERIC.contains(&key) {
            filters.insert(key.into(), scalar());
        } else {
            filters.insert(key.into(), Value::from(raw));
        }
    }
    if !attributes.is_empty() {
        filters.insert("attributes".into(), Value::Object(attributes));
    }
    Ok(filters)
}

/// Prints a search response (the JSON the service returns) as a table.
fn print_table(r: &Value) {
    println!(
        "event {}  strategy {}  query {:?}",
        text(&r["search_event_id"]),
        text(&r["strategy"]),
        r["normalized_query"].as_str().unwrap_or("")
    );
    let (rank, product, price, lex, tri, sem, rrf, rerank) = (
        "rank", "product", "price", "lex", "tri", "sem", "rrf", "rerank",
    );
    println!("{rank:>4}  {product:<46} {price:>10}  {lex:>4} {tri:>4} {sem:>4}  {rrf:>7}  {rerank:>7}  granted");
    for x in r["results"].as_array().into_iter().flatten() {
        let title = text(&x["title"]);
        let title = if x["exact_match"].as_bool() == Some(true) {
            format!("{title} [exact]")
        } else {
            title
        };
        let sig = &x["signals"];
        println!(
            "{:>4}  {:<46} {:>10}  {:>4} {:>4} {:>4}  {:>7}  {:>7}  {}",
            text(&x["rank"]),
            cut(&title, 46),
            format!(
                "{:.2} {}",
                x["price_cents"].as_f64().unwrap_or(0.0) / 100.0,
                text(&x["currency"])
            ),
            text(&sig["lexical"]["rank"]),
            text(&sig["trigram"]["rank"]),
            text(&sig["semantic"]["rank"]),
            fixed(&sig["rrf_score"], 4),
            fixed(&sig["rerank_score"], 3),
            if x["granted"].as_bool() == Some(true) {
                "yes"
            } else {
                "no"
            },
        );
    }
    let d = &r["diagnostics"];
    if d.is_object() {
        let arms: Vec<String> = d["arms"]
            .as_object()
            .into_iter()
            .flatten()
            .map(|(name, a)| {
                format!(
                    "{name} {} ({}, {} ms)",
                    text(&a["returned"]),
                    text(&a["verdict"]),
                    fixed(&a["ms"], 1)
                )
            })
            .collect();
        println!("arms: {}", arms.join("; "));
        println!(
            "semantic route {}  eligible {}  pool {}  rerank {}  total {} ms",
            text(&d["semantic_route"]),
            text(&d["eligible_estimate"]),
            text(&d["pool_size"]),
            text(&d["rerank_status"]),
            fixed(&d["timings_ms"]["total"], 1)
        );
        for w in d["warnings"].as_array().into_iter().flatten() {
            println!("warning: {}", text(w));
        }
    }
}
