//! Where an operation of `mosaic search`, `evidence`, `compare` and
//! `explain` runs: in-process through the library (the default) or against
//! a running server over HTTP (`--server`); either way the command prints
//! the same readable table, or the JSON response.

use crate::args::RuntimeArgs;
use crate::embedder::EmbedderArgs;
use anyhow::{anyhow, bail, Result};
use clap::Args;
use mosaic::operation::Operation;
use mosaic::{Ctx, Principal};
use serde_json::{Map, Value};

/// Where an operation runs: in-process (default) or against `--server`.
#[derive(Args, Clone)]
pub struct TargetArgs {
    /// Base URL of a running `mosaic serve` (e.g. http://127.0.0.1:8787);
    /// without it the operation runs in-process.
    #[arg(long, env = "MOSAIC_SERVER")]
    server: Option<String>,
    /// Principal of the caller (receipts are bound to it): NAME is the
    /// local principal `local:NAME`, in-process as through `--server`;
    /// `anonymous` (the default) is the anonymous principal.
    #[arg(long, value_name = "NAME", default_value = "anonymous")]
    principal: String,
    #[command(flatten)]
    runtime: RuntimeArgs,
    #[command(flatten)]
    embedder: EmbedderArgs,
}

impl TargetArgs {
    fn target(&self) -> Result<Target> {
        Ok(match &self.server {
            Some(url) if !url.starts_with("http://") && !url.starts_with("https://") => {
                bail!("--server must be a URL starting with http:// or https://, such as http://{url}")
            }
            Some(url) => Target::Server(url.clone()),
            None => Target::Local(Box::new(self.runtime.ctx(&self.embedder, 2)?)),
        })
    }

    /// Runs `op` on flat logical arguments where these flags say.
    pub async fn call(&self, op: Operation, args: Value) -> Result<Value> {
        let principal = principal(&self.principal)?;
        call(&self.target()?, &principal, op, args).await
    }
}

/// The caller `--principal` names: the same principal in-process as a
/// server makes of the name, so a receipt made one way reads back the other.
fn principal(name: &str) -> Result<Principal> {
    match name {
        Principal::ANONYMOUS => Ok(Principal::anonymous()),
        name => crate::mcp_cmd::local_principal(name),
    }
}

/// Prints `v` as pretty JSON, or as the command's table.
pub fn print_or_json(v: &Value, json: bool, table: impl Fn(&Value)) -> Result<()> {
    if json {
        println!("{}", serde_json::to_string_pretty(v)?);
    } else {
        table(v);
    }
    Ok(())
}

/// Where an operation runs.
enum Target {
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
    // The server makes `local:<name>` of the header's name; without it the
    // call is anonymous, as `--principal anonymous` (the default) is
    // in-process.
    let mut req = ureq::request(method, &url);
    if let Some(name) = principal.local_name() {
        req = req.set(mosaic::principal::HEADER, name);
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

/// A library error as the command reports it. In-process the caller is
/// the operator, so an unavailable or internal error also says its cause
/// (which a server logs and never sends), with a hint for a database that
/// cannot be reached.
pub fn local_err(e: mosaic::Error) -> anyhow::Error {
    let message = e.body()["error"]["message"]
        .as_str()
        .unwrap_or("")
        .to_string();
    let code = e.code().as_str();
    match &e {
        mosaic::Error::Unavailable(cause) | mosaic::Error::Internal(cause) => {
            let hint = match cause.starts_with("database connection") {
                true => format!(
                    "\n({})",
                    crate::args::connect_hint(
                        cause,
                        "--runtime-database-url or MOSAIC_RUNTIME_DATABASE_URL"
                    )
                ),
                false => String::new(),
            };
            anyhow!("{message} ({code}): {cause}{hint}")
        }
        _ => anyhow!("{message} ({code})"),
    }
}

/// Runs `op` on flat logical arguments, in-process or on the server.
async fn call(t: &Target, p: &Principal, op: Operation, args: Value) -> Result<Value> {
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
