//! Amazon Web Services adapters: Bedrock embedders and rerankers, and the
//! database secret from Secrets Manager (feature `aws`).
//!
//! Everything here sits behind the crate's own seams — [`Embedder`],
//! [`Reranker`] and a small secret cache — so the search pipeline never
//! learns that a vector came from Bedrock. Two rules shape the module:
//!
//! * **Deadlines hold.** Every remote call runs under a client-side
//!   [`CallPolicy`]: one deadline for the whole call, a shorter per-attempt
//!   timeout (so a hung connection still leaves room for a retry), and at most
//!   a few retries with jittered backoff, inside the deadline, and only for
//!   throttling, 5xx, timeouts and network failures. The SDK's own retries are
//!   switched off on the clients built here ([`bedrock::client`],
//!   [`secrets::client`]); even on a client with SDK retries, every attempt is
//!   still cut at its budget, so the deadline holds either way.
//! * **Errors say what, not why in the service's words.** Returned errors use
//!   a fixed vocabulary ("throttled", "service error (HTTP 503)", "timed
//!   out", ...). The SDK's full error, including the service message and
//!   request id, is logged with `tracing` at warn level. No error or log line
//!   carries credentials, the secret's value or request bodies.
//!
//! # Configuration
//!
//! [`AwsSettings::from_env`] reads:
//!
//! * `MOSAIC_EMBEDDER=bedrock:<model>[:<dimension>]` selects a Bedrock
//!   embedder; any other value (`local`, `hashing`) is not ours and leaves
//!   it unset. Models (dimension default first):
//!   `titan-v2[:1024|512|256]` = `amazon.titan-embed-text-v2:0`;
//!   `cohere-v3` = `cohere.embed-english-v3` (1024);
//!   `cohere-v3-multilingual` = `cohere.embed-multilingual-v3` (1024);
//!   `cohere-v4[:1536|1024|512|256]` = `cohere.embed-v4:0`.
//!   Full model ids work too, also behind a cross-region prefix
//!   (`us.cohere.embed-v4:0:1024`), so `template.yaml`'s
//!   `bedrock:amazon.titan-embed-text-v2:0:1024` parses.
//! * `MOSAIC_RERANKER=bedrock:cohere-rerank-3.5` (= `cohere.rerank-v3-5:0`)
//!   or `bedrock:amazon-rerank-1.0` (= `amazon.rerank-v1:0`); other values
//!   are not ours.
//! * `MOSAIC_EMBED_DEADLINE_MS` (default 2000) and
//!   `MOSAIC_RERANK_DEADLINE_MS` (default 1500): fields of the
//!   [`RetrievalProfile`], read through it, not here.
//! * `MOSAIC_BEDROCK_MAX_RETRIES`: retries after the first attempt, 0..=5
//!   (default 2); applies to the secret fetch too.
//! * `MOSAIC_DB_SECRET_ARN` and the other `MOSAIC_DB_*` variables: the
//!   database connection, read by [`rds::RdsSettings`].
//! * `MOSAIC_SECRET_DEADLINE_MS`: deadline of one secret fetch, retries
//!   included (default 3000).
//!
//! The SDK's own variables apply as usual: `AWS_REGION`, the credential
//! chain (`AWS_ACCESS_KEY_ID`, ..., the Lambda role), and endpoint overrides
//! `AWS_ENDPOINT_URL`, `AWS_ENDPOINT_URL_BEDROCK_RUNTIME`,
//! `AWS_ENDPOINT_URL_SECRETS_MANAGER` (the stub-server tests set
//! `endpoint_url` on the loader instead, to keep the process environment
//! untouched).
//!
//! The client-side deadline is the same number the search pipeline applies
//! around the whole `embed`/`rerank` call, so a query embedding or a rerank
//! never outlives it. Titan embeds one text per invocation and Cohere at
//! most 96, so a large document batch (the `embed` job) makes several
//! invocations, each with its own deadline, at most four in flight.
//!
//! TLS is rustls with aws-lc-rs. The SDK crates' default `rustls` feature is
//! the legacy hyper-0.14 stack on `ring`; the `aws` feature turns default
//! features off so `ring` never enters the build.
//!
//! [`Embedder`]: crate::embed::Embedder
//! [`Reranker`]: crate::rerank::Reranker
//! [`RetrievalProfile`]: crate::profile::RetrievalProfile

pub mod bedrock;
pub mod rds;
pub mod secrets;

pub use bedrock::{BedrockEmbedder, BedrockReranker, EmbeddingModel, RerankModel};
pub use secrets::{DbSecret, SecretCache, SecretError};

use crate::profile::RetrievalProfile;
use aws_sdk_bedrockruntime::error::{DisplayErrorContext, ProvideErrorMetadata, SdkError};
use rand::Rng;
use std::future::Future;
use std::time::{Duration, Instant};

pub use aws_config::SdkConfig;

/// Loads the SDK configuration from the environment (region, credential
/// chain, endpoint overrides), as a Lambda container does once at start-up.
pub async fn load_sdk_config() -> SdkConfig {
    aws_config::load_defaults(aws_config::BehaviorVersion::latest()).await
}

/// What a Lambda container builds from its environment at start-up: one
/// SDK configuration shared by the Bedrock and Secrets Manager clients.
pub struct AwsComponents {
    pub sdk: SdkConfig,
    pub settings: AwsSettings,
}

impl AwsComponents {
    /// Reads [`AwsSettings`] and the SDK configuration (region, credential
    /// chain, endpoint overrides).
    pub async fn load(settings: AwsSettings) -> Self {
        let sdk = load_sdk_config().await;
        Self { sdk, settings }
    }

    /// The Bedrock embedder `MOSAIC_EMBEDDER=bedrock:...` asks for.
    pub fn embedder(&self) -> Option<BedrockEmbedder> {
        let model = self.settings.embedder.clone()?;
        Some(BedrockEmbedder::new(
            bedrock::client(&self.sdk),
            model,
            self.settings.embed_policy,
        ))
    }

    /// The Bedrock reranker `MOSAIC_RERANKER=bedrock:...` asks for.
    pub fn reranker(&self) -> Option<BedrockReranker> {
        let model = self.settings.reranker.clone()?;
        Some(BedrockReranker::new(
            bedrock::client(&self.sdk),
            model,
            self.settings.rerank_policy,
        ))
    }

    /// A context on the AWS database connection (see [`rds`]): its pool,
    /// and cancel requests over the same verified TLS; with
    /// `MOSAIC_DB_READ_HOST`, a read pool on the proxy's read-only endpoint
    /// with the same login and TLS. A secret is fetched now, so a missing
    /// one fails the start-up.
    pub async fn database(
        &self,
        db: &rds::RdsSettings,
        max_connections: usize,
        profile: crate::RetrievalProfile,
    ) -> Result<crate::Ctx, String> {
        let connector = rds::connector(db, &self.sdk, self.settings.secret_policy).await?;
        let canceller = connector.canceller();
        let reader = connector.reader(db);
        let ctx = crate::Ctx::with_manager(connector.into_manager(), max_connections, profile)?
            .with_canceller(canceller.clone());
        Ok(match reader {
            Some(r) => ctx.with_reader(crate::context::Reader::new(
                crate::context::manager_pool(r.into_manager(), max_connections)?,
                canceller,
            )),
            None => ctx,
        })
    }
}

/// How long one remote call may take and how it retries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallPolicy {
    /// Budget of the whole call: every attempt and every backoff.
    pub deadline: Duration,
    /// Budget of one attempt (capped by what is left of the deadline). The
    /// default, two thirds of the deadline, leaves a third for one retry
    /// after a hung connection.
    pub attempt_timeout: Duration,
    /// Retries after the first attempt, for retryable failures only.
    pub max_retries: u32,
    /// Pause before the first retry; it doubles per retry and is jittered
    /// down by up to half. A retry whose pause would cross the deadline is
    /// not made.
    pub backoff: Duration,
}

impl CallPolicy {
    /// Retries after the first attempt unless configured otherwise.
    pub const DEFAULT_MAX_RETRIES: u32 = 2;
    /// Pause before the first retry unless configured otherwise.
    pub const DEFAULT_BACKOFF: Duration = Duration::from_millis(50);

    /// The default policy for a call with this deadline.
    pub fn new(deadline: Duration) -> Self {
        Self {
            deadline,
            attempt_timeout: (deadline * 2 / 3).max(Duration::from_millis(1)),
            max_retries: Self::DEFAULT_MAX_RETRIES,
            backoff: Self::DEFAULT_BACKOFF,
        }
    }

    /// As [`new`](Self::new) with a deadline in milliseconds.
    pub fn from_millis(deadline_ms: u64) -> Self {
        Self::new(Duration::from_millis(deadline_ms))
    }

    pub fn with_max_retries(mut self, max_retries: u32) -> Self {
        self.max_retries = max_retries;
        self
    }

    pub fn with_attempt_timeout(mut self, attempt_timeout: Duration) -> Self {
        self.attempt_timeout = attempt_timeout;
        self
    }

    pub fn with_backoff(mut self, backoff: Duration) -> Self {
        self.backoff = backoff;
        self
    }

    fn deadline_ms(&self) -> u64 {
        u64::try_from(self.deadline.as_millis()).unwrap_or(u64::MAX)
    }

    /// The jittered pause before retry number `retry` (1-based).
    fn pause(&self, retry: u32) -> Duration {
        let full = self.backoff.saturating_mul(1 << (retry - 1).min(10));
        full.mul_f64(rand::thread_rng().gen_range(0.5..=1.0))
    }
}

/// Why an attempt failed, in this module's own words. Service messages
/// never travel in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailureKind {
    /// HTTP 429 or a throttling error code.
    Throttled,
    /// HTTP 5xx, or a model that was not ready or timed out server-side.
    ServerError(u16),
    /// The attempt (or the SDK's connect/read) timed out.
    Timeout,
    /// The connection failed or broke.
    Network,
    /// HTTP 401/403: the role lacks permission (or credentials are wrong).
    AccessDenied,
    /// The model or secret does not exist (or is not enabled).
    NotFound,
    /// Any other client error: the request was rejected as it stands.
    Rejected(u16),
    /// The response could not be read as the expected JSON.
    Malformed,
    /// The request could not be built or sent (configuration, credentials).
    Config,
}

impl FailureKind {
    /// Whether another attempt might succeed.
    pub fn is_retryable(self) -> bool {
        matches!(
            self,
            Self::Throttled | Self::ServerError(_) | Self::Timeout | Self::Network
        )
    }

    fn describe(self) -> String {
        match self {
            Self::Throttled => "throttled".into(),
            Self::ServerError(status) => format!("service error (HTTP {status})"),
            Self::Timeout => "timed out".into(),
            Self::Network => "network error".into(),
            Self::AccessDenied => "access denied".into(),
            Self::NotFound => "not found or not enabled".into(),
            Self::Rejected(status) => format!("request rejected (HTTP {status})"),
            Self::Malformed => "unexpected response shape".into(),
            Self::Config => "client misconfigured (region, credentials or endpoint)".into(),
        }
    }
}

/// A call that failed for good: the last attempt's failure and how many
/// attempts were made. Its `Display` is safe to return to operators.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallFailure {
    pub kind: FailureKind,
    pub attempts: u32,
}

impl std::fmt::Display for CallFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = if self.attempts == 1 { "" } else { "s" };
        write!(
            f,
            "{} after {} attempt{s}",
            self.kind.describe(),
            self.attempts
        )
    }
}

impl std::error::Error for CallFailure {}

/// Runs `attempt` under `policy`: each attempt cut at its budget, retryable
/// failures retried after a jittered pause while the deadline allows.
/// `what` names the call in logs (a model id or "secret").
pub(crate) async fn with_retries<T, F, Fut>(
    policy: &CallPolicy,
    what: &str,
    mut attempt: F,
) -> Result<T, CallFailure>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, FailureKind>>,
{
    let deadline = Instant::now() + policy.deadline;
    let mut attempts = 0;
    loop {
        let remaining = deadline.saturating_duration_since(Instant::now());
        if remaining.is_zero() {
            return Err(CallFailure {
                kind: FailureKind::Timeout,
                attempts: attempts.max(1),
            });
        }
        attempts += 1;
        let budget = remaining.min(policy.attempt_timeout);
        let kind = match tokio::time::timeout(budget, attempt()).await {
            Ok(Ok(value)) => return Ok(value),
            Ok(Err(kind)) => kind,
            Err(_) => {
                tracing::warn!(
                    call = what,
                    attempt = attempts,
                    budget_ms = budget.as_millis() as u64,
                    "AWS call attempt timed out"
                );
                FailureKind::Timeout
            }
        };
        let failure = CallFailure { kind, attempts };
        if !kind.is_retryable() || attempts > policy.max_retries {
            return Err(failure);
        }
        let pause = policy.pause(attempts);
        if Instant::now() + pause >= deadline {
            return Err(failure);
        }
        tracing::debug!(call = what, attempt = attempts, pause_ms = pause.as_millis() as u64,
                        kind = ?kind, "retrying AWS call");
        tokio::time::sleep(pause).await;
    }
}

/// Classifies an SDK error and logs it in full at warn level (the log may
/// hold the service's message and request id; the returned kind never does).
pub(crate) fn sdk_failure<E>(what: &str, err: &SdkError<E>) -> FailureKind
where
    E: ProvideErrorMetadata + std::error::Error + 'static,
{
    let kind = match err {
        SdkError::ConstructionFailure(_) => FailureKind::Config,
        SdkError::TimeoutError(_) => FailureKind::Timeout,
        SdkError::DispatchFailure(d) if d.is_timeout() => FailureKind::Timeout,
        SdkError::DispatchFailure(d) if d.is_user() => FailureKind::Config,
        SdkError::DispatchFailure(_) => FailureKind::Network,
        SdkError::ResponseError(r) => match r.raw().status().as_u16() {
            s if s >= 500 => FailureKind::ServerError(s),
            _ => FailureKind::Malformed,
        },
        SdkError::ServiceError(s) => classify_service(s.raw().status().as_u16(), s.err().code()),
        _ => FailureKind::Network,
    };
    let status = err.raw_response().map(|r| r.status().as_u16());
    let code = err.as_service_error().and_then(|e| e.code());
    match fix_for(what, kind) {
        // Access rights do not heal by retrying: an error naming the fix.
        Some(fix) => tracing::error!(call = what, ?kind, status, code,
                                     error = %DisplayErrorContext(err), fix, "AWS call failed"),
        None => tracing::warn!(call = what, ?kind, status, code,
                               error = %DisplayErrorContext(err), "AWS call failed"),
    }
    kind
}

/// What an operator must change when a call fails for lack of rights (or a
/// model that is not enabled); `what` is a model id or "secret".
fn fix_for(what: &str, kind: FailureKind) -> Option<String> {
    let secret = what == "secret";
    match kind {
        FailureKind::AccessDenied if secret => Some(
            "grant the function's role secretsmanager:GetSecretValue on the secret (and \
             kms:Decrypt on its key when it is not the AWS-managed one)"
                .into(),
        ),
        FailureKind::AccessDenied => Some(format!(
            "grant the function's role bedrock:InvokeModel on foundation-model/{what}; for an \
             inference profile id (us., eu., apac., global.) also on its inference-profile ARN \
             and on the foundation models it routes to; a Marketplace model (Cohere) needs a \
             one-time subscription (enable model access in the Bedrock console) or \
             aws-marketplace:Subscribe and aws-marketplace:ViewSubscriptions"
        )),
        FailureKind::NotFound if !secret => Some(format!(
            "check the model id `{what}` and enable access to it in this region (Bedrock \
             console, Model access); some models are offered only through an inference profile"
        )),
        _ => None,
    }
}

/// Maps an HTTP status and an AWS error code onto a [`FailureKind`]. Codes
/// come first: JSON-1.1 services (Secrets Manager) answer 400 for most
/// client errors.
fn classify_service(status: u16, code: Option<&str>) -> FailureKind {
    match code.unwrap_or("") {
        "ThrottlingException" | "TooManyRequestsException" | "ModelNotReadyException" => {
            FailureKind::Throttled
        }
        "ModelTimeoutException"
        | "ServiceUnavailableException"
        | "InternalServerException"
        | "InternalServiceError"
        | "InternalFailure" => FailureKind::ServerError(status),
        "AccessDeniedException"
        | "UnrecognizedClientException"
        | "InvalidSignatureException"
        | "ExpiredTokenException" => FailureKind::AccessDenied,
        "ResourceNotFoundException" => FailureKind::NotFound,
        _ => match status {
            429 => FailureKind::Throttled,
            500.. => FailureKind::ServerError(status),
            401 | 403 => FailureKind::AccessDenied,
            404 => FailureKind::NotFound,
            _ => FailureKind::Rejected(status),
        },
    }
}

/// Which AWS-backed components the environment asks for, and their call
/// policies. See the module documentation for the variables.
#[derive(Debug, Clone, PartialEq)]
pub struct AwsSettings {
    pub embedder: Option<EmbeddingModel>,
    pub reranker: Option<RerankModel>,
    pub embed_policy: CallPolicy,
    pub rerank_policy: CallPolicy,
    pub secret_policy: CallPolicy,
}

impl AwsSettings {
    /// Deadline of one secret fetch unless `MOSAIC_SECRET_DEADLINE_MS` says otherwise.
    pub const DEFAULT_SECRET_DEADLINE_MS: u64 = 3_000;
    /// Upper bound of `MOSAIC_BEDROCK_MAX_RETRIES`.
    pub const MAX_RETRIES_LIMIT: u32 = 5;

    /// Reads the settings from the process environment.
    pub fn from_env(profile: &RetrievalProfile) -> Result<Self, String> {
        Self::from_lookup(profile, |k| std::env::var(k).ok())
    }

    /// As [`from_env`](Self::from_env) with an explicit variable lookup.
    pub fn from_lookup(
        profile: &RetrievalProfile,
        get: impl Fn(&str) -> Option<String>,
    ) -> Result<Self, String> {
        let ours = |var: &str| -> Option<String> {
            get(var).and_then(|v| v.trim().strip_prefix("bedrock:").map(str::to_string))
        };
        let embedder = ours("MOSAIC_EMBEDDER")
            .map(|s| s.parse::<EmbeddingModel>())
            .transpose()
            .map_err(|e| format!("MOSAIC_EMBEDDER: {e}"))?;
        let reranker = ours("MOSAIC_RERANKER")
            .map(|s| s.parse::<RerankModel>())
            .transpose()
            .map_err(|e| format!("MOSAIC_RERANKER: {e}"))?;
        let number = |var: &str, default: u64| -> Result<u64, String> {
            match get(var) {
                None => Ok(default),
                Some(raw) => raw
                    .trim()
                    .parse::<u64>()
                    .map_err(|_| format!("{var}={raw:?} is not a whole number")),
            }
        };
        let retries = number(
            "MOSAIC_BEDROCK_MAX_RETRIES",
            u64::from(CallPolicy::DEFAULT_MAX_RETRIES),
        )?;
        if retries > u64::from(Self::MAX_RETRIES_LIMIT) {
            return Err(format!(
                "MOSAIC_BEDROCK_MAX_RETRIES must be 0..={}",
                Self::MAX_RETRIES_LIMIT
            ));
        }
        let retries = retries as u32;
        let secret_ms = number(
            "MOSAIC_SECRET_DEADLINE_MS",
            Self::DEFAULT_SECRET_DEADLINE_MS,
        )?;
        let positive = |name: &str, ms: u64| {
            if ms == 0 {
                Err(format!("{name} must be positive"))
            } else {
                Ok(CallPolicy::from_millis(ms).with_max_retries(retries))
            }
        };
        Ok(Self {
            embedder,
            reranker,
            embed_policy: positive("embed_deadline_ms", profile.embed_deadline_ms)?,
            rerank_policy: positive("rerank_deadline_ms", profile.rerank_deadline_ms)?,
            secret_policy: positive("MOSAIC_SECRET_DEADLINE_MS", secret_ms)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn settings(vars: &[(&str, &str)]) -> Result<AwsSettings, String> {
        let map: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        AwsSettings::from_lookup(&RetrievalProfile::default(), |k| map.get(k).cloned())
    }

    #[test]
    fn settings_take_only_bedrock_values_and_deadlines_from_the_profile() {
        let s = settings(&[
            (
                "MOSAIC_EMBEDDER",
                "bedrock:amazon.titan-embed-text-v2:0:512",
            ),
            ("MOSAIC_RERANKER", "bedrock:cohere.rerank-v3-5:0"),
        ])
        .unwrap();
        assert_eq!(s.embedder.unwrap().dimension(), 512);
        assert_eq!(s.reranker.unwrap().model_id(), "cohere.rerank-v3-5:0");
        let profile = RetrievalProfile::default();
        assert_eq!(
            s.embed_policy.deadline.as_millis() as u64,
            profile.embed_deadline_ms
        );
        assert_eq!(
            s.rerank_policy.deadline.as_millis() as u64,
            profile.rerank_deadline_ms
        );
        assert_eq!(s.embed_policy.max_retries, CallPolicy::DEFAULT_MAX_RETRIES);

        let s = settings(&[("MOSAIC_EMBEDDER", "local"), ("MOSAIC_RERANKER", "none")]).unwrap();
        assert!(s.embedder.is_none() && s.reranker.is_none());
    }

    #[test]
    fn settings_reject_bad_values_with_the_variable_name() {
        let e = settings(&[("MOSAIC_EMBEDDER", "bedrock:titan-v2:300")]).unwrap_err();
        assert!(e.starts_with("MOSAIC_EMBEDDER"), "{e}");
        let e = settings(&[("MOSAIC_BEDROCK_MAX_RETRIES", "9")]).unwrap_err();
        assert!(e.contains("MOSAIC_BEDROCK_MAX_RETRIES"), "{e}");
        let e = settings(&[("MOSAIC_SECRET_DEADLINE_MS", "soon")]).unwrap_err();
        assert!(e.contains("MOSAIC_SECRET_DEADLINE_MS"), "{e}");
    }

    #[test]
    fn service_errors_are_classified_by_code_before_status() {
        assert_eq!(
            classify_service(400, Some("ResourceNotFoundException")),
            FailureKind::NotFound
        );
        assert_eq!(
            classify_service(429, Some("ThrottlingException")),
            FailureKind::Throttled
        );
        assert_eq!(classify_service(503, None), FailureKind::ServerError(503));
        assert_eq!(
            classify_service(400, Some("ValidationException")),
            FailureKind::Rejected(400)
        );
        assert!(!FailureKind::Rejected(400).is_retryable());
        assert!(FailureKind::Timeout.is_retryable());
    }

    #[test]
    fn backoff_doubles_with_jitter_and_stays_bounded() {
        let p = CallPolicy::from_millis(1_000).with_backoff(Duration::from_millis(40));
        for _ in 0..50 {
            let first = p.pause(1);
            let second = p.pause(2);
            assert!(first >= Duration::from_millis(20) && first <= Duration::from_millis(40));
            assert!(second >= Duration::from_millis(40) && second <= Duration::from_millis(80));
        }
        assert_eq!(p.attempt_timeout.as_millis(), 666);
    }
}
