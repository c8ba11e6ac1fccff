//! `mosaic evidence`, `mosaic compare`, `mosaic explain`, and the `--server`
//! mode shared with `mosaic search`: each operation runs either in-process
//! through the library or against a running server over HTTP, and prints
//! the same readable table.

use anyhow::{anyhow, bail, Result};
use mosaic::operation::Operation;
use mosaic::{Ctx, Principal};
use serde_json::{Map, Value};

/// Where an operation runs.
pub enum Target {
    Local(Box<Ctx>),
    Server(String),
}

/// Sends one operation's HTTP request to a running server.
fn http(
    base: &str,
    principal: &Principal,
    op: Operation,
    args: &Map<String, Value>,
) -> Result<Value> {
    let (route, body) = mosaic::contract::http_request(op.contract(), args);
    let (method, path) = route.split_once(' ').unwrap_or(("POST", &route));
    let url = format!("{}{}", base.trim_end_matches('/'), path);
    // The server makes `local:<name>` of the header; without it the call is
    // anonymous, as `--principal anonymous` (the default) is in-process.
    let mut req = ureq::request(method, &url);
    if !principal.is_anonymous() {
        req = req.set(mosaic::principal::HEADER, principal.as_str());
    }
    let resp = match body {
        Some(b) => req.send_json(b),
        None => req.call(),
    };
    match resp {
        Ok(r) => Ok(r.into_json()?),
        Err(ureq::Error::Status(code, r)) => {
            let v: Value = r.into_json().unwrap_or(Value::Null);
            bail!(
                "HTTP {code} {}: {}",
                v["error"]["code"].as_str().unwrap_or("?"),
                v["error"]["message"].as_str().unwrap_or("")
            )
        }
        Err(e) => bail!("cannot reach {url}: {e} (is `mosaic serve` running?)"),
    }
}

/// A library error as the command reports it.
pub fn local_err(e: mosaic::Error) -> anyhow::Error {
    anyhow!(
        "{} ({})",
        e.body()["error"]["message"].as_str().unwrap_or(""),
        e.code().as_str()
    )
}

/// Runs `op` on flat logical arguments, in-process or on the server.
pub async fn call(t: &Target, p: &Principal, op: Operation, args: Value) -> Result<Value> {
    match t {
        Target::Local(ctx) => op.call(ctx, p, &args).await.map_err(local_err),
        Target::Server(base) => {
            let Value::Object(args) = args else {
                bail!("the arguments of {} must be an object", op.name())
            };
            http(base, p, op, &args)
        }
    }
}

fn s(v: &Value) -> String {
    match v {
        Value::Null => "-".into(),
        Value::String(x) => x.clone(),
        Value::Number(n) => n.as_f64().map_or_else(
            || n.to_string(),
            |f| {
                if f.fract() == 0.0 {
                    format!("{f:.0}")
                } else {
                    format!("{f:.3}")
                }
            },
        ),
        other => other.to_string(),
    }
}

fn cut(x: &str, n: usize) -> String {
    if x.chars().count() <= n {
        x.to_string()
    } else {
        format!("{}…", x.chars().take(n - 1).collect::<String>())
    }
}

pub fn print_evidence(v: &Value) {
    println!(
        "evidence for {} (\"{}\")",
        s(&v["product_id"]),
        s(&v["evidence_query"])
    );
    for (i, e) in v["evidence"].as_array().into_iter().flatten().enumerate() {
        let rating = if e["rating"].is_null() {
            String::new()
        } else {
            format!(" {}★", s(&e["rating"]))
        };
        println!(
            "{:>3}. [{}{}] {}  score {}",
            i + 1,
            s(&e["kind"]),
            rating,
            cut(&s(&e["title"]), 50),
            s(&e["score"])
        );
        let text = if e["snippet"].is_string() {
            s(&e["snippet"])
        } else {
            s(&e["text"])
        };
        println!("     {}", cut(&text.replace('\n', " "), 110));
        println!(
            "     source {} (revision {})",
            s(&e["source_uri"]),
            s(&e["source_revision"])
        );
    }
}

pub fn print_explain(v: &Value, rows: usize) {
    println!(
        "event {}  strategy {}  route {}  limit {}  authorized {}  rerank {}",
        s(&v["search_event_id"]),
        s(&v["strategy"]),
        s(&v["semantic_route"]),
        s(&v["limit"]),
        s(&v["authorized_limit"]),
        s(&v["rerank_status"])
    );
    println!(
        "query {:?}  filters {}",
        s(&v["query_text"]),
        v["applied_filters"]
    );
    let (pool, served, product, lex, tri, sem, rrf, rerank) = (
        "pool", "served", "product", "lex", "tri", "sem", "rrf", "rerank",
    );
    println!("{pool:>4} {served:>6}  {product:<10} {lex:>4} {tri:>4} {sem:>4} {rrf:>8} {rerank:>7}  granted");
    let list = v["pool"].as_array().cloned().unwrap_or_default();
    for c in list.iter().take(rows) {
        let sig = &c["signals"];
        println!(
            "{:>4} {:>6}  {:<10} {:>4} {:>4} {:>4} {:>8} {:>7}  {}",
            s(&c["pre_rerank_rank"]),
            s(&c["served_rank"]),
            s(&c["product_id"]),
            s(&sig["lexical"]["rank"]),
            s(&sig["trigram"]["rank"]),
            s(&sig["semantic"]["rank"]),
            s(&sig["rrf_score"]),
            s(&sig["rerank_score"]),
            if c["granted"].as_bool() == Some(true) {
                "yes"
            } else {
                "no"
            }
        );
    }
    if list.len() > rows {
        println!(
            "… {} more pool candidates (pool rank and served rank are separate spaces)",
            list.len() - rows
        );
    }
    if v["replay"].is_object() {
        crate::replay_cmd::print_report(&v["replay"]);
    }
}

pub fn print_compare(v: &Value) {
    let products = v["products"].as_array().cloned().unwrap_or_default();
    for p in &products {
        println!(
            "{:>2}. {:<10} {:<44} {:>10}  rating {}  {}",
            s(&p["receipt"]["served_rank"]),
            s(&p["product_id"]),
            cut(&s(&p["title"]), 44),
            format!("{:.2}", p["price_cents"].as_f64().unwrap_or(0.0) / 100.0),
            s(&p["rating"]),
            s(&p["availability"])
        );
    }
    for row in v["attributes"]["rows"].as_array().into_iter().flatten() {
        let vals: Vec<String> = products
            .iter()
            .map(|p| s(&row["values"][s(&p["product_id"])]))
            .collect();
        println!("    {:<22} {}", s(&row["key"]), vals.join(" | "));
    }
}
