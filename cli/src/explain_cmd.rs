//! `mosaic explain`: what a search did, the event and its whole pool
//! (`explain_retrieval`).

use crate::table::number;
use crate::target::{print_or_json, TargetArgs};
use anyhow::Result;
use clap::Args;
use mosaic::operation::Operation;
use serde_json::{json, Value};

#[derive(Args)]
pub struct ExplainArgs {
    event: String,
    /// Pool rows to print.
    #[arg(long, default_value_t = 15)]
    rows: usize,
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    target: TargetArgs,
}

pub async fn run(args: ExplainArgs) -> Result<()> {
    let call = json!({ "retrieval_scope_id": args.event });
    let r = args.target.call(Operation::ExplainRetrieval, call).await?;
    print_or_json(&r, args.json, |v| print_explain(v, args.rows))
}

fn print_explain(v: &Value, rows: usize) {
    println!(
        "event {}  strategy {}  route {}  limit {}  authorized {}  rerank {}",
        number(&v["search_event_id"]),
        number(&v["strategy"]),
        number(&v["semantic_route"]),
        number(&v["limit"]),
        number(&v["authorized_limit"]),
        number(&v["rerank_status"])
    );
    println!(
        "query {:?}  filters {}",
        number(&v["query_text"]),
        v["applied_filters"]
    );
    let stated = v["query_understanding"]["bounds"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    for b in &stated {
        let unit = match b["kind"].as_str() {
            Some("price") => " cents".to_string(),
            Some("attribute") => format!(" {}", number(&b["unit"])),
            _ => String::new(),
        };
        println!(
            "bound {:?}: {} {} {}{unit}{}",
            number(&b["text"]),
            number(&b["kind"]),
            number(&b["comparison"]),
            number(&b["value"]),
            match b["set_aside"].as_bool() {
                Some(true) => "  (set aside: no pool member keeps it)",
                _ => "",
            }
        );
    }
    let list = v["pool"].as_array().cloned().unwrap_or_default();
    // The bounds column only where the stated bounds ordered the pool.
    let ordered = list.iter().any(|c| c["signals"]["bounds"].is_object());
    let (pool, served, product, lex, tri, sem, rrf, rerank) = (
        "pool", "served", "product", "lex", "tri", "sem", "rrf", "rerank",
    );
    let bounds = if ordered { " bounds" } else { "" };
    println!("{pool:>4} {served:>6}  {product:<10} {lex:>4} {tri:>4} {sem:>4} {rrf:>8} {rerank:>7}{bounds}  granted");
    for c in list.iter().take(rows) {
        let sig = &c["signals"];
        // Broken/kept of the stated bounds in effect, when they ordered the pool.
        let standing = match (ordered, sig["bounds"].as_object()) {
            (false, _) => String::new(),
            (true, Some(s)) => format!(
                " {:>6}",
                format!("{}/{}", number(&s["broken"]), number(&s["kept"]))
            ),
            (true, None) => format!(" {:>6}", "-"),
        };
        println!(
            "{:>4} {:>6}  {:<10} {:>4} {:>4} {:>4} {:>8} {:>7}{}  {}",
            number(&c["pre_rerank_rank"]),
            number(&c["served_rank"]),
            number(&c["product_id"]),
            number(&sig["lexical"]["rank"]),
            number(&sig["trigram"]["rank"]),
            number(&sig["semantic"]["rank"]),
            number(&sig["rrf_score"]),
            number(&sig["rerank_score"]),
            standing,
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
