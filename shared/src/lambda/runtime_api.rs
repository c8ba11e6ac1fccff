//! The Lambda Runtime API client: the loop every function binary runs,
//! posting each invocation's reply or the init error.

use super::*;

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
