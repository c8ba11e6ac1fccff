//! `mosaic compare`: two to five granted products of a search side by side
//! (`compare_products`).

use crate::table::{cut, number};
use crate::target::{print_or_json, TargetArgs};
use anyhow::Result;
use clap::Args;
use mosaic::operation::Operation;
use serde_json::{json, Value};

#[derive(Args)]
pub struct CompareArgs {
    event: String,
    #[arg(num_args = 2..=5, required = true)]
    product_ids: Vec<String>,
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    target: TargetArgs,
}

pub async fn run(args: CompareArgs) -> Result<()> {
    let call = json!({"retrieval_scope_id": args.event, "product_ids": args.product_ids});
    let r = args.target.call(Operation::CompareProducts, call).await?;
    print_or_json(&r, args.json, print_compare)
}

fn print_compare(v: &Value) {
    let products = v["products"].as_array().cloned().unwrap_or_default();
    for p in &products {
        println!(
            "{:>2}. {:<10} {:<44} {:>10}  rating {}  {}",
            number(&p["receipt"]["served_rank"]),
            number(&p["product_id"]),
            cut(&number(&p["title"]), 44),
            format!("{:.2}", p["price_cents"].as_f64().unwrap_or(0.0) / 100.0),
            number(&p["rating"]),
            number(&p["availability"])
        );
    }
    for row in v["attributes"]["rows"].as_array().into_iter().flatten() {
        let vals: Vec<String> = products
            .iter()
            .map(|p| number(&row["values"][number(&p["product_id"])]))
            .collect();
        println!("    {:<22} {}", number(&row["key"]), vals.join(" | "));
    }
}
