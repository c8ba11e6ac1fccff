//! `mosaic mcp`: the four operations as a Model Context Protocol server, over
//! stdio (what desktop clients launch) or streamable HTTP (`--http ADDR`,
//! endpoint `/mcp`).
//!
//! Nothing here restates the contract: the tool list is the contract's MCP
//! projection ([`mosaic::contract::tools`] with surface `mcp`, the listing
//! `GET /api/tools?surface=mcp` serves), read into the SDK's tool type, and a
//! call runs [`Operation::call`] on the flat arguments, as an AgentCore tool
//! call does. The library validates the arguments.
//!
//! - The principal is fixed for the process: `--principal NAME` serves as
//!   the local principal `local:NAME`; `--anonymous` serves as the anonymous
//!   principal. One of the two is required.
//! - A result is the operation's JSON as structured content, plus a short
//!   text rendering.
//! - A refusal or a bad argument is a tool error (`isError: true`) whose
//!   structured content is the contract's error envelope
//!   `{"error": {"code", "message", "field"?}}` and whose text starts with
//!   the code. Every scope refusal is the same generic `not_found`.
//! - A call the protocol cannot carry (an unknown tool, `arguments` that are
//!   not an object, no `name`) is a JSON-RPC invalid-params error
//!   (-32602); a method the protocol does not define is method-not-found
//!   (-32601).
//! - Logs go to stderr (stdout carries the protocol in stdio mode): one line
//!   per call with the tool, the outcome and the duration, never arguments.
//! - A message is at most [`mosaic::http::MAX_BODY`] (64 KiB), as a body of
//!   the HTTP API: over HTTP a larger POST body is a 413; over stdio a
//!   longer line is dropped unanswered and the session goes on.
//! - Over HTTP the server answers only a `Host` that names this machine or
//!   a name given with `--allowed-host`, refuses (403) a browser `Origin`
//!   that does not, and holds its connections within
//!   [`mosaic::server::Connections`], as `mosaic serve` does.

use anyhow::{bail, Context, Result};
use clap::Args;
use mosaic::operation::Operation;
use mosaic::{contract, Ctx, Error, Principal};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, CustomRequest,
    CustomResult, ErrorCode, Implementation, ListToolsResult, PaginatedRequestParams,
    ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::transport::async_rw::AsyncRwTransport;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::Value;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

/// The streamable HTTP endpoint's path.
pub const HTTP_PATH: &str = "/mcp";

/// Database connections: one client over stdio, a few over HTTP.
const STDIO_POOL: usize = 2;
const HTTP_POOL: usize = 4;

#[derive(Args, Clone)]
pub struct McpArgs {
    /// Serve streamable HTTP on this address (endpoint /mcp), e.g.
    /// 127.0.0.1:8788; without it the server speaks MCP on stdin/stdout.
    #[arg(long, value_name = "ADDR")]
    http: Option<SocketAddr>,
    /// Another name the HTTP server answers to in the `Host` header and
    /// accepts in a browser's `Origin` (repeatable), such as the name other
    /// machines reach it by; it always answers localhost, the loopback
    /// addresses and the address it is bound to.
    #[arg(long = "allowed-host", value_name = "NAME", requires = "http")]
    allowed_hosts: Vec<String>,
    /// The caller every call runs as, served as the local principal
    /// `local:NAME`: searches record it and scoped calls must match it.
    #[arg(long, value_name = "NAME", required_unless_present = "anonymous")]
    principal: Option<String>,
    /// Run every call as the anonymous principal instead.
    #[arg(long, conflicts_with = "principal")]
    anonymous: bool,
    #[command(flatten)]
    runtime: crate::args::RuntimeArgs,
    #[command(flatten)]
    embedder: crate::embedder::EmbedderArgs,
}

/// The principal of a local server process: `local:NAME`, by the one rule
/// every transport applies to local names (`mosaic::principal`).
pub fn local_principal(name: &str) -> Result<Principal> {
    Principal::local(name).map_err(|e| anyhow::anyhow!("--principal: {e}"))
}

pub async fn run(args: McpArgs) -> Result<()> {
    let principal = match (&args.principal, args.anonymous) {
        (_, true) => Principal::anonymous(),
        (Some(name), false) => local_principal(name)?,
        (None, false) => bail!("give --principal NAME, or --anonymous"),
    };
    let pool = if args.http.is_some() {
        HTTP_POOL
    } else {
        STDIO_POOL
    };
    let ctx = args.runtime.ctx(&args.embedder, pool)?;
    let server = McpServer::new(ctx, principal)?;
    match args.http {
        None => serve_stdio(server).await,
        Some(addr) => serve_http(server, addr, &args.allowed_hosts).await,
    }
}

/// The longest line read over stdio: one message of up to
/// [`mosaic::http::MAX_BODY`] bytes and its line ending (`\n` or `\r\n`).
const MAX_LINE: usize = mosaic::http::MAX_BODY + 2;

async fn serve_stdio(server: McpServer) -> Result<()> {
    eprintln!(
        "mosaic mcp: serving MCP on stdio as {}",
        server.principal.as_str()
    );
    let (stdin, stdout) = rmcp::transport::stdio();
    let transport = AsyncRwTransport::new_server(stdin, stdout).with_max_line_length(MAX_LINE);
    let running = server
        .serve(transport)
        .await
        .context("the MCP handshake on stdio failed")?;
    running.waiting().await.context("the MCP server stopped")?;
    Ok(())
}

async fn serve_http(server: McpServer, addr: SocketAddr, allowed_hosts: &[String]) -> Result<()> {
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("cannot listen on {addr}"))?;
    let bound = listener.local_addr()?;
    let principal = server.principal.as_str().to_string();
    if !bound.ip().is_loopback() {
        eprintln!(
            "mosaic mcp: WARNING: listening on {bound}, reachable beyond this machine; every \
             client there acts as {principal} with no authentication. Bind 127.0.0.1 or put an \
             authenticating proxy in front."
        );
    }
    // Host-header checks (DNS rebinding): this machine's names, the address
    // bound and the names listed. A browser's Origin, which it sends with
    // every cross-origin request a page's script makes, must name one of
    // them too.
    let hosts = mosaic::server::allowed_hosts(bound, allowed_hosts);
    let config = StreamableHttpServerConfig::default()
        .with_allowed_origins(allowed_origins(&hosts))
        .enforce_origin_validation()
        .with_allowed_hosts(hosts)
        .with_max_request_body_bytes(mosaic::http::MAX_BODY);
    let stop = config.cancellation_token.clone();
    let service: StreamableHttpService<McpServer, LocalSessionManager> =
        StreamableHttpService::new(move || Ok(server.clone()), Default::default(), config);
    let router = axum::Router::new().nest_service(HTTP_PATH, service);
    // The URL on stdout (the first line), the rest on stderr.
    println!("http://{bound}{HTTP_PATH}");
    eprintln!("mosaic mcp: serving MCP (streamable HTTP) on http://{bound}{HTTP_PATH} as {principal}; stop with Ctrl-C");
    let shutdown = async move {
        crate::serve_cmd::shutdown_signal().await;
        stop.cancel();
    };
    mosaic::server::serve_router(
        listener,
        router,
        shutdown,
        mosaic::server::Connections::DEFAULT,
    )
    .await
    .context("the MCP HTTP server failed")?;
    Ok(())
}

/// The browser origins of `hosts` (names without a port): either scheme,
/// any port.
fn allowed_origins(hosts: &[String]) -> Vec<String> {
    hosts
        .iter()
        .flat_map(|h| {
            let h = match h.parse::<std::net::Ipv6Addr>() {
                Ok(_) => format!("[{h}]"),
                Err(_) => h.clone(),
            };
            [format!("http://{h}:*"), format!("https://{h}:*")]
        })
        .collect()
}

/// The MCP handler: the context, the process's principal and the tools.
#[derive(Clone)]
pub struct McpServer {
    ctx: Ctx,
    principal: Principal,
    tools: Arc<Vec<Tool>>,
}

/// The contract's MCP tool listing as the SDK's tool type.
pub fn contract_tools() -> Result<Vec<Tool>> {
    let listing = contract::tools("mcp").map_err(|e| anyhow::anyhow!("{e}"))?;
    serde_json::from_value(listing["tools"].clone())
        .context("the contract's MCP listing is not a list of MCP tools")
}

impl McpServer {
    pub fn new(ctx: Ctx, principal: Principal) -> Result<Self> {
        Ok(McpServer {
            ctx,
            principal,
            tools: Arc::new(contract_tools()?),
        })
    }
}

impl ServerHandler for McpServer {
    fn get_info(&self) -> ServerConfig {
        let c = contract::contract();
        let implementation = Implementation::new(&c.service.name, env!("CARGO_PKG_VERSION"))
            .with_title(&c.service.title);
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(implementation)
            .with_instructions(INSTRUCTIONS)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tools.as_ref().clone()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let name = request.name.to_string();
        let Some(op) = Operation::from_name(&name) else {
            return Err(ErrorData::invalid_params(
                format!("unknown tool `{}`", mosaic::error::shown_key(&name)),
                None,
            ));
        };
        let args = Value::Object(request.arguments.unwrap_or_default());
        let started = Instant::now();
        // The same request deadline as the HTTP routes and the functions:
        // past it the call's future is dropped, its statement cancelled, and
        // the answer is `unavailable`.
        let deadline = std::time::Duration::from_millis(self.ctx.profile.request_deadline_ms);
        let out = mosaic::db::within(
            deadline,
            "request",
            mosaic::error::catch_panic(op.call(&self.ctx, &self.principal, &args)),
        )
        .await;
        let ms = started.elapsed().as_millis() as u64;
        match &out {
            Ok(_) => tracing::info!(tool = %name, ms, "mcp call"),
            Err(e @ (Error::Internal(_) | Error::Unavailable(_))) => {
                tracing::error!(tool = %name, ms, error = %e, "mcp call failed")
            }
            Err(e) => {
                tracing::info!(tool = %name, ms, code = e.code().as_str(), "mcp call refused")
            }
        }
        Ok(tool_result(&name, out).into())
    }

    /// A request the SDK could not read as any method it knows. For a
    /// method the protocol defines, that means its params have another
    /// shape (`tools/call` with `arguments` that are not an object, or
    /// without a `name`): an invalid-params error (-32602), not the
    /// method-not-found (-32601) the SDK answers by default, which would
    /// tell the client the server lacks the method. The params are not
    /// echoed, and a method's name only cut short and without control or
    /// bidirectional characters.
    async fn on_custom_request(
        &self,
        request: CustomRequest,
        _context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, ErrorData> {
        let method = request.method;
        match method.as_str() {
            "tools/call" => Err(ErrorData::invalid_params(
                "tools/call takes params {\"name\": string, \"arguments\": object}",
                None,
            )),
            m if PROTOCOL_METHODS.contains(&m) => Err(ErrorData::invalid_params(
                format!("the params of {m} do not have the shape the method takes"),
                None,
            )),
            m => Err(ErrorData::new(
                ErrorCode::METHOD_NOT_FOUND,
                format!("unknown method `{}`", mosaic::error::shown_key(m)),
                None,
            )),
        }
    }
}

/// The requests a client may send a server in the MCP specification.
const PROTOCOL_METHODS: &[&str] = &[
    "initialize",
    "ping",
    "tools/list",
    "tools/call",
    "prompts/list",
    "prompts/get",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "resources/subscribe",
    "resources/unsubscribe",
    "logging/setLevel",
    "completion/complete",
];

const INSTRUCTIONS: &str = "Product retrieval over one catalog. Call search_products first; \
its search_event_id is the retrieval_scope_id of get_product_evidence, compare_products and \
explain_retrieval, which only accept products the search granted (granted: true). A refusal is \
the generic not_found error.";

/// The MCP result of an operation's outcome.
pub fn tool_result(name: &str, out: Result<Value, Error>) -> CallToolResult {
    match out {
        Ok(v) => {
            let mut r = CallToolResult::success(vec![ContentBlock::text(render(name, &v))]);
            r.structured_content = Some(v);
            r
        }
        Err(e) => {
            let body = e.body();
            let err = &body["error"];
            let mut text = format!("{}: {}", text(&err["code"]), text(&err["message"]));
            if let Some(field) = err["field"].as_str() {
                text.push_str(&format!(" (field `{field}`)"));
            }
            let mut r = CallToolResult::error(vec![ContentBlock::text(text)]);
            r.structured_content = Some(body);
            r
        }
    }
}

// --------------------------------------------------------------- rendering

fn text(v: &Value) -> &str {
    v.as_str().unwrap_or("")
}

fn items(v: &Value) -> &[Value] {
    v.as_array().map(Vec::as_slice).unwrap_or(&[])
}

/// At most `n` characters of `s`, on one line.
fn clip(s: &str, n: usize) -> String {
    let one_line = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if one_line.chars().count() <= n {
        one_line
    } else {
        let cut: String = one_line.chars().take(n).collect();
        format!("{}…", cut.trim_end())
    }
}

fn price(p: &Value) -> String {
    match p["price_cents"].as_i64() {
        Some(c) => format!(
            "{}.{:02} {}",
            c / 100,
            (c % 100).abs(),
            text(&p["currency"])
        )
        .trim_end()
        .to_string(),
        None => String::new(),
    }
}

/// The short text an agent reads next to the structured result.
pub fn render(name: &str, v: &Value) -> String {
    match name {
        "search_products" => render_search(v),
        "get_product_evidence" => render_evidence(v),
        "compare_products" => render_compare(v),
        "explain_retrieval" => render_explain(v),
        _ => String::new(),
    }
}

fn render_search(v: &Value) -> String {
    let results = items(&v["results"]);
    let granted = results.iter().filter(|r| r["granted"] == true).count();
    let mut s = format!(
        "search_event_id {} (the retrieval_scope_id of the other tools); strategy {}; {} result(s), {} granted.\n",
        text(&v["search_event_id"]),
        text(&v["strategy"]),
        results.len(),
        granted
    );
    for r in results {
        s.push_str(&format!(
            "{}. {} | {} | {} | {} | {}{}\n",
            r["rank"],
            text(&r["product_id"]),
            clip(text(&r["title"]), 80),
            text(&r["brand"]),
            price(r),
            text(&r["availability"]),
            if r["granted"] == true {
                " | granted"
            } else {
                " | not granted"
            }
        ));
    }
    s
}

fn render_evidence(v: &Value) -> String {
    let evidence = items(&v["evidence"]);
    let mut s = format!(
        "{} evidence unit(s) for {}",
        evidence.len(),
        text(&v["product_id"])
    );
    if let Some(intent) = v["intent"].as_str() {
        s.push_str(&format!(" (intent {intent})"));
    }
    s.push_str(":\n");
    for e in evidence {
        let body = e["snippet"].as_str().unwrap_or_else(|| text(&e["text"]));
        s.push_str(&format!(
            "- [{}] {}: {} ({})\n",
            text(&e["kind"]),
            clip(text(&e["title"]), 60),
            clip(body, 200),
            text(&e["source_uri"])
        ));
    }
    s
}

fn render_compare(v: &Value) -> String {
    let products = items(&v["products"]);
    let mut s = format!("{} product(s) compared:\n", products.len());
    for p in products {
        s.push_str(&format!(
            "- {} | {} | {} | {}\n",
            text(&p["product_id"]),
            clip(text(&p["title"]), 80),
            text(&p["brand"]),
            price(p)
        ));
    }
    let keys: Vec<&str> = items(&v["attributes"]["keys"]).iter().map(text).collect();
    if !keys.is_empty() {
        s.push_str(&format!("attributes: {}\n", keys.join(", ")));
    }
    s
}

fn render_explain(v: &Value) -> String {
    let pool = items(&v["pool"]);
    let granted = pool.iter().filter(|c| c["granted"] == true).count();
    let mut s = format!(
        "search event {}: strategy {}, rerank {}; pool of {} candidate(s), {} served, {} granted (limit {}, authorized_limit {}).\n",
        text(&v["search_event_id"]),
        text(&v["strategy"]),
        text(&v["rerank_status"]),
        v["pool_size"],
        v["served_count"],
        granted,
        v["limit"],
        v["authorized_limit"],
    );
    if let Some(q) = v["query_text"].as_str() {
        s.push_str(&format!("query: {}\n", clip(q, 120)));
    }
    for c in pool.iter().take(10) {
        let served = c["served_rank"]
            .as_i64()
            .map_or("not served".to_string(), |r| format!("served {r}"));
        s.push_str(&format!(
            "- pool {} | {} | {} | {}{}\n",
            c["pre_rerank_rank"],
            text(&c["product_id"]),
            served,
            text(&c["match_reason"]),
            if c["granted"] == true {
                " | granted"
            } else {
                ""
            }
        ));
    }
    if pool.len() > 10 {
        s.push_str(&format!(
            "({} more in the structured result)\n",
            pool.len() - 10
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_tools_are_the_contracts_mcp_listing() {
        let served = serde_json::to_value(contract_tools().unwrap()).unwrap();
        assert_eq!(served, contract::tools("mcp").unwrap()["tools"]);
        let names: Vec<String> = contract_tools()
            .unwrap()
            .iter()
            .map(|t| t.name.to_string())
            .collect();
        let ops: Vec<&str> = Operation::ALL.iter().map(|o| o.name()).collect();
        assert_eq!(names, ops);
    }

    #[test]
    fn origins_are_this_machine_s_and_the_listed_names() {
        let hosts = mosaic::server::allowed_hosts(
            "127.0.0.1:8788".parse().unwrap(),
            &["mcp.example".to_string()],
        );
        let origins = allowed_origins(&hosts);
        for want in [
            "http://localhost:*",
            "https://localhost:*",
            "http://127.0.0.1:*",
            "http://[::1]:*",
            "https://mcp.example:*",
        ] {
            assert!(origins.iter().any(|o| o == want), "{want}: {origins:?}");
        }
        assert_eq!(origins.len(), 2 * hosts.len());
    }

    #[test]
    fn local_principals_are_namespaced_and_bounded() {
        assert_eq!(local_principal("alice").unwrap().as_str(), "local:alice");
        assert!(local_principal("").is_err());
        assert!(local_principal("a\nb").is_err());
        let max = mosaic::principal::Part::LocalName.max_chars();
        assert!(local_principal(&"p".repeat(max + 1)).is_err());
        assert!(local_principal(&"p".repeat(max)).is_ok());
    }

    #[test]
    fn errors_are_tool_errors_with_the_contract_envelope() {
        let r = tool_result("get_product_evidence", Err(Error::NotFound));
        assert_eq!(r.is_error, Some(true));
        let v = serde_json::to_value(&r).unwrap();
        assert_eq!(
            v["structuredContent"],
            json!({"error": {"code": "not_found", "message": mosaic::error::NOT_FOUND_MESSAGE}})
        );
        assert_eq!(
            v["content"][0]["text"],
            format!("not_found: {}", mosaic::error::NOT_FOUND_MESSAGE)
        );
        let r = tool_result(
            "search_products",
            Err(Error::invalid("limit", "`limit` must be 1 to 50")),
        );
        let v = serde_json::to_value(&r).unwrap();
        assert_eq!(v["structuredContent"]["error"]["code"], "invalid_argument");
        assert_eq!(v["structuredContent"]["error"]["field"], "limit");
        assert_eq!(v["isError"], true);
    }

    #[test]
    fn results_carry_the_operation_json() {
        let out = json!({"search_event_id": "e", "strategy": "hybrid", "results": [
            {"rank": 1, "product_id": "P-1", "title": "Kettle", "brand": "Acme",
             "price_cents": 1999, "currency": "EUR", "availability": "in_stock", "granted": true}
        ]});
        let r = tool_result("search_products", Ok(out.clone()));
        assert_eq!(r.is_error, Some(false));
        assert_eq!(r.structured_content, Some(out));
        let v = serde_json::to_value(&r).unwrap();
        let text = v["content"][0]["text"].as_str().unwrap();
        assert!(text.contains("search_event_id e"), "{text}");
        assert!(
            text.contains("1. P-1 | Kettle | Acme | 19.99 EUR | in_stock | granted"),
            "{text}"
        );
    }
}
