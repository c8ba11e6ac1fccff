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
//!   The SDK's own events below WARN (which print messages whole) are left
//!   out unless `MOSAIC_LOG` names the `rmcp` target (see `main.rs`).
//! - Every message is checked before the SDK reads it ([`check_message`]),
//!   over both transports. One that is not JSON is answered with the
//!   JSON-RPC parse error (-32700, `id` null); JSON that is not one request,
//!   notification or response (a batch, an `id` that is not a string or an
//!   integer, `params` that are not an object, ...) with invalid-request
//!   (-32600) carrying the message's `id` when it has a string or number
//!   one, null otherwise. A well-formed notification or response the SDK
//!   cannot read is not answered over stdio (JSON-RPC answers neither).
//!   Each refusal is logged on stderr at WARN, one line without the
//!   message's content.
//! - A message is at most [`mosaic::http::MAX_BODY`] (64 KiB), as a body of
//!   the HTTP API: over HTTP a larger POST body is a 413; over stdio a
//!   longer line is dropped unanswered (logged) and the session goes on.
//! - Over stdio one task writes stdout, a line at a time: the SDK's messages
//!   and the answers to refused lines never interleave.
//! - Over HTTP the server answers only a `Host` that is exactly one of this
//!   machine's names or a name given with `--allowed-host`, optionally with
//!   a port (1-65535; an IPv6 address in brackets), refuses (403) a browser
//!   `Origin` that is not `http` or `https` and such a host, answers a POST
//!   body that is not a message with 400 and the JSON-RPC error, and holds
//!   its connections within [`mosaic::server::Connections`], as `mosaic
//!   serve` does. The checks run in front of the SDK ([`guard`]), whose own
//!   checks stay.

use anyhow::{bail, Context, Result};
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::Response;
use clap::Args;
use mosaic::operation::Operation;
use mosaic::{contract, Ctx, Error, Principal};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ClientJsonRpcMessage, ContentBlock,
    CustomRequest, CustomResult, ErrorCode, Implementation, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, ServerJsonRpcMessage, Tool,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService, Transport};
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde::Serialize;
use serde_json::Value;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

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

/// Messages read and checked, waiting for the SDK; lines waiting for stdout.
const INCOMING_QUEUE: usize = 16;
const OUTGOING_QUEUE: usize = 64;

/// Serves MCP over stdin/stdout. Three parts: a reader task that reads
/// stdin a line at a time (at most [`MAX_LINE`] bytes held), checks each
/// line ([`check_message`]) and answers a refused one itself; the SDK, which
/// gets the messages that passed through [`StdioTransport`]; and a writer
/// task, the only one to write stdout, a whole line at a time, for both.
async fn serve_stdio(server: McpServer) -> Result<()> {
    eprintln!(
        "mosaic mcp: serving MCP on stdio as {}",
        server.principal.as_str()
    );
    let (out, lines) = mpsc::channel(OUTGOING_QUEUE);
    let (to_sdk, incoming) = mpsc::channel(INCOMING_QUEUE);
    let writer = tokio::spawn(write_lines(lines, tokio::io::stdout()));
    let reader = tokio::spawn(read_messages(
        BufReader::new(tokio::io::stdin()),
        to_sdk,
        out.clone(),
    ));
    let served = async {
        let running = server
            .serve(StdioTransport { incoming, out })
            .await
            .context("the MCP handshake on stdio failed")?;
        running.waiting().await.context("the MCP server stopped")?;
        anyhow::Ok(())
    }
    .await;
    // The reader has ended at the end of stdin, unless the SDK stopped
    // first; then the writer ends once every line queued is written.
    reader.abort();
    let _ = writer.await;
    served
}

/// The SDK's side of stdio: the messages the reader task let through, and
/// the writer task's queue for its own.
struct StdioTransport {
    incoming: mpsc::Receiver<ClientJsonRpcMessage>,
    out: mpsc::Sender<Vec<u8>>,
}

impl Transport<RoleServer> for StdioTransport {
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: ServerJsonRpcMessage,
    ) -> impl std::future::Future<Output = Result<(), Self::Error>> + Send + 'static {
        let out = self.out.clone();
        let line = serde_json::to_vec(&item);
        async move {
            let mut line = line.map_err(std::io::Error::other)?;
            line.push(b'\n');
            out.send(line).await.map_err(|_| {
                std::io::Error::new(std::io::ErrorKind::BrokenPipe, "stdout is closed")
            })
        }
    }

    async fn receive(&mut self) -> Option<ClientJsonRpcMessage> {
        self.incoming.recv().await
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.incoming.close();
        Ok(())
    }
}

/// Writes each line queued on `lines` whole, and flushes it, until every
/// sender is gone or `out` fails.
async fn write_lines(mut lines: mpsc::Receiver<Vec<u8>>, mut out: impl AsyncWrite + Unpin) {
    while let Some(line) = lines.recv().await {
        let written = async {
            out.write_all(&line).await?;
            out.flush().await
        };
        if let Err(e) = written.await {
            tracing::error!(error = %e, "mcp: cannot write to stdout; the session ends");
            return;
        }
    }
}

/// One line read by [`read_line`].
enum ReadLine {
    /// A whole line, its `\n` included, is in the buffer.
    Line,
    /// A line longer than [`MAX_LINE`] went by; nothing of it was kept.
    TooLong,
    /// The end of the input; `partial` when a last line had no `\n`.
    End { partial: bool },
}

/// Reads the next line into `line` (cleared first) without holding more
/// than [`MAX_LINE`] bytes of it.
async fn read_line(
    input: &mut (impl AsyncBufRead + Unpin),
    line: &mut Vec<u8>,
) -> std::io::Result<ReadLine> {
    line.clear();
    let mut too_long = false;
    loop {
        let available = input.fill_buf().await?;
        if available.is_empty() {
            let partial = too_long || !line.is_empty();
            return Ok(ReadLine::End { partial });
        }
        let end = available.iter().position(|b| *b == b'\n');
        let take = end.map_or(available.len(), |i| i + 1);
        if !too_long {
            if line.len() + take > MAX_LINE {
                too_long = true;
                line.clear();
            } else {
                line.extend_from_slice(&available[..take]);
            }
        }
        input.consume(take);
        if end.is_some() {
            return Ok(if too_long {
                ReadLine::TooLong
            } else {
                ReadLine::Line
            });
        }
    }
}

/// The reader task: each line of `input` is a message, checked before the
/// SDK gets it; a refused one is answered on `out` (the same framing: one
/// JSON object a line) unless it is a notification or a response, and
/// logged, and the session goes on. A blank line is no message.
async fn read_messages(
    mut input: impl AsyncBufRead + Unpin,
    to_sdk: mpsc::Sender<ClientJsonRpcMessage>,
    out: mpsc::Sender<Vec<u8>>,
) {
    let mut line = Vec::new();
    for number in 1u64.. {
        match read_line(&mut input, &mut line).await {
            Ok(ReadLine::Line) => {}
            Ok(ReadLine::TooLong) => {
                too_long(number);
                continue;
            }
            Ok(ReadLine::End { partial }) => {
                if partial {
                    tracing::warn!(
                        line = number,
                        "mcp: dropped a last line without a line ending, unanswered"
                    );
                }
                return;
            }
            Err(e) => {
                tracing::error!(error = %e, "mcp: cannot read stdin; the session ends");
                return;
            }
        }
        let message = line.strip_suffix(b"\n").unwrap_or(&line);
        let message = message.strip_suffix(b"\r").unwrap_or(message);
        if message.len() > mosaic::http::MAX_BODY {
            too_long(number);
            continue;
        }
        // A UTF-8 byte order mark may open a message (RFC 8259 section 8.1).
        let message = message.strip_prefix(UTF8_BOM).unwrap_or(message);
        if message.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match check_message(message) {
            Ok(message) => {
                if to_sdk.send(message).await.is_err() {
                    return;
                }
            }
            Err(refusal) => {
                let answered = !refusal.unanswered;
                tracing::warn!(
                    line = number,
                    code = refusal.code,
                    reason = %refusal.reason,
                    answered,
                    "mcp: refused a message"
                );
                if answered && out.send(refusal.line()).await.is_err() {
                    return;
                }
            }
        }
    }
}

/// Logs a line over the limit, which is dropped unanswered: its `id`, if
/// any, is not read.
fn too_long(number: u64) {
    tracing::warn!(
        line = number,
        max_bytes = mosaic::http::MAX_BODY,
        "mcp: dropped a message longer than the limit, unanswered"
    );
}

const UTF8_BOM: &[u8] = b"\xEF\xBB\xBF";

// ------------------------------------------------------------ the messages

/// JSON-RPC's parse error and invalid-request codes.
const PARSE_ERROR: i32 = -32700;
const INVALID_REQUEST: i32 = -32600;

/// Why a message was refused, and the JSON-RPC error that answers it.
#[derive(Debug)]
struct Refusal {
    /// The message's `id` when it has a string or number one, else null.
    id: Value,
    code: i32,
    /// What was wrong, never the message's content.
    reason: String,
    /// A well-formed notification or response: JSON-RPC answers neither,
    /// so stdio does not (an HTTP POST still gets its 400).
    unanswered: bool,
}

/// A JSON-RPC error response, its members in the specification's order.
#[derive(Serialize)]
struct ErrorResponse<'a> {
    jsonrpc: &'static str,
    id: &'a Value,
    error: ErrorBody<'a>,
}

#[derive(Serialize)]
struct ErrorBody<'a> {
    code: i32,
    message: &'a str,
}

impl Refusal {
    fn parse_error(reason: impl Into<String>) -> Self {
        Refusal {
            id: Value::Null,
            code: PARSE_ERROR,
            reason: reason.into(),
            unanswered: false,
        }
    }

    fn invalid(id: Value, reason: impl Into<String>) -> Self {
        Refusal {
            id,
            code: INVALID_REQUEST,
            reason: reason.into(),
            unanswered: false,
        }
    }

    fn message(&self) -> String {
        let what = match self.code {
            PARSE_ERROR => "Parse error",
            _ => "Invalid request",
        };
        format!("{what}: {}", self.reason)
    }

    /// The error response's JSON.
    fn body(&self) -> Vec<u8> {
        let message = self.message();
        serde_json::to_vec(&ErrorResponse {
            jsonrpc: "2.0",
            id: &self.id,
            error: ErrorBody {
                code: self.code,
                message: &message,
            },
        })
        .expect("an error response serializes")
    }

    /// The error response as a line of stdio.
    fn line(&self) -> Vec<u8> {
        let mut line = self.body();
        line.push(b'\n');
        line
    }
}

/// The `id` an answer to a refused message carries: the message's own when
/// it is a string or a number, null otherwise (JSON-RPC: null when the id
/// cannot be read).
fn answer_id(id: Option<&Value>) -> Value {
    match id {
        Some(id @ (Value::String(_) | Value::Number(_))) => id.clone(),
        _ => Value::Null,
    }
}

/// Whether `id` is one MCP takes: a string, or an integer (the SDK also
/// reads an integral number written with a fraction or an exponent, up to
/// 2^53).
fn is_mcp_id(id: &Value) -> bool {
    match id {
        Value::String(_) => true,
        Value::Number(n) => {
            n.is_i64()
                || n.as_f64()
                    .is_some_and(|f| f.fract() == 0.0 && f.abs() < 9_007_199_254_740_992.0)
        }
        _ => false,
    }
}

/// The top level of a message nested too deeply to read whole: only its
/// `id` (the rest is skipped without nesting limit).
#[derive(serde::Deserialize)]
struct TopLevel {
    id: Option<Value>,
}

/// Checks one message (a stdio line without its ending, or an HTTP POST
/// body) before the SDK reads it: the message the SDK reads, or why it is
/// refused. The checks, in order:
///
/// - UTF-8 and JSON, at any depth, or a parse error (-32700, `id` null);
/// - no deeper than the JSON reader's limit (128 levels), a single object
///   (not a batch), `jsonrpc` "2.0", an `id` (if any) that is a string or
///   an integer, a string `method` with `params` (if any) an object, or
///   else a response (`result` or `error` with an `id`): otherwise
///   invalid-request (-32600) with the `id` when it is a string or number;
/// - then the SDK's own reading: a request it cannot read is
///   invalid-request too.
///
/// A notification or a response is refused unanswered whatever is wrong
/// with it (stdio writes nothing back; an HTTP POST still gets its 400).
fn check_message(bytes: &[u8]) -> Result<ClientJsonRpcMessage, Refusal> {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return Err(Refusal::parse_error("the message is not UTF-8"));
    };
    // Skipping a value checks its syntax without a nesting limit.
    if let Err(e) = serde_json::from_str::<serde::de::IgnoredAny>(text) {
        return Err(Refusal::parse_error(e.to_string()));
    }
    let value: Value = match serde_json::from_str(text) {
        Ok(value) => value,
        Err(_) => {
            // Only an object has an id (a derived struct would read an
            // array's first element as one).
            let id = text
                .trim_start()
                .starts_with('{')
                .then(|| serde_json::from_str::<TopLevel>(text).ok())
                .flatten()
                .and_then(|top| top.id);
            return Err(Refusal::invalid(
                answer_id(id.as_ref()),
                "the message nests deeper than 128 levels",
            ));
        }
    };
    let fields = match &value {
        Value::Object(fields) => fields,
        Value::Array(_) => {
            return Err(Refusal::invalid(
                Value::Null,
                "a batch is not supported: send one message at a time",
            ))
        }
        _ => return Err(Refusal::invalid(Value::Null, "a message is a JSON object")),
    };
    let id = answer_id(fields.get("id"));
    // What the message means to be, before anything else is checked: a
    // notification (a `method` without an `id`) or a response (`result` or
    // `error` without a `method`) is never answered, whatever is wrong with
    // it, so two peers never answer each other's answers.
    let has_method = fields.contains_key("method");
    let unanswered = (has_method && !fields.contains_key("id"))
        || (!has_method && (fields.contains_key("result") || fields.contains_key("error")));
    let refuse = |reason: &str| Refusal {
        unanswered,
        ..Refusal::invalid(id.clone(), reason)
    };
    if fields.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err(refuse("`jsonrpc` must be \"2.0\""));
    }
    if fields.get("id").is_some_and(|i| !is_mcp_id(i)) {
        return Err(refuse("`id` must be a string or an integer"));
    }
    let request = match fields.get("method") {
        Some(Value::String(_)) => {
            if fields.get("params").is_some_and(|p| !p.is_object()) {
                return Err(refuse("`params` must be an object"));
            }
            fields.contains_key("id")
        }
        Some(_) => return Err(refuse("`method` must be a string")),
        None if fields.contains_key("id")
            && (fields.contains_key("result") || fields.contains_key("error")) =>
        {
            false
        }
        None => {
            return Err(Refusal::invalid(
                id,
                "a message is a request (`method` and `id`), a notification (`method`) \
                 or a response (`id` and `result` or `error`)",
            ))
        }
    };
    serde_json::from_str::<ClientJsonRpcMessage>(text).map_err(|_| Refusal {
        unanswered: !request,
        ..Refusal::invalid(
            if request { id } else { Value::Null },
            "the message does not have the shape of an MCP message",
        )
    })
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
        .with_allowed_hosts(hosts.clone())
        .with_max_request_body_bytes(mosaic::http::MAX_BODY);
    let stop = config.cancellation_token.clone();
    let service: StreamableHttpService<McpServer, LocalSessionManager> =
        StreamableHttpService::new(move || Ok(server.clone()), Default::default(), config);
    // The guard runs first, on every request; the SDK's checks stay.
    let router = axum::Router::new()
        .nest_service(HTTP_PATH, service)
        .layer(axum::middleware::from_fn_with_state(Arc::new(hosts), guard));
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

// ------------------------------------------------------------ the HTTP guard

/// The SDK's answer to a `Host` it does not serve, which the guard gives too.
const HOST_REFUSED: &str = "Forbidden: Host header is not allowed";
/// The SDK's answer to an `Origin` it does not serve, likewise.
const ORIGIN_REFUSED: &str = "Forbidden: Origin header is not allowed";

/// In front of the SDK's service, on every request: the `Host` must be
/// exactly one of `hosts` (and so must a request target in absolute form),
/// and an `Origin` must be `http` or `https` and such a host, or the answer
/// is the SDK's own 403. Then a POST the SDK would read the body of
/// (`Accept` naming JSON and event streams, a JSON `Content-Type`) has its
/// body read here, up to the limit, and checked ([`check_message`]): a
/// refused one is answered with 400 and the JSON-RPC error; any other goes
/// on to the SDK with the same body (one over the limit cut one byte past
/// it, which the SDK answers with its 413). Everything else goes on as it
/// came.
async fn guard(State(hosts): State<Arc<Vec<String>>>, req: Request, next: Next) -> Response {
    let (parts, body) = req.into_parts();
    if !mosaic::server::names_allowed_host(&parts.headers, &parts.uri, &hosts) {
        let host = parts.headers.get(header::HOST).map(shown_header);
        tracing::warn!(
            host,
            "mcp: refused a request whose Host names nothing served"
        );
        return forbidden(HOST_REFUSED);
    }
    if !origin_allowed(&parts.headers, &hosts) {
        let origin = parts.headers.get(header::ORIGIN).map(shown_header);
        tracing::warn!(origin, "mcp: refused a request from a foreign Origin");
        return forbidden(ORIGIN_REFUSED);
    }
    if parts.method != Method::POST || !reads_the_body(&parts.headers) {
        return next.run(Request::from_parts(parts, body)).await;
    }
    // One byte over the limit is enough for the SDK's own 413.
    let bytes = match mosaic::server::read_capped(body, mosaic::http::MAX_BODY + 1).await {
        Ok(bytes) => bytes,
        Err(e) => {
            tracing::warn!(error = %e, "mcp: cannot read a request body");
            return plain(StatusCode::BAD_REQUEST, "Bad Request: cannot read the body");
        }
    };
    if bytes.len() <= mosaic::http::MAX_BODY {
        if let Err(refusal) = check_message(&bytes) {
            tracing::warn!(
                code = refusal.code,
                reason = %refusal.reason,
                "mcp: refused a POST body with 400"
            );
            return Response::builder()
                .status(StatusCode::BAD_REQUEST)
                .header(header::CONTENT_TYPE, "application/json")
                .body(Body::from(refusal.body()))
                .expect("a valid response");
        }
    }
    next.run(Request::from_parts(parts, Body::from(bytes)))
        .await
}

fn forbidden(message: &'static str) -> Response {
    plain(StatusCode::FORBIDDEN, message)
}

/// A response with a plain text body, as the SDK gives its refusals.
fn plain(status: StatusCode, message: &'static str) -> Response {
    Response::builder()
        .status(status)
        .body(Body::from(message))
        .expect("a valid response")
}

/// A header's value as a log shows it: cut short, without control or
/// bidirectional characters.
fn shown_header(value: &HeaderValue) -> String {
    mosaic::error::shown_key(&String::from_utf8_lossy(value.as_bytes()))
}

/// Whether the request has no `Origin`, or one that is exactly `http://` or
/// `https://` (either case) and an authority naming one of `hosts`.
fn origin_allowed(headers: &HeaderMap, hosts: &[String]) -> bool {
    let mut values = headers.get_all(header::ORIGIN).iter();
    let value = match (values.next(), values.next()) {
        (None, _) => return true,
        (Some(value), None) => value,
        _ => return false,
    };
    let Some((scheme, authority)) = value.to_str().ok().and_then(|v| v.split_once("://")) else {
        return false;
    };
    (scheme.eq_ignore_ascii_case("http") || scheme.eq_ignore_ascii_case("https"))
        && names_a_host(authority, hosts)
}

/// Whether `authority` names one of `hosts`, as the local server reads a
/// `Host` ([`mosaic::server::host_name`]): a name or an IPv6 address in
/// brackets, optionally followed by `:` and a port from 1 to 65535, and
/// nothing else.
fn names_a_host(authority: &str, hosts: &[String]) -> bool {
    mosaic::server::names(&mosaic::server::host_name(authority), hosts)
}

/// Whether the SDK would read a POST's body, by its own header checks: an
/// `Accept` naming both `application/json` and `text/event-stream` (a
/// media range weighted `q=0` names nothing), and a `Content-Type` whose
/// media type is `application/json`. Otherwise it answers 406 or 415, and
/// the guard leaves the request to it.
fn reads_the_body(headers: &HeaderMap) -> bool {
    let mut json = false;
    let mut events = false;
    for value in headers.get_all(header::ACCEPT) {
        let Ok(value) = value.to_str() else { continue };
        for range in split_unquoted(value, ',') {
            let mut params = split_unquoted(range, ';');
            let essence = params.next().unwrap_or("").trim();
            let weighted_out = params.any(|p| {
                p.split_once('=').is_some_and(|(name, q)| {
                    name.trim().eq_ignore_ascii_case("q") && !quality_is_acceptable(q.trim())
                })
            });
            if !weighted_out {
                json |= essence.eq_ignore_ascii_case("application/json");
                events |= essence.eq_ignore_ascii_case("text/event-stream");
            }
        }
    }
    let json_body = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            let essence = v.split_once(';').map_or(v, |(essence, _)| essence);
            essence.trim().eq_ignore_ascii_case("application/json")
        });
    json && events && json_body
}

/// `value` split at `delimiter` outside quoted strings (as the SDK splits
/// `Accept`).
fn split_unquoted(value: &str, delimiter: char) -> impl Iterator<Item = &str> {
    let mut quoted = false;
    let mut escaped = false;
    value.split(move |c| {
        if escaped {
            escaped = false;
        } else if quoted && c == '\\' {
            escaped = true;
        } else if c == '"' {
            quoted = !quoted;
        } else if !quoted && c == delimiter {
            return true;
        }
        false
    })
}

/// Whether a `q` weight keeps its media range (as the SDK reads it): only
/// an explicit zero (`0`, `0.`, `0.0`...) excludes it; a weight that is not
/// a valid one is ignored.
fn quality_is_acceptable(q: &str) -> bool {
    let (whole, fraction) = q.split_once('.').unwrap_or((q, ""));
    if fraction.len() > 3 || !fraction.bytes().all(|d| d.is_ascii_digit()) {
        return true;
    }
    whole != "0" || fraction.bytes().any(|d| d != b'0')
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

    /// The code and id of the answer to `message`, or None if it passes.
    fn refused(message: &str) -> Option<(i32, Value, bool)> {
        check_message(message.as_bytes())
            .err()
            .map(|r| (r.code, r.id, r.unanswered))
    }

    #[test]
    fn messages_are_checked_before_the_sdk_reads_them() {
        for ok in [
            r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":"a","method":"tools/list","params":{}}"#,
            r#"{"jsonrpc":"2.0","id":1e2,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{}}"#,
            // The SDK's own refusals come later: invalid params.
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":5}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"no/such","params":{}}"#,
        ] {
            assert_eq!(refused(ok), None, "{ok}");
        }
        let deep = "[".repeat(20_000) + &"]".repeat(20_000);
        for (bad, code, id) in [
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"ping""#.to_string(),
                PARSE_ERROR,
                json!(null),
            ),
            (String::new(), PARSE_ERROR, json!(null)),
            (r#"{"id":1} {"id":2}"#.to_string(), PARSE_ERROR, json!(null)),
            (r#"{"id":1,}"#.to_string(), PARSE_ERROR, json!(null)),
            ("5".to_string(), INVALID_REQUEST, json!(null)),
            ("[]".to_string(), INVALID_REQUEST, json!(null)),
            (
                r#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#.to_string(),
                INVALID_REQUEST,
                json!(null),
            ),
            (deep.clone(), INVALID_REQUEST, json!(null)),
            (format!(r#"["a",{deep}]"#), INVALID_REQUEST, json!(null)),
            (
                format!(r#"{{"id":"deep","x":{deep}}}"#),
                INVALID_REQUEST,
                json!("deep"),
            ),
            (format!(r#"{{"id":{deep}}}"#), INVALID_REQUEST, json!(null)),
            (
                r#"{"id":1,"method":"ping"}"#.to_string(),
                INVALID_REQUEST,
                json!(1),
            ),
            (
                r#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#.to_string(),
                INVALID_REQUEST,
                json!(1.5),
            ),
            (
                r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#.to_string(),
                INVALID_REQUEST,
                json!(null),
            ),
            (
                r#"{"jsonrpc":"2.0","id":[1],"method":"ping"}"#.to_string(),
                INVALID_REQUEST,
                json!(null),
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"method":5}"#.to_string(),
                INVALID_REQUEST,
                json!(1),
            ),
            (
                r#"{"jsonrpc":"2.0","id":"x","method":"ping","params":[]}"#.to_string(),
                INVALID_REQUEST,
                json!("x"),
            ),
            (
                r#"{"jsonrpc":"2.0","id":3}"#.to_string(),
                INVALID_REQUEST,
                json!(3),
            ),
        ] {
            let got = refused(&bad).unwrap_or_else(|| panic!("passed: {bad:.60}"));
            assert_eq!((got.0, got.1, got.2), (code, id, false), "{bad:.60}");
        }
        // A notification or a response is never answered, whatever is
        // wrong with it: two peers would answer each other's answers.
        for bad in [
            r#"{"jsonrpc":"2.0","method":"ping","params":5}"#,
            r#"{"jsonrpc":"1.0","method":"notifications/initialized"}"#,
            r#"{"jsonrpc":"2.0","method":5}"#,
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}}"#,
            r#"{"jsonrpc":"2.0","id":[1],"result":{}}"#,
            r#"{"jsonrpc":"1.0","id":1,"result":{}}"#,
        ] {
            let got = refused(bad).unwrap_or_else(|| panic!("passed: {bad}"));
            assert_eq!((got.0, got.2), (INVALID_REQUEST, true), "{bad}");
        }
        assert_eq!(
            check_message(b"{\"id\":\"\xff\"}").unwrap_err().code,
            PARSE_ERROR
        );
        // The answer: JSON-RPC's error response, the id null when unread.
        let r = check_message(b"{").unwrap_err();
        let answer: Value = serde_json::from_slice(&r.line()).unwrap();
        assert_eq!(answer["jsonrpc"], "2.0");
        assert_eq!(answer["id"], Value::Null);
        assert!(answer.as_object().unwrap().contains_key("id"));
        assert_eq!(answer["error"]["code"], PARSE_ERROR);
        assert!(answer["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("Parse error: "));
        assert!(r.line().ends_with(b"}\n"));
    }

    #[tokio::test]
    async fn stdio_lines_are_read_within_the_limit_and_refusals_answered() {
        let mut input = Vec::new();
        let ping = |id: u32| format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#);
        input.extend_from_slice(format!("{}\r\n", ping(1)).as_bytes());
        input.extend_from_slice(b"\n  \r\n");
        input.extend_from_slice(UTF8_BOM);
        input.extend_from_slice(format!("{}\n", ping(2)).as_bytes());
        // Over the limit, whatever it holds: dropped unanswered.
        let mut long = ping(3).into_bytes();
        long.resize(mosaic::http::MAX_BODY + 1, b' ');
        input.extend_from_slice(&long);
        input.push(b'\n');
        let mut longer = vec![b'{'; 3 * MAX_LINE];
        longer.push(b'\n');
        input.extend_from_slice(&longer);
        // At the limit: read.
        let mut at_limit = ping(4).into_bytes();
        at_limit.resize(mosaic::http::MAX_BODY, b' ');
        input.extend_from_slice(&at_limit);
        input.extend_from_slice(b"\r\n");
        input.extend_from_slice(b"{\"jsonrpc\"\n");
        input.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":5,\"error\":{\"code\":\"x\"}}\n");
        input.extend_from_slice(format!("{}\n", ping(6)).as_bytes());
        // A last line without its ending: dropped.
        input.extend_from_slice(ping(7).as_bytes());

        let (to_sdk, mut passed) = mpsc::channel(64);
        let (out, mut answers) = mpsc::channel(64);
        read_messages(input.as_slice(), to_sdk, out).await;
        let mut ids = Vec::new();
        while let Some(m) = passed.recv().await {
            ids.push(serde_json::to_value(&m).unwrap()["id"].clone());
        }
        assert_eq!(ids, [json!(1), json!(2), json!(4), json!(6)]);
        let answer = answers.recv().await.unwrap();
        assert!(answer.ends_with(b"\n"));
        let answer: Value = serde_json::from_slice(&answer).unwrap();
        assert_eq!(answer["error"]["code"], PARSE_ERROR);
        assert_eq!(answer["id"], Value::Null);
        // The unreadable response is not answered.
        assert!(answers.recv().await.is_none());
    }

    #[test]
    fn a_host_is_exactly_a_served_name_and_a_port() {
        let hosts = mosaic::server::allowed_hosts(
            "127.0.0.1:8788".parse().unwrap(),
            &["MCP.Example".to_string()],
        );
        for ok in [
            "localhost",
            "LOCALHOST:8788",
            "127.0.0.1:1",
            "127.0.0.1:65535",
            "[::1]",
            "[::1]:8788",
            "mcp.example",
            "mcp.example:80",
        ] {
            assert!(names_a_host(ok, &hosts), "{ok}");
        }
        for bad in [
            "",
            ":80",
            "::1",
            "[::1",
            "[::1]evil.example",
            "[::1]:x",
            "[::1]:",
            "[::1]]",
            "[localhost]",
            "[::2]",
            "localhost:",
            "localhost:0",
            "localhost:65536",
            "localhost:notaport",
            "localhost:+80",
            "localhost:80:80",
            "localhost: 80",
            "user@localhost",
            "localhost/",
            "localhost.",
            "evil.example",
            "mcp.example.evil",
        ] {
            assert!(!names_a_host(bad, &hosts), "{bad}");
        }
    }

    #[test]
    fn the_guard_reads_a_body_only_where_the_sdk_would() {
        let headers = |pairs: &[(&str, &str)]| {
            let mut h = HeaderMap::new();
            for (n, v) in pairs {
                h.append(
                    axum::http::HeaderName::from_bytes(n.as_bytes()).unwrap(),
                    HeaderValue::from_str(v).unwrap(),
                );
            }
            h
        };
        let json = ("content-type", "application/json; charset=utf-8");
        for (accept, reads) in [
            ("application/json, text/event-stream", true),
            ("text/event-stream;q=0.5, application/json;q=1", true),
            ("application/json, text/event-stream;q=0", false),
            ("application/json, text/event-stream;q=0.000", false),
            ("application/json", false),
            ("*/*", false),
            (r#"application/json;p="a, text/event-stream""#, false),
        ] {
            assert_eq!(
                reads_the_body(&headers(&[("accept", accept), json])),
                reads,
                "{accept}"
            );
        }
        let both = ("accept", "application/json, text/event-stream");
        assert!(!reads_the_body(&headers(&[
            both,
            ("content-type", "text/plain")
        ])));
        assert!(!reads_the_body(&headers(&[both])));
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
