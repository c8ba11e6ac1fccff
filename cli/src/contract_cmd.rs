//! `mosaic contract generate [--check]`: writes (or checks) every artefact
//! projected from `shared/contract/tools.json`.
//!
//! The repository root is `MOSAIC_REPO` when set, else the parent of this
//! crate's manifest directory. `--check` writes nothing and fails, listing
//! the files, when any generated file is missing or differs; it is the same
//! comparison the drift test runs ([`mosaic::contract::drifted`]).

use anyhow::{bail, Context, Result};
use clap::Args;
use mosaic::contract;
use std::path::PathBuf;

/// The checkout the generated files live in.
pub fn repo_root() -> PathBuf {
    match std::env::var_os("MOSAIC_REPO") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/..")),
    }
}

#[derive(Args)]
pub struct ContractArgs {
    #[arg(value_parser = ["generate"])]
    action: String,
    /// Write nothing; fail when a generated file is missing or differs.
    #[arg(long)]
    check: bool,
}

/// Runs `contract <action>`; only `generate` exists.
pub fn run(args: ContractArgs) -> Result<()> {
    let ContractArgs { action, check } = args;
    if action != "generate" {
        bail!("unknown contract action `{action}`: use `generate`");
    }
    let root = repo_root();
    if check {
        let drifted = contract::drifted(&root);
        if drifted.is_empty() {
            println!("contract: every generated file is up to date");
            return Ok(());
        }
        for path in &drifted {
            eprintln!("out of date: {path}");
        }
        eprintln!(
            "{} generated file(s) differ from shared/contract/tools.json; run `mosaic contract generate`",
            drifted.len()
        );
        std::process::exit(1);
    }
    for (path, content) in contract::generated_files_at(&root) {
        let file = root.join(path);
        if std::fs::read_to_string(&file).is_ok_and(|have| have == content) {
            println!("unchanged {path}");
            continue;
        }
        if let Some(dir) = file.parent() {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot create {}", dir.display()))?;
        }
        std::fs::write(&file, content)
            .with_context(|| format!("cannot write {}", file.display()))?;
        println!("wrote     {path}");
    }
    Ok(())
}
