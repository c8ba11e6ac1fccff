//! `mosaic search`: runs `search_products` through the library and prints a
//! readable table (or the JSON response).

use anyhow::{bail, Result};
use mosaic::search::{SearchResponse, Shape};
use mosaic::{Ctx, Principal};
use serde_json::{Map, Value};

const NUMERIC: &[&str] = &["min_price_cents", "max_price_cents", "min_rating"];

/// Turns `key=value` filter arguments into the HTTP-shaped `filters` object.
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

fn rank(s: &Option<mosaic::search::SignalOut>) -> String {
    s.map_or_else(|| "-".into(), |s| s.rank.to_string())
}

fn truncate(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        format!("{}…", s.chars().take(n - 1).collect::<String>())
    }
}

/// Prints a search response as a table.
pub fn print_table(r: &SearchResponse) {
    println!(
        "event {}  strategy {}  query {:?}",
        r.search_event_id,
        r.strategy.as_str(),
        r.normalized_query.as_deref().unwrap_or("")
    );
    println!(
        "{:>4}  {:<46} {:>10}  {:>4} {:>4} {:>4}  {:>7}  {:>7}  {}",
        "rank", "product", "price", "lex", "tri", "sem", "rrf", "rerank", "granted"
    );
    for x in &r.results {
        let title = if x.exact_match {
            format!("{} [exact]", x.title)
        } else {
            x.title.clone()
        };
        println!(
            "{:>4}  {:<46} {:>10}  {:>4} {:>4} {:>4}  {:>7}  {:>7}  {}",
            x.rank,
            truncate(&title, 46),
            format!("{:.2} {}", x.price_cents as f64 / 100.0, x.currency),
            rank(&x.signals.lexical),
            rank(&x.signals.trigram),
            rank(&x.signals.semantic),
            x.signals
                .rrf_score
                .map_or_else(|| "-".into(), |s| format!("{s:.4}")),
            x.signals
                .rerank_score
                .map_or_else(|| "-".into(), |s| format!("{s:.3}")),
            if x.granted { "yes" } else { "no" },
        );
    }
    if let Some(d) = &r.diagnostics {
        let arms: Vec<String> = d
            .arms
            .iter()
            .map(|(name, a)| {
                format!("{name} {} ({:?}, {:.1} ms)", a.returned, a.verdict, a.ms).to_lowercase()
            })
            .collect();
        println!("arms: {}", arms.join("; "));
        println!(
            "semantic route {}  eligible {}  pool {}  rerank {}  total {:.1} ms",
            d.semantic_route.as_deref().unwrap_or("-"),
            d.eligible_estimate
                .map_or_else(|| "-".into(), |e| e.to_string()),
            d.pool_size,
            d.rerank_status,
            d.timings_ms.get("total").copied().unwrap_or_default()
        );
        for w in &d.warnings {
            println!("warning: {w}");
        }
    }
}

/// Runs one search and prints it.
pub async fn run(
    ctx: &Ctx,
    principal: &Principal,
    body: Value,
    json: bool,
) -> Result<SearchResponse> {
    let req = match mosaic::search::SearchRequest::from_json(&body, Shape::Nested, &ctx.profile) {
        Ok(r) => r,
        Err(e) => bail!(
            "{} ({})",
            e,
            e.body()["error"]["code"].as_str().unwrap_or("")
        ),
    };
    let resp = mosaic::search::search(ctx, principal, req)
        .await
        .map_err(|e| anyhow::anyhow!("search failed: {e}"))?;
    if json {
        println!("{}", serde_json::to_string_pretty(&resp)?);
    } else {
        print_table(&resp);
    }
    Ok(resp)
}
