//! The AWS Lambda adapter the four functions share (feature `lambda`).
//!
//! Each function binary is `run(Operation::X)`: it builds the [`Ctx`] once per
//! container from the environment and then serves invocations one at a time
//! until the Lambda Runtime API goes away. What an invocation is, is decided
//! only by what the platform sets, never by the shape of the event body:
//!
//! * **AgentCore Gateway Lambda target** — exactly when the client context
//!   carries the gateway's tool name, `custom.bedrockAgentCoreToolName` =
//!   `<target>___<tool>` (split at the first `___`). The event is the flat
//!   tool-argument object and nothing else: an argument object that looks
//!   like an API Gateway event is just arguments, refused as unknown fields.
//!   A tool name of another operation is an `invalid_argument` error.
//! * **API Gateway HTTP API, payload 2.0** — only without a tool name, and
//!   only for the v2 envelope (`version` `"2.0"` and a `requestContext.http`
//!   object). The raw path (`rawPath`, stage prefix included unless the
//!   stage is `$default`), the raw query string and the body (base64-decoded
//!   when `isBase64Encoded`) go to the shared router [`http::handle`], and
//!   its response comes back as an API Gateway proxy result `{statusCode,
//!   headers, body, isBase64Encoded}`. Status codes and error envelopes are
//!   exactly those of `mosaic serve`.
//! * **Direct invocation** — anything else (`sam local invoke`, `aws lambda
//!   invoke` without a context): the function runs its own operation on the
//!   event as flat arguments, as the anonymous principal when anonymous
//!   calls are enabled, else `unauthenticated`. Nothing in a direct
//!   invocation can name a principal.
//!
//! AgentCore and direct invocations answer with the operation's output
//! object. Their errors are reported to the Runtime API as **function
//! errors** (`errorType` = the stable code, `errorMessage` = the error
//! envelope `{"error": {"code", "message", "field"?}}` as JSON text): an
//! AgentCore gateway turns a Lambda target's function error into an MCP
//! tool result with `isError: true` (with the message in `_meta.debug` when
//! the gateway's `exceptionLevel` is `DEBUG`; AgentCore developer guide,
//! *Debugging your gateway*), whereas an ordinary response becomes content
//! with `isError: false` — a refusal must not read as a result.
//!
//! # Why this module drives the Runtime API itself
//!
//! `lambda_runtime` 1.5 builds its `Context` — including a typed
//! `ClientContext` whose `custom` is a map of *strings* — before any handler
//! or layer runs, and ends its whole loop when that fails. AgentCore sends
//! exactly such contexts: `custom.bedrockAgentCorePropagatedHeaders` is an
//! object, and `"custom": null` or `"client": null` fail the same way. One
//! such invocation would kill the container and leave the call unanswered.
//! So the loop here uses `lambda_runtime_api_client` (the runtime crate's own
//! HTTP client) to fetch each invocation, reads the raw event and the raw
//! client-context header, parses the context as loose JSON, and posts the
//! response. No context shape can stop the loop; a context that is not JSON
//! at all is treated as absent. The identity interceptor
//! ([`crate::interceptor`]) runs on the same loop ([`serve`]).
//!
//! # Principal
//!
//! Namespaced as in [`crate::principal`]:
//!
//! * API Gateway: `jwt:<iss>#<sub>` from `requestContext.authorizer.jwt.claims`
//!   (JWT authorizer), else `iam:<userArn>` from
//!   `requestContext.authorizer.iam` (IAM). API Gateway writes these; only
//!   the HTTP API (and the AgentCore gateway) may invoke the functions by
//!   their resource policies, and no other principal in the account should
//!   hold `lambda:InvokeFunction` on them.
//! * AgentCore: the namespaced principal in the propagated header
//!   [`principal::HEADER`], accepted only with a valid, unexpired proof in
//!   [`principal::PROOF_HEADER`] for that principal and this tool name,
//!   made by the identity interceptor with the shared key
//!   ([`principal::proof`]). Without a principal header the call is
//!   anonymous where allowed; a principal without a valid proof is always
//!   `unauthenticated` (401), and no operation runs.
//! * Otherwise the anonymous principal, only when `MOSAIC_ALLOW_ANONYMOUS` is
//!   `true`; else the call is refused with `unauthenticated` (401).
//!
//! # Database
//!
//! One pooled connection per container, reused across invocations. Every
//! statement runs under the profile's `statement_timeout_ms`, and every
//! operation, on either event kind, under its `request_deadline_ms`: past it
//! the answer is `unavailable` (503), and the statement in flight is
//! cancelled, over the same TLS as the connection, and its connection
//! closed ([`crate::db::Conn`]). The connection is opened in the background
//! while the first event is awaited. A connection the server or a proxy
//! dropped is noticed on the next checkout and replaced; if an operation
//! fails as unavailable before any bound stopped it and its connection turns
//! out to have been replaced, the operation runs once more on the new
//! connection before the 503 stands. Every invocation is also bounded by the
//! invocation deadline (less a small margin).
//!
//! # Configuration
//!
//! The settings and their defaults are [`crate::config`]'s; the functions
//! add one variable:
//!
//! | Variable | Meaning |
//! |---|---|
//! | `RUST_LOG` | Log filter (default `info`); logs are JSON lines on stdout. |
//!
//! The four function binaries are built with the `aws` feature, so one
//! binary serves both the local emulator tests (`MOSAIC_DATABASE_URL`,
//! hashing embedder) and AWS (RDS Proxy, Bedrock). A Bedrock embedder's
//! dimension is checked against the database column at start-up.
//!
//! Logs carry the request id, operation, event kind, status and duration of
//! every invocation; never arguments or query text.

pub use crate::config::{
    build_context, EmbedderSetting, ProofKeySetting, RerankerSetting, Settings,
};
use crate::context::{Ctx, Principal};
use crate::error::{Code, Error};
use crate::http::{self as router, HttpRequest, HttpResponse};
pub use crate::operation::Operation;
use crate::principal::{self, proof};
use base64::Engine as _;
use http_body_util::BodyExt;
use lambda_runtime_api_client::body::Body;
use lambda_runtime_api_client::{build_request, PooledClient};
use serde_json::{json, Map, Value};
use std::future::Future;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// The error type of [`run`] (`lambda_runtime::Error`, a boxed error).
pub type BoxError = lambda_runtime::Error;

// ---------------------------------------------------------------- settings

/// The client-context key of the AgentCore tool name.
pub const TOOL_NAME_KEY: &str = "bedrockAgentCoreToolName";
/// The client-context key of the headers an AgentCore gateway propagates.
pub const PROPAGATED_HEADERS_KEY: &str = "bedrockAgentCorePropagatedHeaders";
/// The separator between the gateway target and the tool in a tool name.
pub const TOOL_SEPARATOR: &str = "___";

/// Time kept back from the invocation deadline to post the answer.
const DEADLINE_MARGIN: Duration = Duration::from_millis(250);
/// The budget of an invocation that carries no deadline.
const DEFAULT_BUDGET: Duration = Duration::from_secs(30);
/// The least budget an invocation gets, however close its deadline.
const MIN_BUDGET: Duration = Duration::from_millis(100);

// ------------------------------------------------------------------ the loop

/// Serves `op` until the Runtime API goes away. Reads the environment and
/// builds the context once; a configuration error is reported to the Runtime
/// API as an init error and returned.
pub async fn run(op: Operation) -> Result<(), lambda_runtime::Error> {
    serve(op.name(), async move {
        let settings = Settings::from_env()?;
        let proof_key = settings.proof_key.load().await?;
        let ctx = build_context(&settings, 1).await?;
        let handler = Handler {
            op,
            ctx,
            settings,
            proof_key,
        };
        tracing::info!(
            operation = op.name(),
            anonymous_allowed = handler.settings.allow_anonymous,
            agentcore_principals = handler.proof_key.is_some(),
            embedder = handler.ctx.embedder.as_ref().map(|e| e.model_id()),
            "ready"
        );
        if handler.proof_key.is_none() {
            tracing::warn!(
                "no principal proof key (MOSAIC_PRINCIPAL_PROOF_SECRET_ARN or \
                 MOSAIC_PRINCIPAL_PROOF_KEY): every AgentCore principal is refused"
            );
        }
        // Open the connections (the writer's, and the read pool's when
        // there is one) while the first event is awaited.
        let reader = handler.ctx.reader.as_ref().map(|r| r.pool.clone());
        for pool in std::iter::once(handler.ctx.pool.clone()).chain(reader) {
            tokio::spawn(async move {
                if let Err(e) = pool.get().await {
                    tracing::warn!(error = %e, "database warm-up failed; retried on the first invocation");
                }
            });
        }
        Ok(handler)
    })
    .await
}

/// What an invocation answers: a response, or a function error.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// `POST /invocation/{id}/response` with this JSON body.
    Response(Value),
    /// `POST /invocation/{id}/error`: `{"errorType", "errorMessage"}`.
    Failure {
        error_type: String,
        error_message: String,
    },
}

impl Reply {
    /// An operation error over AgentCore or a direct invocation: a function
    /// error whose type is the stable code and whose message is the error
    /// envelope as JSON text.
    pub fn error(e: &Error) -> Reply {
        Reply::Failure {
            error_type: e.code().as_str().to_string(),
            error_message: e.body().to_string(),
        }
    }
}

/// One function's invocation handler, for [`serve`].
#[async_trait::async_trait]
pub trait Invoke: Send + Sync {
    /// Answers one invocation. Never fails.
    async fn invoke(&self, inv: &Invocation) -> Reply;
}

/// The Runtime API loop every binary runs: `init` once (its error is
/// reported as an init error and returned), then one invocation after the
/// other until the Runtime API goes away.
pub async fn serve<H: Invoke>(
    name: &str,
    init: impl Future<Output = Result<H, String>>,
) -> Result<(), lambda_runtime::Error> {
    init_tracing();
    let api = std::env::var("AWS_LAMBDA_RUNTIME_API").map_err(|_| {
        "AWS_LAMBDA_RUNTIME_API is not set: this binary runs inside AWS Lambda (or `sam local \
         invoke`); use `mosaic serve` for a local HTTP API"
            .to_string()
    })?;
    let uri: http::Uri = api
        .parse()
        .map_err(|e| format!("AWS_LAMBDA_RUNTIME_API={api:?} is not a host:port: {e}"))?;
    let client = PooledClient::builder().with_endpoint(uri).build();

    let handler = match init.await {
        Ok(h) => h,
        Err(message) => {
            tracing::error!(function = name, error = %message, "init failed");
            post_init_error(&client, &message).await;
            return Err(message.into());
        }
    };
    loop {
        let Some(invocation) = next_invocation(&client).await? else {
            continue;
        };
        let reply = handler.invoke(&invocation).await;
        post_reply(&client, &invocation.request_id, reply).await;
    }
}

/// JSON log lines on stdout, filtered by `RUST_LOG` (default `info`).
fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .json()
        .flatten_event(true)
        .with_current_span(false)
        .with_span_list(false)
        .with_target(false)
        .with_ansi(false)
        .with_env_filter(filter)
        .try_init();
}

/// One invocation as the Runtime API handed it over.
#[derive(Debug, Clone)]
pub struct Invocation {
    pub request_id: String,
    /// `Lambda-Runtime-Deadline-Ms`: the deadline in Unix milliseconds.
    pub deadline_ms: Option<u64>,
    /// `Lambda-Runtime-Client-Context`, raw (JSON when well formed).
    pub client_context: Option<String>,
    pub event: bytes::Bytes,
}

const NEXT: &str = "/2018-06-01/runtime/invocation/next";

/// Long-polls the next invocation. `Ok(None)` for a response that carries
/// no request id (nothing can be answered); `Err` when the Runtime API is
/// unreachable, which ends the container like `lambda_runtime` does.
async fn next_invocation(
    client: &PooledClient,
) -> Result<Option<Invocation>, lambda_runtime::Error> {
    let req = build_request()
        .method("GET")
        .uri(NEXT)
        .body(Body::empty())?;
    let resp = client.call(req).await?;
    let (parts, body) = resp.into_parts();
    let event = body.collect().await?.to_bytes();
    if !parts.status.is_success() {
        return Err(format!("the Runtime API answered {} to {NEXT}", parts.status).into());
    }
    let header = |name: &str| {
        parts
            .headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    };
    let Some(request_id) = header("lambda-runtime-aws-request-id").filter(|s| !s.is_empty()) else {
        tracing::error!("an invocation without Lambda-Runtime-Aws-Request-Id was skipped");
        return Ok(None);
    };
    if let Some(trace) = header("lambda-runtime-trace-id") {
        // X-Ray propagation for the AWS SDK, as lambda_runtime does.
        std::env::set_var("_X_AMZN_TRACE_ID", trace);
    } else {
        std::env::remove_var("_X_AMZN_TRACE_ID");
    }
    let client_context = match parts.headers.get("lambda-runtime-client-context") {
        None => None,
        // UTF-8, not only visible ASCII: propagated values may hold any text.
        Some(v) => match std::str::from_utf8(v.as_bytes()) {
            Ok(s) => Some(s.to_string()),
            Err(_) => {
                tracing::warn!(request_id, "client context is not UTF-8; ignored");
                None
            }
        },
    };
    Ok(Some(Invocation {
        deadline_ms: header("lambda-runtime-deadline-ms").and_then(|s| s.trim().parse().ok()),
        request_id,
        client_context,
        event,
    }))
}

async fn post_reply(client: &PooledClient, request_id: &str, reply: Reply) {
    let (what, body, error_type) = match reply {
        Reply::Response(v) => ("response", v, None),
        Reply::Failure {
            error_type,
            error_message,
        } => (
            "error",
            json!({"errorType": error_type, "errorMessage": error_message}),
            Some(error_type),
        ),
    };
    let uri = format!("/2018-06-01/runtime/invocation/{request_id}/{what}");
    let body = serde_json::to_vec(&body).unwrap_or_else(|_| b"{}".to_vec());
    let sent = async {
        let mut req = build_request()
            .method("POST")
            .uri(uri)
            .header("content-type", "application/json");
        if let Some(t) = &error_type {
            req = req.header("lambda-runtime-function-error-type", t.as_str());
        }
        let resp = client.call(req.body(Body::from(body))?).await?;
        let status = resp.status();
        let detail = resp.into_body().collect().await?.to_bytes();
        if !status.is_success() {
            return Err::<(), lambda_runtime::Error>(
                format!(
                    "the Runtime API answered {status}: {}",
                    String::from_utf8_lossy(&detail)
                )
                .into(),
            );
        }
        Ok(())
    };
    if let Err(e) = sent.await {
        tracing::error!(request_id, error = %e, "posting the answer failed");
    }
}

async fn post_init_error(client: &PooledClient, message: &str) {
    let diagnostic = lambda_runtime::Diagnostic {
        error_type: "Runtime.ConfigurationError".to_string(),
        error_message: message.to_string(),
    };
    let sent = async {
        let req = build_request()
            .method("POST")
            .uri("/2018-06-01/runtime/init/error")
            .header("content-type", "application/json")
            .header(
                "lambda-runtime-function-error-type",
                "Runtime.ConfigurationError",
            )
            .body(Body::from(serde_json::to_vec(&diagnostic)?))?;
        client.call(req).await?;
        Ok::<(), lambda_runtime::Error>(())
    };
    if let Err(e) = sent.await {
        tracing::error!(error = %e, "reporting the init error failed");
    }
}

// ------------------------------------------------------------ one invocation

/// The invocation kinds a function tells apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventKind {
    ApiGatewayV2,
    AgentCore,
    Direct,
}

impl EventKind {
    pub fn as_str(self) -> &'static str {
        match self {
            EventKind::ApiGatewayV2 => "apigw_v2",
            EventKind::AgentCore => "agentcore",
            EventKind::Direct => "direct",
        }
    }

    /// AgentCore exactly when the client context carries the gateway's tool
    /// name (present and not null); else API Gateway for the v2 envelope
    /// (`version` `"2.0"` and a `requestContext.http` object); else a direct
    /// invocation. An event body alone never makes an AgentCore call an API
    /// Gateway one.
    pub fn of(context: &AgentCoreContext, event: Option<&Value>) -> EventKind {
        if context.tool_name.is_some() {
            return EventKind::AgentCore;
        }
        let Some(event) = event else {
            return EventKind::Direct;
        };
        let http = event
            .pointer("/requestContext/http")
            .is_some_and(Value::is_object);
        if http && event.get("version").and_then(Value::as_str) == Some("2.0") {
            EventKind::ApiGatewayV2
        } else {
            EventKind::Direct
        }
    }
}

/// What the client context of an invocation says, read loosely.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AgentCoreContext {
    /// `custom.bedrockAgentCoreToolName`: `None` when absent or null,
    /// `Some(Err(()))` when present but not a string.
    pub tool_name: Option<Result<String, ()>>,
    /// The propagated [`principal::HEADER`], when present (a value that is
    /// not one string reads as empty, which no check accepts).
    pub principal: Option<String>,
    /// The propagated [`principal::PROOF_HEADER`], likewise.
    pub proof: Option<String>,
}

impl AgentCoreContext {
    /// Reads a raw client context. Never fails: anything that is not the
    /// expected shape (not JSON, `custom` null or not an object, values of
    /// any type) reads as absent. Keys match case-insensitively, since the
    /// gateway's documentation spells them both `bedrockAgentCore...` and
    /// `bedrockagentcore...`.
    pub fn parse(raw: Option<&str>) -> AgentCoreContext {
        let context = raw
            .and_then(|s| serde_json::from_str::<Value>(s).ok())
            .unwrap_or(Value::Null);
        let Some(custom) = object(context.get("custom")) else {
            return AgentCoreContext::default();
        };
        let tool_name = match lookup(&custom, TOOL_NAME_KEY) {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(Ok(s.clone())),
            Some(_) => Some(Err(())),
        };
        let headers = object(lookup(&custom, PROPAGATED_HEADERS_KEY));
        let header = |name: &str| {
            headers.as_ref().and_then(|h| match lookup(h, name) {
                None | Some(Value::Null) => None,
                Some(Value::String(s)) => Some(s.clone()),
                Some(Value::Array(a)) if a.len() == 1 => {
                    Some(a[0].as_str().unwrap_or_default().to_string())
                }
                Some(_) => Some(String::new()),
            })
        };
        AgentCoreContext {
            tool_name,
            principal: header(principal::HEADER),
            proof: header(principal::PROOF_HEADER),
        }
    }

    /// The tool part of a gateway tool name: after the first `___`, or the
    /// whole name when it has no target prefix.
    pub fn tool(full: &str) -> &str {
        full.split_once(TOOL_SEPARATOR)
            .map_or(full, |(_, tool)| tool)
    }
}

/// An object, or a JSON string that holds one (both shapes have been seen
/// for propagated values).
fn object(v: Option<&Value>) -> Option<Map<String, Value>> {
    match v? {
        Value::Object(m) => Some(m.clone()),
        Value::String(s) => match serde_json::from_str::<Value>(s) {
            Ok(Value::Object(m)) => Some(m),
            _ => None,
        },
        _ => None,
    }
}

fn lookup<'a>(m: &'a Map<String, Value>, key: &str) -> Option<&'a Value> {
    m.get(key).or_else(|| {
        m.iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(key))
            .map(|(_, v)| v)
    })
}

/// The 401 for a caller whose identity cannot be established. One message:
/// which check failed goes to the log only.
fn unauthenticated() -> Error {
    Error::unauthenticated("the caller's identity could not be established")
}

/// Now in Unix seconds.
fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// The serving side of a container: the operation, the context, the settings.
pub struct Handler {
    pub op: Operation,
    pub ctx: Ctx,
    pub settings: Settings,
    /// The key of the AgentCore principal proof; `None` refuses every
    /// AgentCore principal.
    pub proof_key: Option<proof::Key>,
}

#[async_trait::async_trait]
impl Invoke for Handler {
    async fn invoke(&self, inv: &Invocation) -> Reply {
        self.answer(inv).await
    }
}

impl Handler {
    /// Answers one invocation. Never fails.
    pub async fn answer(&self, inv: &Invocation) -> Reply {
        let started = Instant::now();
        let budget = budget(inv.deadline_ms);
        let context = AgentCoreContext::parse(inv.client_context.as_deref());
        let parsed = serde_json::from_slice::<Value>(&inv.event);
        let kind = EventKind::of(&context, parsed.as_ref().ok());
        let (status, code, reply) = match (kind, parsed) {
            (EventKind::ApiGatewayV2, Ok(event)) => {
                let resp = self.api_gateway(&event, &inv.request_id, budget).await;
                let code = error_code(&resp);
                (
                    resp.status,
                    code,
                    Reply::Response(api_gateway_result(&resp)),
                )
            }
            (kind, parsed) => {
                let args = parsed
                    .map_err(|e| Error::invalid_json(format!("the event is not valid JSON: {e}")));
                let out = self
                    .tool_call(kind, args, &context, &inv.request_id, budget)
                    .await;
                match out {
                    Ok(v) => (200, None, Reply::Response(v)),
                    Err(e) => (e.status(), Some(e.code().as_str()), Reply::error(&e)),
                }
            }
        };
        tracing::info!(
            request_id = %inv.request_id,
            operation = self.op.name(),
            kind = kind.as_str(),
            status,
            code,
            ms = started.elapsed().as_millis() as u64,
            "invocation"
        );
        reply
    }

    /// An API Gateway HTTP API (payload 2.0) event through the shared router.
    async fn api_gateway(&self, event: &Value, request_id: &str, budget: Duration) -> HttpResponse {
        let text = |ptr: &str| event.pointer(ptr).and_then(Value::as_str);
        let method = text("/requestContext/http/method");
        let path = text("/rawPath").or_else(|| text("/requestContext/http/path"));
        let (Some(method), Some(path)) = (method, path) else {
            return HttpResponse::error(&Error::invalid_json(
                "malformed API Gateway event: no requestContext.http.method or rawPath",
            ));
        };
        let query = text("/rawQueryString").unwrap_or("");
        let body = match event.get("body") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::String(s)) if event["isBase64Encoded"] == true => {
                match base64::engine::general_purpose::STANDARD.decode(s) {
                    Ok(b) => b,
                    Err(_) => {
                        return HttpResponse::error(&Error::invalid_json(
                            "the request body is flagged base64 but does not decode",
                        ))
                    }
                }
            }
            Some(Value::String(s)) => s.clone().into_bytes(),
            Some(_) => {
                return HttpResponse::error(&Error::invalid_json(
                    "malformed API Gateway event: body is not a string",
                ))
            }
        };
        let principal = match self.api_gateway_principal(event) {
            Ok(p) => p,
            Err(e) => return HttpResponse::error(&e),
        };
        let req = HttpRequest {
            method,
            path,
            query,
            body: &body,
            request_id,
        };
        let attempt = || router::handle(&self.ctx, &principal, req);
        let served = async {
            let started = Instant::now();
            let first = attempt().await;
            if first.status == Code::Unavailable.status() && self.worth_retrying(started).await {
                tracing::warn!(
                    request_id,
                    "database connection re-established; retrying once"
                );
                return attempt().await;
            }
            first
        };
        match tokio::time::timeout(budget, served).await {
            Ok(resp) => resp,
            Err(_) => {
                tracing::error!(request_id, "invocation deadline reached");
                HttpResponse::error(&Error::Unavailable("deadline".into()))
            }
        }
    }

    /// `jwt:<iss>#<sub>` from the JWT authorizer's claims, else
    /// `iam:<userArn>`, else anonymous when allowed.
    fn api_gateway_principal(&self, event: &Value) -> Result<Principal, Error> {
        let authorizer = event.pointer("/requestContext/authorizer");
        // Present but unusable (empty, not a string, malformed) is refused,
        // never taken for anonymous.
        let claim = |ptr: &str| {
            authorizer
                .and_then(|a| a.pointer(ptr))
                .filter(|v| !v.is_null())
                .map(|v| v.as_str().unwrap_or(""))
        };
        let refused = |e: principal::Invalid| {
            tracing::warn!(reason = %e, "API Gateway caller refused");
            unauthenticated()
        };
        if let Some(sub) = claim("/jwt/claims/sub") {
            let iss = claim("/jwt/claims/iss").unwrap_or("");
            return Principal::jwt(iss, sub).map_err(refused);
        }
        if let Some(arn) = claim("/iam/userArn") {
            return Principal::iam(arn).map_err(refused);
        }
        self.anonymous()
    }

    fn anonymous(&self) -> Result<Principal, Error> {
        if self.settings.allow_anonymous {
            Ok(Principal::anonymous())
        } else {
            Err(Error::unauthenticated(
                "no authenticated caller, and anonymous calls are not enabled",
            ))
        }
    }

    /// The principal of an AgentCore call: the interceptor's principal with
    /// its proof for this tool, or anonymous (where allowed) when the call
    /// names none.
    fn agentcore_principal(
        &self,
        context: &AgentCoreContext,
        tool_name: &str,
        request_id: &str,
    ) -> Result<Principal, Error> {
        let Some(claimed) = &context.principal else {
            return self.anonymous();
        };
        let refuse = |reason: &str| {
            tracing::warn!(request_id, reason, "AgentCore principal refused");
            unauthenticated()
        };
        let principal = Principal::parse(claimed).map_err(|_| refuse("malformed_principal"))?;
        let key = self
            .proof_key
            .as_ref()
            .ok_or_else(|| refuse(proof::Refusal::NoKey.as_str()))?;
        let proof = context
            .proof
            .as_deref()
            .ok_or_else(|| refuse(proof::Refusal::Missing.as_str()))?;
        key.verify(&principal, tool_name, proof, unix_now())
            .map_err(|r| refuse(r.as_str()))?;
        Ok(principal)
    }

    /// An AgentCore tool call or a direct invocation: the flat arguments of
    /// this function's operation.
    async fn tool_call(
        &self,
        kind: EventKind,
        args: Result<Value, Error>,
        context: &AgentCoreContext,
        request_id: &str,
        budget: Duration,
    ) -> Result<Value, Error> {
        let principal = match (kind, &context.tool_name) {
            (EventKind::AgentCore, Some(Ok(full))) => {
                let tool = AgentCoreContext::tool(full);
                if tool != self.op.name() {
                    return Err(Error::Invalid {
                        code: Code::InvalidArgument,
                        field: None,
                        message: format!(
                            "this function serves the tool `{}`, not `{tool}`",
                            self.op.name(),
                        ),
                    });
                }
                self.agentcore_principal(context, full, request_id)?
            }
            (EventKind::AgentCore, _) => {
                return Err(Error::Invalid {
                    code: Code::InvalidArgument,
                    field: None,
                    message: format!("the client context's `{TOOL_NAME_KEY}` is not a string"),
                })
            }
            // A direct invocation names no one.
            _ => self.anonymous()?,
        };
        let args = match args? {
            Value::Object(m) => Value::Object(m),
            _ => {
                return Err(Error::invalid_json(
                    "the tool arguments must be a JSON object",
                ))
            }
        };
        // The same request deadline as the router's (API Gateway).
        let deadline = Duration::from_millis(self.ctx.profile.request_deadline_ms);
        let attempt = || {
            crate::db::within(
                deadline,
                "request",
                caught(self.op.call(&self.ctx, &principal, &args)),
            )
        };
        let served = async {
            let started = Instant::now();
            match attempt().await {
                Err(Error::Unavailable(detail)) if self.worth_retrying(started).await => {
                    tracing::warn!(request_id, error = %detail, "database connection re-established; retrying once");
                    attempt().await
                }
                other => other,
            }
        };
        let out = match tokio::time::timeout(budget, served).await {
            Ok(out) => out,
            Err(_) => Err(Error::Unavailable("invocation deadline reached".into())),
        };
        if let Err(e @ (Error::Internal(_) | Error::Unavailable(_))) = &out {
            tracing::error!(request_id, operation = self.op.name(), error = %e, "operation failed");
        }
        out
    }

    /// Whether an attempt started at `started` that failed as unavailable
    /// is worth one more: it failed before any bound stopped it (a statement
    /// past its timeout, the request deadline: the same lock or load would
    /// stop it again, and the answer would come twice as late), and its
    /// connection was lost and replaced.
    async fn worth_retrying(&self, started: Instant) -> bool {
        let profile = &self.ctx.profile;
        let bound = profile
            .statement_timeout_ms
            .min(profile.request_deadline_ms);
        started.elapsed() < Duration::from_millis(bound)
            && self.connection_replaced(Instant::now()).await
    }

    /// Whether the pooled connection was replaced after `failed_at`: the
    /// connection an operation used was found closed on checkout and a new
    /// one is open. Then (and only then) a failed operation is worth one
    /// more try.
    async fn connection_replaced(&self, failed_at: Instant) -> bool {
        match self.ctx.pool.get().await {
            Ok(conn) => deadpool_postgres::Object::metrics(&conn).created > failed_at,
            Err(_) => false,
        }
    }
}

/// Runs an operation future, turning a panic into [`Error::Internal`].
async fn caught<F: Future<Output = Result<Value, Error>>>(f: F) -> Result<Value, Error> {
    crate::error::catch_panic(f).await
}

/// The time an invocation may take: until its deadline less a margin.
fn budget(deadline_ms: Option<u64>) -> Duration {
    let Some(deadline) = deadline_ms else {
        return DEFAULT_BUDGET;
    };
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0);
    Duration::from_millis(deadline.saturating_sub(now))
        .saturating_sub(DEADLINE_MARGIN)
        .max(MIN_BUDGET)
}

/// The stable code of an error response, for the log line.
fn error_code(resp: &HttpResponse) -> Option<&'static str> {
    if resp.status < 400 {
        return None;
    }
    let v: Value = serde_json::from_slice(&resp.body).ok()?;
    let code = v.pointer("/error/code")?.as_str()?;
    crate::contract::errors()
        .iter()
        .filter_map(|e| e["code"].as_str())
        .find(|c| *c == code)
}

/// An API Gateway proxy result (payload 2.0) for a router response.
pub fn api_gateway_result(resp: &HttpResponse) -> Value {
    let headers: Map<String, Value> = resp
        .headers
        .iter()
        .map(|(k, v)| (k.to_string(), Value::from(*v)))
        .collect();
    let (body, base64) = match std::str::from_utf8(&resp.body) {
        Ok(s) => (s.to_string(), false),
        Err(_) => (
            base64::engine::general_purpose::STANDARD.encode(&resp.body),
            true,
        ),
    };
    json!({
        "statusCode": resp.status,
        "headers": headers,
        "body": body,
        "isBase64Encoded": base64,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kind_is_decided_by_the_client_context_not_the_body() {
        let gateway = AgentCoreContext::parse(Some(
            r#"{"custom": {"bedrockAgentCoreToolName": "mosaic___explain_retrieval"}}"#,
        ));
        let none = AgentCoreContext::default();
        let apigw = json!({"version": "2.0", "rawPath": "/api/search",
            "requestContext": {"http": {"method": "POST"},
                "authorizer": {"jwt": {"claims": {"iss": "https://i", "sub": "a"}}}}});
        assert_eq!(EventKind::of(&none, Some(&apigw)), EventKind::ApiGatewayV2);
        // API-Gateway-shaped arguments inside an AgentCore call stay arguments.
        assert_eq!(EventKind::of(&gateway, Some(&apigw)), EventKind::AgentCore);
        assert_eq!(EventKind::of(&gateway, None), EventKind::AgentCore);
        let bad_tool =
            AgentCoreContext::parse(Some(r#"{"custom": {"bedrockAgentCoreToolName": 7}}"#));
        assert_eq!(EventKind::of(&bad_tool, Some(&apigw)), EventKind::AgentCore);
        for direct in [
            json!({"query": "kettle", "limit": 3}),
            json!({"requestContext": {"http": {}}}),
            json!({"version": "2.0"}),
            json!({"requestContext": "x", "version": "2.0"}),
            json!([]),
            json!("text"),
            Value::Null,
        ] {
            assert_eq!(
                EventKind::of(&none, Some(&direct)),
                EventKind::Direct,
                "{direct}"
            );
        }
        assert_eq!(EventKind::of(&none, None), EventKind::Direct);
    }

    #[test]
    fn client_contexts_are_read_loosely() {
        let parse = |raw: &str| AgentCoreContext::parse(Some(raw));
        let full = parse(
            r#"{"custom": {"bedrockAgentCoreToolName": "mosaic___search_products",
                "bedrockAgentCoreGatewayId": "gw-1", "n": 5, "nested": {"a": [1]},
                "bedrockAgentCorePropagatedHeaders": {"X-Mosaic-Principal": "jwt:i#u",
                    "x-mosaic-principal-proof": "v1.1.ab"}},
               "client": null, "env": null}"#,
        );
        assert_eq!(
            full.tool_name,
            Some(Ok("mosaic___search_products".to_string()))
        );
        assert_eq!(full.principal.as_deref(), Some("jwt:i#u"));
        assert_eq!(full.proof.as_deref(), Some("v1.1.ab"));
        // Lower-case key spelling, headers as a JSON string, repeated header.
        let other = parse(
            r#"{"custom": {"bedrockagentcoreToolName": "t___explain_retrieval",
                "bedrockAgentCorePropagatedHeaders": "{\"x-mosaic-principal\": [\"u2\"]}"}}"#,
        );
        assert_eq!(other.tool_name, Some(Ok("t___explain_retrieval".into())));
        assert_eq!(other.principal.as_deref(), Some("u2"));
        for empty in [
            "",
            "not json",
            "[]",
            "null",
            r#"{"custom": null}"#,
            r#"{"client": null}"#,
            r#"{"custom": []}"#,
            r#"{"custom": {"bedrockAgentCoreToolName": null}}"#,
            r#"{"custom": {"bedrockAgentCorePropagatedHeaders": {"x-other": "u"}}}"#,
            r#"{"custom": {"bedrockAgentCorePropagatedHeaders": 7}}"#,
        ] {
            assert_eq!(parse(empty), AgentCoreContext::default(), "{empty}");
        }
        for unusable in [
            r#"{"custom": {"bedrockAgentCorePropagatedHeaders": {"x-mosaic-principal": 7}}}"#,
            r#"{"custom": {"bedrockAgentCorePropagatedHeaders": {"x-mosaic-principal": ["a", "b"]}}}"#,
        ] {
            assert_eq!(parse(unusable).principal.as_deref(), Some(""), "{unusable}");
        }
        assert_eq!(
            parse(r#"{"custom": {"bedrockAgentCoreToolName": 7}}"#).tool_name,
            Some(Err(()))
        );
        assert_eq!(AgentCoreContext::parse(None), AgentCoreContext::default());
    }

    #[test]
    fn tool_names_split_at_the_first_separator() {
        assert_eq!(
            AgentCoreContext::tool("mosaic___search_products"),
            "search_products"
        );
        assert_eq!(AgentCoreContext::tool("search_products"), "search_products");
        assert_eq!(AgentCoreContext::tool("a___b___c"), "b___c");
        assert_eq!(AgentCoreContext::tool("a__b"), "a__b");
    }

    #[test]
    fn errors_are_function_errors_carrying_the_envelope() {
        let Reply::Failure {
            error_type,
            error_message,
        } = Reply::error(&Error::NotFound)
        else {
            panic!("a failure")
        };
        assert_eq!(error_type, "not_found");
        let body: Value = serde_json::from_str(&error_message).unwrap();
        assert_eq!(body, Error::NotFound.body());
    }

    #[test]
    fn budgets_follow_the_deadline() {
        assert_eq!(budget(None), DEFAULT_BUDGET);
        assert_eq!(budget(Some(0)), MIN_BUDGET);
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_millis() as u64;
        let b = budget(Some(now + 10_000));
        assert!(b <= Duration::from_millis(10_000) - DEADLINE_MARGIN && b > Duration::from_secs(9));
    }

    #[test]
    fn proxy_results() {
        let r = api_gateway_result(&HttpResponse::json(
            404,
            &json!({"error": {"code": "not_found"}}),
        ));
        assert_eq!(r["statusCode"], 404);
        assert_eq!(r["headers"]["content-type"], "application/json");
        assert_eq!(r["isBase64Encoded"], false);
        let body: Value = serde_json::from_str(r["body"].as_str().unwrap()).unwrap();
        assert_eq!(body["error"]["code"], "not_found");
        let raw = HttpResponse {
            status: 200,
            headers: vec![],
            body: vec![0xff, 0x00],
        };
        let r = api_gateway_result(&raw);
        assert_eq!(r["isBase64Encoded"], true);
        assert_eq!(r["body"], "/wA=");
    }
}
