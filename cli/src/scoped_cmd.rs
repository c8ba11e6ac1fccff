//! `mosaic evidence`, `mosaic compare`, `mosaic explain`, and the `--server`
//! mode shared with `mosaic search`: each operation runs either in-process
//! through the library or against a running server over HTTP, and prints
//! the same readable table.

use anyhow::{anyhow, bail, Result};
use mosaic::{Ctx, Principal};
use serde_json::{json, Value};

/// Where an operation runs.
pub enum Target {
    Local(Box<Ctx>),
    Server(String),
}

fn http(
    base: &str,
    method: &str,
    path: &str,
    principal: &Principal,
    body: Option<&Value>,
) -> Result<Value> {
    let url = format!("{}{}", base.trim_end_matches('/'), path);
    // The server makes `local:<name>` of the header; without it the call is
    // anonymous, as `--principal anonymous` (the default) is in-process.
    let mut req = ureq::request(method, &url);
    if !principal.is_anonymous() {
        req = req.set(mosaic::principal::HEADER, principal.as_str());
    }
    let resp = match body {
        Some(b) => req.send_json(b.clone()),
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

pub fn local_err(e: mosaic::Error) -> anyhow::Error {
    anyhow!(
        "{} ({})",
        e.body()["error"]["message"].as_str().unwrap_or(""),
        e.code().as_str()
    )
}

use mosaic::contract::encode_segment as enc;

pub async fn search(t: &Target, p: &Principal, body: Value) -> Result<Value> {
    match t {
        Target::Local(ctx) => {
            mosaic::search::search_json(ctx, p, &body, mosaic::search::Shape::Nested)
                .await
                .map_err(local_err)
        }
        Target::Server(base) => http(base, "POST", "/api/search", p, Some(&body)),
    }
}

pub async fn evidence(
    t: &Target,
    p: &Principal,
    event: &str,
    product: &str,
    question: &str,
    limit: i64,
) -> Result<Value> {
    match t {
        Target::Local(ctx) => {
            let args = json!({"retrieval_scope_id": event, "product_id": product, "evidence_query": question, "limit": limit});
            mosaic::scope::get_product_evidence(ctx, p, &args)
                .await
                .map_err(local_err)
        }
        Target::Server(base) => {
            let body =
                json!({"retrieval_scope_id": event, "evidence_query": question, "limit": limit});
            http(
                base,
                "POST",
                &format!("/api/products/{}/evidence", enc(product)),
                p,
                Some(&body),
            )
        }
    }
}

pub async fn compare(t: &Target, p: &Principal, event: &str, products: &[String]) -> Result<Value> {
    match t {
        Target::Local(ctx) => {
            let args = json!({"retrieval_scope_id": event, "product_ids": products});
            mosaic::scope::compare_products(ctx, p, &args)
                .await
                .map_err(local_err)
        }
        Target::Server(base) => {
            let body = json!({"product_ids": products});
            http(
                base,
                "POST",
                &format!("/api/retrieval/events/{}/compare", enc(event)),
                p,
                Some(&body),
            )
        }
    }
}

pub async fn explain(t: &Target, p: &Principal, event: &str) -> Result<Value> {
    match t {
        Target::Local(ctx) => {
            mosaic::scope::explain_retrieval(ctx, p, &json!({"retrieval_scope_id": event}))
                .await
                .map_err(local_err)
        }
        Target::Server(base) => http(
            base,
            "GET",
            &format!("/api/retrieval/events/{}", enc(event)),
            p,
            None,
        ),
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
