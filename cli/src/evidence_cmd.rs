//! `mosaic evidence`: the evidence units of one granted product of a search
//! (`get_product_evidence`), ranked for a question.

use crate::table::{cut, number};
use crate::target::{print_or_json, TargetArgs};
use anyhow::Result;
use clap::Args;
use mosaic::operation::Operation;
use serde_json::{json, Value};

#[derive(Args)]
pub struct EvidenceArgs {
    /// The search_event_id of the search (the retrieval scope).
    event: String,
    product_id: String,
    /// The question the evidence should answer.
    question: String,
    #[arg(long, default_value_t = 5)]
    limit: i64,
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    target: TargetArgs,
}

pub async fn run(args: EvidenceArgs) -> Result<()> {
    let call = json!({"retrieval_scope_id": args.event, "product_id": args.product_id,
        "evidence_query": args.question, "limit": args.limit});
    let r = args
        .target
        .call(Operation::GetProductEvidence, call)
        .await?;
    print_or_json(&r, args.json, print_evidence)
}

fn print_evidence(v: &Value) {
    println!(
        "evidence for {} (\"{}\")",
        number(&v["product_id"]),
        number(&v["evidence_query"])
    );
    for (i, e) in v["evidence"].as_array().into_iter().flatten().enumerate() {
        let rating = if e["rating"].is_null() {
            String::new()
        } else {
            format!(" {}★", number(&e["rating"]))
        };
        println!(
            "{:>3}. [{}{}] {}  score {}",
            i + 1,
            number(&e["kind"]),
            rating,
            cut(&number(&e["title"]), 50),
            number(&e["score"])
        );
        let text = if e["snippet"].is_string() {
            number(&e["snippet"])
        } else {
            number(&e["text"])
        };
        println!("     {}", cut(&text.replace('\n', " "), 110));
        println!(
            "     source {} (revision {})",
            number(&e["source_uri"]),
            number(&e["source_revision"])
        );
    }
}
