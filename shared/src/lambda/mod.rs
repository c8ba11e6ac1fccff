//! The AWS Lambda adapter the four functions share (feature `lambda`).
//!
//! Each function binary is `run(Operation::X)`: it builds the [`Ctx`] once per
//! container from the environment and then serves invocations one at a time
//! until the Lambda Runtime API goes away. What an invocation is, is decided
//! only by what the platform sets, never by the shape of the event body:
//!
//! * **AgentCore Gateway Lambda target** — exactly when the client context
//!   carries any of the gateway's keys (`custom.bedrockAgentCore…`); the
//!   tool name, `custom.bedrockAgentCoreToolName` = `<target>___<tool>`
//!   (split at the first `___`), says which tool. The event is the flat
//!   tool-argument object and nothing else: an argument object that looks
//!   like an API Gateway event is just arguments, refused as unknown fields.
//!   A tool name of another operation, or a gateway's context without a
//!   tool name, is an `invalid_argument` error.
//! * **API Gateway HTTP API, payload 2.0** — only without any of the
//!   gateway's keys in the client context, and only for the v2 envelope
//!   (`version` `"2.0"` and a `requestContext.http` object). The raw path
//!   (`rawPath`, stage prefix included unless the stage is `$default`), the
//!   raw query string and the body (base64-decoded
//!   when `isBase64Encoded`) go to the shared router [`http::handle`], and
//!   its response comes back as an API Gateway proxy result `{statusCode,
//!   headers, body, isBase64Encoded}`. Status codes and error envelopes are
//!   exactly those of `mosaic serve`.
//! * **Direct invocation** — anything else (`sam local invoke`, `aws lambda
//!   invoke` without a context): the function runs its own operation on the
//!   event as flat arguments, as the anonymous principal when anonymous
//!   calls are enabled, else `unauthenticated`. A client context a direct
//!   invoker writes names no one without the interceptor's proof. An event
//!   shaped like API Gateway's, though, is served as one: a function cannot
//!   tell the HTTP API's invocation from another caller's with the same
//!   payload, so `lambda:InvokeFunction` on the functions is the API
//!   Gateway path's trust boundary (README, "Who may invoke").
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
    build_context, EmbedderSetting, ProofKeyError, ProofKeySetting, RerankerSetting, Settings,
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

mod agentcore;
mod apigw;
mod runtime_api;

pub use agentcore::{
    AgentCoreContext, EventKind, PROPAGATED_HEADERS_KEY, TOOL_NAME_KEY, TOOL_SEPARATOR,
};
pub use apigw::api_gateway_result;
pub use runtime_api::{serve, Invocation, Invoke, Reply};

/// The error type of [`run`] (`lambda_runtime::Error`, a boxed error).
pub type BoxError = lambda_runtime::Error;

// ---------------------------------------------------------------- budgets

/// Time kept back from the invocation deadline to post the answer.
const DEADLINE_MARGIN: Duration = Duration::from_millis(250);
/// The budget of an invocation that carries no deadline.
const DEFAULT_BUDGET: Duration = Duration::from_secs(30);
/// The least budget an invocation gets, however close its deadline.
const MIN_BUDGET: Duration = Duration::from_millis(100);
/// How far past the request deadline an invocation may run, so that an
/// attempt's own deadline (counted from its start, a little later) answers
/// first.
const RETRY_SLACK: Duration = Duration::from_millis(100);

// ------------------------------------------------------------------ the loop

/// Serves `op` until the Runtime API goes away. Reads the environment and
/// builds the context once; a configuration error is reported to the Runtime
/// API as an init error and returned.
pub async fn run(op: Operation) -> Result<(), lambda_runtime::Error> {
    serve(op.name(), async move {
        let settings = Settings::from_env()?;
        let proof_key = match settings.proof_key.load().await {
            Ok(key) => ProofKey::ready(key),
            // Secrets Manager unavailable: the container starts (the HTTP
            // routes need no key) and each AgentCore call tries again.
            Err(ProofKeyError::Unavailable(e)) => {
                tracing::warn!(error = %e, "principal proof key not read at start-up; AgentCore calls fetch it");
                ProofKey::pending(settings.proof_key.clone())
            }
            Err(e @ ProofKeyError::Invalid(_)) => return Err(e.into()),
        };
        let ctx = build_context(&settings, 1).await?;
        // A database behind this build: said where the operator looks
        // first; the calls that need a missing migration answer 503.
        if let Some(problem) = crate::config::migrations_at_start(&ctx)
            .await
            .and_then(|state| state.problem())
        {
            tracing::warn!("{problem}");
        }
        let handler = Handler {
            op,
            ctx,
            settings,
            proof_key,
        };
        tracing::info!(
            operation = op.name(),
            anonymous_allowed = handler.settings.allow_anonymous,
            agentcore_principals = handler.proof_key.expected(),
            embedder = handler.ctx.embedder.as_ref().map(|e| e.model_id()),
            "ready"
        );
        if !handler.proof_key.expected() {
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
    /// The key of the AgentCore principal proof; none configured refuses
    /// every AgentCore principal.
    pub proof_key: ProofKey,
}

/// The AgentCore principal proof's key as a container holds it: none
/// configured, read, or configured and not read yet (Secrets Manager could
/// not be reached at start-up), in which case each AgentCore call tries
/// again and is a 503 until a read succeeds. A configured key that is not
/// read never lets a call through as anonymous.
pub struct ProofKey {
    setting: ProofKeySetting,
    key: tokio::sync::OnceCell<proof::Key>,
}

impl ProofKey {
    /// A key already read, or none.
    pub fn ready(key: Option<proof::Key>) -> Self {
        match key {
            Some(k) => Self {
                setting: ProofKeySetting::Inline(k.clone()),
                key: tokio::sync::OnceCell::new_with(Some(k)),
            },
            None => Self {
                setting: ProofKeySetting::None,
                key: tokio::sync::OnceCell::new(),
            },
        }
    }

    /// A key `setting` names and that is read on first use.
    pub fn pending(setting: ProofKeySetting) -> Self {
        Self {
            setting,
            key: tokio::sync::OnceCell::new(),
        }
    }

    /// Whether a key is configured, read or not.
    pub fn expected(&self) -> bool {
        !matches!(self.setting, ProofKeySetting::None)
    }

    /// The key, read now if it was not: `None` when none is configured, an
    /// `unavailable` error while it cannot be read.
    pub async fn get(&self) -> Result<Option<&proof::Key>, Error> {
        if !self.expected() {
            return Ok(None);
        }
        let key = self
            .key
            .get_or_try_init(|| async {
                match self.setting.load().await {
                    Ok(Some(k)) => Ok(k),
                    Ok(None) => Err("no key".to_string()),
                    Err(e) => Err(e.to_string()),
                }
            })
            .await
            .map_err(|e| {
                tracing::warn!(error = %e, "principal proof key unavailable");
                Error::Unavailable("principal proof key".into())
            })?;
        Ok(Some(key))
    }
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
        // The request deadline holds for the invocation, a retry included:
        // a retried attempt gets only what is left of it.
        let deadline = Duration::from_millis(self.ctx.profile.request_deadline_ms);
        let budget = budget(inv.deadline_ms).min(deadline + RETRY_SLACK);
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
                // Tool arguments are held to the HTTP routes' body limit.
                // Then the arguments once more, refusing an object that
                // names a key twice, as the HTTP routes do (a log that read
                // the first would show other arguments than the call used).
                let args = match inv.event.len() > crate::http::MAX_BODY {
                    true => Err(Error::payload_too_large(crate::http::MAX_BODY)),
                    false => parsed
                        .and_then(|_| crate::http::parse_unique(&inv.event))
                        .map_err(|e| {
                            Error::invalid_json(format!("the event is not valid JSON: {e}"))
                        }),
                };
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

    fn anonymous(&self) -> Result<Principal, Error> {
        if self.settings.allow_anonymous {
            Ok(Principal::anonymous())
        } else {
            Err(Error::unauthenticated(
                "no authenticated caller, and anonymous calls are not enabled",
            ))
        }
    }

    /// Runs `attempt` within the invocation's `budget` (`None` past it),
    /// once more when its answer is `unavailable` and [worth
    /// retrying](Self::worth_retrying). One wrapper for both event kinds.
    async fn within_budget<T, F, Fut>(
        &self,
        budget: Duration,
        request_id: &str,
        attempt: F,
        unavailable: impl Fn(&T) -> bool,
    ) -> Option<T>
    where
        F: Fn() -> Fut,
        Fut: Future<Output = T>,
    {
        let served = async {
            let started = Instant::now();
            let first = attempt().await;
            if unavailable(&first) && self.worth_retrying(started).await {
                tracing::warn!(
                    request_id,
                    "database connection re-established; retrying once"
                );
                return attempt().await;
            }
            first
        };
        tokio::time::timeout(budget, served).await.ok()
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
        .map(|e| e.code.as_str())
        .find(|c| *c == code)
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
        // A gateway's context without a usable tool name is still the
        // gateway's: its event is a client's arguments, never API Gateway's.
        for gateway_without_tool in [
            r#"{"custom": {"bedrockAgentCoreToolName": null}}"#,
            r#"{"custom": {"bedrockAgentCoreGatewayId": "gw-1"}}"#,
            r#"{"custom": {"BEDROCKAGENTCORETargetId": "T1"}}"#,
            r#"{"custom": {"bedrockAgentCorePropagatedHeaders": {"x-other": "u"}}}"#,
        ] {
            let context = AgentCoreContext::parse(Some(gateway_without_tool));
            assert!(context.tool_name.is_none(), "{gateway_without_tool}");
            assert_eq!(
                EventKind::of(&context, Some(&apigw)),
                EventKind::AgentCore,
                "{gateway_without_tool}"
            );
        }
        // Keys of other kinds leave an invocation what its event makes it.
        let other = AgentCoreContext::parse(Some(r#"{"custom": {"attempt": 2, "agent": "x"}}"#));
        assert_eq!(EventKind::of(&other, Some(&apigw)), EventKind::ApiGatewayV2);
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
            r#"{"custom": {"attempt": 2}}"#,
        ] {
            assert_eq!(parse(empty), AgentCoreContext::default(), "{empty}");
        }
        // The gateway's keys, with nothing usable in them.
        for gateway_only in [
            r#"{"custom": {"bedrockAgentCoreToolName": null}}"#,
            r#"{"custom": {"bedrockAgentCorePropagatedHeaders": {"x-other": "u"}}}"#,
            r#"{"custom": {"bedrockAgentCorePropagatedHeaders": 7}}"#,
        ] {
            let gateway = AgentCoreContext {
                from_gateway: true,
                ..AgentCoreContext::default()
            };
            assert_eq!(parse(gateway_only), gateway, "{gateway_only}");
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
