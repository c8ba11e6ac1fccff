//! `mosaic db`: the local PostgreSQL cluster (start, stop, status, url,
//! ensure, install), through `scripts/db.sh`.

use anyhow::{Context, Result};
use clap::Args;
use std::path::PathBuf;

#[derive(Args)]
pub struct DbCmdArgs {
    #[arg(value_parser = ["start", "stop", "status", "url", "ensure", "install"])]
    action: String,
    /// For `url`: owner, runtime or admin.
    role: Option<String>,
}

/// A script of the repository's `scripts/` folder (`MOSAIC_REPO` when set,
/// else the checkout this command was built from).
fn repo_script(name: &str) -> PathBuf {
    if let Ok(dir) = std::env::var("MOSAIC_REPO") {
        return PathBuf::from(dir).join("scripts").join(name);
    }
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../scripts")).join(name)
}

/// Runs the script and exits with its status.
pub fn run(args: DbCmdArgs) -> Result<()> {
    let script = repo_script("db.sh");
    let mut cmd = std::process::Command::new("bash");
    cmd.arg(&script).arg(&args.action);
    if let Some(role) = args.role {
        cmd.arg(role);
    }
    let status = cmd
        .status()
        .with_context(|| format!("cannot run {}", script.display()))?;
    std::process::exit(status.code().unwrap_or(1));
}
