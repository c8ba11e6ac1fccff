//! `mosaic search`: runs `search_products` through the library and prints a
//! readable table (or the JSON response).

use anyhow::{bail, Result};

use serde_json::{Map, Value};

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

fn cell(v: &Value) -> String {
    match v {
        Value::Null => "-".into(),
        Value::String(x) => x.clone(),
        other => other.to_string(),
    }
}

fn truncate(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        format!("{}…", s.chars().take(n - 1).collect::<String>())
    }
}

fn fixed(v: &Value, places: usize) -> String {
    v.as_f64()
        .map_or_else(|| "-".into(), |f| format!("{f:.places$}"))
}

/// Prints a search response (the JSON the service returns) as a table.
pub fn print_table(r: &Value) {
    println!(
        "event {}  strategy {}  query {:?}",
        cell(&r["search_event_id"]),
        cell(&r["strategy"]),
        r["normalized_query"].as_str().unwrap_or("")
    );
    let (rank, product, price, lex, tri, sem, rrf, rerank) = (
        "rank", "product", "price", "lex", "tri", "sem", "rrf", "rerank",
    );
    println!("{rank:>4}  {product:<46} {price:>10}  {lex:>4} {tri:>4} {sem:>4}  {rrf:>7}  {rerank:>7}  granted");
    for x in r["results"].as_array().into_iter().flatten() {
        let title = cell(&x["title"]);
        let title = if x["exact_match"].as_bool() == Some(true) {
            format!("{title} [exact]")
        } else {
            title
        };
        let sig = &x["signals"];
        println!(
            "{:>4}  {:<46} {:>10}  {:>4} {:>4} {:>4}  {:>7}  {:>7}  {}",
            cell(&x["rank"]),
            truncate(&title, 46),
            format!(
                "{:.2} {}",
                x["price_cents"].as_f64().unwrap_or(0.0) / 100.0,
                cell(&x["currency"])
            ),
            cell(&sig["lexical"]["rank"]),
            cell(&sig["trigram"]["rank"]),
            cell(&sig["semantic"]["rank"]),
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
                    cell(&a["returned"]),
                    cell(&a["verdict"]),
                    fixed(&a["ms"], 1)
                )
            })
            .collect();
        println!("arms: {}", arms.join("; "));
        println!(
            "semantic route {}  eligible {}  pool {}  rerank {}  total {} ms",
            cell(&d["semantic_route"]),
            cell(&d["eligible_estimate"]),
            cell(&d["pool_size"]),
            cell(&d["rerank_status"]),
            fixed(&d["timings_ms"]["total"], 1)
        );
        for w in d["warnings"].as_array().into_iter().flatten() {
            println!("warning: {}", cell(w));
        }
    }
}
