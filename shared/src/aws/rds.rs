//! The database connection in AWS: Aurora PostgreSQL through RDS Proxy, over
//! verified TLS, logging in with the Secrets Manager secret or an IAM
//! authentication token.
//!
//! [`RdsConnect`] is the pool's connector ([`deadpool_postgres::Connect`]):
//! every new connection takes the current login — the cached secret, or an
//! IAM token reused for at most [`IAM_TOKEN_REUSE`] of its 15-minute life —
//! and connects with [`crate::tls`] (Mozilla roots for RDS Proxy's Amazon
//! Trust Services certificates, the RDS bundle for Aurora's). When the
//! server rejects the login (SQLSTATE 28P01 or 28000) it drops the cached
//! secret or token, fetches a fresh one and tries once more: a rotated
//! password heals without a cold start. Such forced refreshes happen at
//! most once per [`LOGIN_REFRESH_INTERVAL`], so a login that stays wrong
//! does not call Secrets Manager on every attempt.
//!
//! # Configuration
//!
//! | Variable | Meaning |
//! |---|---|
//! | `MOSAIC_DB_HOST` | Proxy (or cluster) endpoint. May be empty when the secret holds `host`. |
//! | `MOSAIC_DB_READ_HOST` | The proxy's read-only endpoint (Aurora replicas): the search's candidate reads go there, with the same port, database, login and TLS. Unset: everything on `MOSAIC_DB_HOST`. |
//! | `MOSAIC_DB_PORT` | Default 5432, or the secret's `port`. |
//! | `MOSAIC_DB_NAME` | Database name; else the secret's `dbname`; else `mosaic`. |
//! | `MOSAIC_DB_USER` | Database user for IAM authentication (the secret brings its own). |
//! | `MOSAIC_DB_SECRET_ARN` | Secrets Manager secret (RDS format: `username`, `password`, optional `host`, `port`, `dbname`). |
//! | `MOSAIC_DB_IAM_AUTH` | `true`: log in with IAM tokens instead of a secret. |
//! | `MOSAIC_DB_SSLMODE` | `require` (default) or `verify-full`, both verified TLS. Plain TCP exists only for the local database (`MOSAIC_DATABASE_URL`). |
//! | `MOSAIC_DB_CA_FILE` | An extra PEM CA file to trust (private CAs, tests). |
//!
//! No `options` startup parameter is sent: RDS Proxy refuses it. Searches
//! bound their statements with `SET LOCAL statement_timeout` inside their
//! transaction ([`crate::search::arms::apply_settings`]), which does not pin
//! proxy connections; every operation is also bounded by the invocation
//! deadline. A statement still running when its operation is abandoned is
//! cancelled with a cancel request over the same verified TLS
//! ([`RdsConnect::canceller`], [`crate::db::Conn`]).

use crate::aws::secrets::{DbSecret, SecretCache, SecretError};
use crate::aws::SdkConfig;
use crate::db::Canceller;
use crate::tls::{self, MakeRustlsConnect, Roots};
use aws_credential_types::provider::{ProvideCredentials, SharedCredentialsProvider};
use aws_credential_types::Credentials;
use deadpool_postgres::{Connect, Manager, ManagerConfig, RecyclingMethod};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};
use tokio::sync::Mutex;
use tokio::task::JoinHandle;
use tokio_postgres::error::SqlState;
use tokio_postgres::{Client, Config};

/// How long an IAM token is reused (it is valid for 15 minutes; a new
/// connection never gets one with less than 5 minutes left).
pub const IAM_TOKEN_REUSE: Duration = Duration::from_secs(10 * 60);
/// Lifetime written into IAM tokens (the service's maximum).
pub const IAM_TOKEN_LIFETIME: Duration = Duration::from_secs(15 * 60);

/// How the function logs in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RdsAuth {
    /// The Secrets Manager secret (ARN or name).
    Secret(String),
    /// IAM authentication tokens for `MOSAIC_DB_USER`.
    Iam,
}

/// The AWS database settings (see the module documentation).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RdsSettings {
    pub host: Option<String>,
    /// The read-only endpoint of the search's candidate reads.
    pub read_host: Option<String>,
    pub port: Option<u16>,
    pub dbname: Option<String>,
    pub user: Option<String>,
    pub auth: RdsAuth,
    pub extra_ca: Option<PathBuf>,
}

impl RdsSettings {
    /// `Ok(None)` when nothing AWS-specific is configured (no host, no
    /// secret, no IAM).
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<Option<Self>, String> {
        let set = |k: &str| crate::profile::setting(&get, k);
        let host = set("MOSAIC_DB_HOST");
        let secret = set("MOSAIC_DB_SECRET_ARN");
        let iam = crate::profile::flag("MOSAIC_DB_IAM_AUTH", set("MOSAIC_DB_IAM_AUTH").as_deref())?;
        if host.is_none() && secret.is_none() && !iam {
            return Ok(None);
        }
        match set("MOSAIC_DB_SSLMODE")
            .map(|s| s.to_ascii_lowercase())
            .as_deref()
        {
            None | Some("require") | Some("verify-full") => {}
            Some(other) => {
                return Err(format!(
                    "MOSAIC_DB_SSLMODE={other:?}: the AWS database connection is always verified \
                     TLS (`require` or `verify-full`); plain TCP is only for a local database \
                     given as MOSAIC_DATABASE_URL"
                ))
            }
        }
        let port = set("MOSAIC_DB_PORT")
            .map(|p| {
                p.parse::<u16>()
                    .ok()
                    .filter(|&p| p > 0)
                    .ok_or_else(|| format!("MOSAIC_DB_PORT={p:?} is not a TCP port"))
            })
            .transpose()?;
        let user = set("MOSAIC_DB_USER");
        let auth = match (secret, iam) {
            (Some(_), true) => {
                return Err(
                    "MOSAIC_DB_SECRET_ARN and MOSAIC_DB_IAM_AUTH=true are both set; \
                            choose one way to log in"
                        .into(),
                )
            }
            (Some(arn), false) => RdsAuth::Secret(arn),
            (None, true) => {
                if user.is_none() {
                    return Err("MOSAIC_DB_IAM_AUTH=true needs MOSAIC_DB_USER".into());
                }
                if host.is_none() {
                    return Err("MOSAIC_DB_IAM_AUTH=true needs MOSAIC_DB_HOST".into());
                }
                RdsAuth::Iam
            }
            (None, false) => {
                return Err(
                    "MOSAIC_DB_HOST is set but no login is: set MOSAIC_DB_SECRET_ARN \
                            or MOSAIC_DB_IAM_AUTH=true"
                        .into(),
                )
            }
        };
        Ok(Some(Self {
            host,
            read_host: set("MOSAIC_DB_READ_HOST"),
            port,
            dbname: set("MOSAIC_DB_NAME"),
            user,
            auth,
            extra_ca: set("MOSAIC_DB_CA_FILE").map(PathBuf::from),
        }))
    }

    /// The base driver configuration: everything but the login.
    fn base_config(&self) -> Config {
        let mut cfg = Config::new();
        if let Some(host) = &self.host {
            cfg.host(host);
        }
        if let Some(port) = self.port {
            cfg.port(port);
        }
        if let Some(db) = &self.dbname {
            cfg.dbname(db);
        }
        if let Some(user) = &self.user {
            cfg.user(user);
        }
        cfg.ssl_mode(tokio_postgres::config::SslMode::Require);
        cfg.connect_timeout(Duration::from_secs(5));
        cfg.application_name("mosaic");
        cfg
    }
}

// ------------------------------------------------------------ IAM tokens

/// An RDS IAM authentication token: the SigV4-presigned
/// `https://{host}:{port}/?Action=connect&DBUser={user}` without its scheme,
/// signed for service `rds-db` in `region`, valid for 15 minutes from `time`.
pub fn auth_token(
    host: &str,
    port: u16,
    user: &str,
    region: &str,
    credentials: &Credentials,
    time: SystemTime,
) -> Result<String, String> {
    use aws_sigv4::http_request::{
        sign, SignableBody, SignableRequest, SignatureLocation, SigningSettings,
    };
    use aws_sigv4::sign::v4;

    let identity = credentials.clone().into();
    let mut settings = SigningSettings::default();
    settings.signature_location = SignatureLocation::QueryParams;
    settings.expires_in = Some(IAM_TOKEN_LIFETIME);
    let params = v4::SigningParams::builder()
        .identity(&identity)
        .region(region)
        .name("rds-db")
        .time(time)
        .settings(settings)
        .build()
        .map_err(|e| format!("IAM token: {e}"))?
        .into();
    let user = encode_query_value(user);
    let url = format!("https://{host}:{port}/?Action=connect&DBUser={user}");
    let signable = SignableRequest::new("GET", &url, std::iter::empty(), SignableBody::Bytes(&[]))
        .map_err(|e| format!("IAM token: {e}"))?;
    let (instructions, _) = sign(signable, &params)
        .map_err(|e| format!("IAM token: {e}"))?
        .into_parts();
    let mut request = http::Request::builder()
        .uri(&url)
        .body(())
        .map_err(|e| format!("IAM token: {e}"))?;
    instructions.apply_to_request_http1x(&mut request);
    let signed = request.uri().to_string();
    Ok(signed.trim_start_matches("https://").to_string())
}

/// Percent-encodes a query value the way SigV4 canonicalises it.
fn encode_query_value(v: &str) -> String {
    let mut out = String::with_capacity(v.len());
    for b in v.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(b as char)
            }
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// IAM tokens for one host, port and user, reused while fresh.
pub struct IamTokens {
    credentials: SharedCredentialsProvider,
    region: String,
    host: String,
    port: u16,
    user: String,
    cached: Mutex<Option<(String, Instant)>>,
}

impl IamTokens {
    /// Tokens for another host of the same proxy (its read-only endpoint):
    /// a token is signed for the host it is presented to.
    pub fn for_host(&self, host: &str) -> Self {
        Self {
            credentials: self.credentials.clone(),
            region: self.region.clone(),
            host: host.to_string(),
            port: self.port,
            user: self.user.clone(),
            cached: Mutex::new(None),
        }
    }

    pub fn new(sdk: &SdkConfig, host: &str, port: u16, user: &str) -> Result<Self, String> {
        let credentials = sdk
            .credentials_provider()
            .ok_or("IAM authentication needs AWS credentials, and none are configured")?;
        let region = sdk
            .region()
            .ok_or("IAM authentication needs a region (AWS_REGION)")?
            .to_string();
        Ok(Self {
            credentials,
            region,
            host: host.to_string(),
            port,
            user: user.to_string(),
            cached: Mutex::new(None),
        })
    }

    /// A token with at least five minutes left; `fresh` forces a new one.
    pub async fn token(&self, fresh: bool) -> Result<String, String> {
        let mut cached = self.cached.lock().await;
        if let Some((token, made)) = cached.as_ref() {
            if !fresh && made.elapsed() < IAM_TOKEN_REUSE {
                return Ok(token.clone());
            }
        }
        let creds = self
            .credentials
            .provide_credentials()
            .await
            .map_err(|e| format!("AWS credentials for the IAM token: {e}"))?;
        let token = auth_token(
            &self.host,
            self.port,
            &self.user,
            &self.region,
            &creds,
            SystemTime::now(),
        )?;
        *cached = Some((token.clone(), Instant::now()));
        Ok(token)
    }
}

// ------------------------------------------------------------ the connector

/// Where the password comes from.
pub enum Login {
    Secret(Arc<SecretCache>),
    Iam(Arc<IamTokens>),
}

/// The pool's connector: base configuration, TLS, login (see the module
/// documentation).
pub struct RdsConnect {
    base: Config,
    /// The verified TLS configuration of every connection, and of every
    /// cancel request sent for one ([`RdsConnect::canceller`]).
    tls_config: Arc<rustls::ClientConfig>,
    tls: MakeRustlsConnect,
    login: Login,
    /// When the login was last fetched afresh after a refusal: a login that
    /// stays wrong is not fetched again on every connection attempt.
    last_refresh: std::sync::Mutex<Option<Instant>>,
}

/// The least time between two forced login refreshes.
pub const LOGIN_REFRESH_INTERVAL: Duration = Duration::from_secs(30);

impl RdsConnect {
    pub fn new(settings: &RdsSettings, login: Login) -> Result<Self, String> {
        let config = tls::client_config(Roots::Public, settings.extra_ca.as_deref())?;
        Ok(Self {
            base: settings.base_config(),
            tls: MakeRustlsConnect::new(config.clone()),
            tls_config: config,
            login,
            last_refresh: std::sync::Mutex::new(None),
        })
    }

    /// How the pool's connections cancel an abandoned statement: a cancel
    /// request is a new connection to the same endpoint, so it takes the
    /// same verified TLS (RDS Proxy and a TLS-only server refuse plain TCP).
    pub fn canceller(&self) -> Canceller {
        Canceller::Tls(self.tls_config.clone())
    }

    /// The connector of the read-only endpoint (`MOSAIC_DB_READ_HOST`), if
    /// one is configured: the same database, user, TLS and secret (one
    /// cache, fetched once); IAM tokens are signed for the reader's host.
    pub fn reader(&self, settings: &RdsSettings) -> Option<RdsConnect> {
        let host = settings.read_host.as_deref()?;
        let at_reader = RdsSettings {
            host: Some(host.to_string()),
            ..settings.clone()
        };
        let login = match &self.login {
            Login::Secret(cache) => Login::Secret(cache.clone()),
            Login::Iam(tokens) => Login::Iam(Arc::new(tokens.for_host(host))),
        };
        Some(Self {
            base: at_reader.base_config(),
            tls_config: self.tls_config.clone(),
            tls: self.tls.clone(),
            login,
            last_refresh: std::sync::Mutex::new(None),
        })
    }

    /// A pool manager that connects through this connector.
    pub fn into_manager(self) -> Manager {
        let base = self.base.clone();
        Manager::from_connect(
            base,
            self,
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        )
    }

    /// Fills the login into `cfg`. `fresh` drops whatever is cached first.
    /// `Err` carries why no login could be had (logged by the caller).
    async fn apply_login(&self, cfg: &mut Config, fresh: bool) -> Result<(), String> {
        let applied = self.apply_credentials(cfg, fresh).await;
        if cfg.get_dbname().is_none() {
            cfg.dbname("mosaic");
        }
        applied
    }

    async fn apply_credentials(&self, cfg: &mut Config, fresh: bool) -> Result<(), String> {
        match &self.login {
            Login::Secret(cache) => {
                if fresh {
                    cache.invalidate().await;
                }
                let secret: Arc<DbSecret> = cache.get().await.map_err(|e| e.to_string())?;
                secret.apply_to(cfg).map_err(|e| e.to_string())
            }
            Login::Iam(tokens) => {
                let token = tokens.token(fresh).await?;
                cfg.password(token);
                Ok(())
            }
        }
    }

    async fn open(&self, cfg: &Config) -> Result<(Client, JoinHandle<()>), tokio_postgres::Error> {
        let (client, connection) = cfg.connect(self.tls.clone()).await?;
        let handle = tokio::spawn(async move {
            if let Err(e) = connection.await {
                tracing::warn!(error = %e, "database connection closed");
            }
        });
        Ok((client, handle))
    }

    async fn connect_once(&self) -> Result<(Client, JoinHandle<()>), tokio_postgres::Error> {
        let mut cfg = self.base.clone();
        if let Err(why) = self.apply_login(&mut cfg, false).await {
            // Without a login the server's refusal is the error callers see.
            tracing::warn!(error = %why, "no database login available");
        }
        match self.open(&cfg).await {
            Err(e) if is_login_refused(&e) && self.may_refresh() => {
                tracing::warn!(error = %e, "database refused the login; fetching a fresh one");
                let mut cfg = self.base.clone();
                match self.apply_login(&mut cfg, true).await {
                    Ok(()) => self.open(&cfg).await,
                    Err(why) => {
                        tracing::warn!(error = %why, "could not refresh the database login");
                        Err(e)
                    }
                }
            }
            other => other,
        }
    }
}

impl RdsConnect {
    /// Whether a forced refresh is allowed now (at most one per
    /// [`LOGIN_REFRESH_INTERVAL`]); records it when it is.
    fn may_refresh(&self) -> bool {
        let mut last = self.last_refresh.lock().unwrap_or_else(|p| p.into_inner());
        match *last {
            Some(t) if t.elapsed() < LOGIN_REFRESH_INTERVAL => false,
            _ => {
                *last = Some(Instant::now());
                true
            }
        }
    }
}

impl Connect for RdsConnect {
    fn connect(
        &self,
        _pg_config: &Config,
    ) -> futures_util::future::BoxFuture<'_, Result<(Client, JoinHandle<()>), tokio_postgres::Error>>
    {
        Box::pin(self.connect_once())
    }
}

/// Whether the server refused the login (wrong or expired password or
/// token), as opposed to being unreachable.
pub fn is_login_refused(e: &tokio_postgres::Error) -> bool {
    matches!(
        e.code(),
        Some(c) if *c == SqlState::INVALID_PASSWORD
            || *c == SqlState::INVALID_AUTHORIZATION_SPECIFICATION
    )
}

/// The connector for `settings`: fetches the secret once now (so a missing
/// or unreadable secret fails the start-up with a clear message, while an
/// outage or a timeout of Secrets Manager only postpones the fetch to the
/// first connection), or prepares IAM tokens.
pub async fn connector(
    settings: &RdsSettings,
    sdk: &SdkConfig,
    secret_policy: crate::aws::CallPolicy,
) -> Result<RdsConnect, String> {
    let login = match &settings.auth {
        RdsAuth::Secret(id) => {
            let cache =
                SecretCache::new(crate::aws::secrets::client(sdk), id.clone(), secret_policy);
            match cache.get().await {
                Ok(secret) if settings.host.is_none() && secret.host.is_none() => {
                    return Err(
                        "no database host: set MOSAIC_DB_HOST or use a secret with `host`".into(),
                    );
                }
                Ok(_) => {}
                // An outage of Secrets Manager degrades each request (every
                // connection fetches the secret anew), not the container.
                Err(e @ (SecretError::Unavailable(_) | SecretError::Timeout(_))) => {
                    tracing::warn!(error = %e, "database secret not read at start-up; each connection will fetch it");
                }
                Err(e) => return Err(e.to_string()),
            }
            Login::Secret(Arc::new(cache))
        }
        RdsAuth::Iam => {
            let host = settings.host.as_deref().unwrap_or_default();
            let user = settings.user.as_deref().unwrap_or_default();
            Login::Iam(Arc::new(IamTokens::new(
                sdk,
                host,
                settings.port.unwrap_or(5432),
                user,
            )?))
        }
    };
    RdsConnect::new(settings, login)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn settings(vars: &[(&str, &str)]) -> Result<Option<RdsSettings>, String> {
        let map: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        RdsSettings::from_lookup(|k| map.get(k).cloned())
    }

    fn at(secs: u64) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(secs)
    }

    /// Known answers computed with botocore's `generate_db_auth_token`
    /// (the first is botocore's own test vector).
    #[test]
    fn iam_tokens_match_the_reference_implementation() {
        // 2016-11-07T17:39:33Z
        let t = at(1_478_540_373);
        let creds = Credentials::new("akid", "skid", None, None, "test");
        let token = auth_token(
            "prod-instance.us-east-1.rds.amazonaws.com",
            3306,
            "someusername",
            "us-east-1",
            &creds,
            t,
        )
        .unwrap();
        assert!(
            token.starts_with(
                "prod-instance.us-east-1.rds.amazonaws.com:3306/?Action=connect&DBUser=someusername&"
            ),
            "{token}"
        );
        assert!(token.contains("X-Amz-Expires=900"), "{token}");
        assert!(
            token.contains("X-Amz-Credential=akid%2F20161107%2Fus-east-1%2Frds-db%2Faws4_request")
        );
        assert!(
            token.ends_with(
                "X-Amz-Signature=d1138cdbc0ca63eec012ec0fc6c2267e03642168f5884a7795320d4c18374c61"
            ),
            "{token}"
        );

        let creds = Credentials::new(
            "AKIDEXAMPLE",
            "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
            Some("SeSsIoNtOkEn".into()),
            None,
            "test",
        );
        let token = auth_token(
            "my-proxy.proxy-abc.eu-west-1.rds.amazonaws.com",
            5432,
            "mosaic_runtime",
            "eu-west-1",
            &creds,
            t,
        )
        .unwrap();
        // The session token is signed (it is in the canonical query), so
        // the signature matches although the parameter order differs.
        assert!(
            token.contains("&X-Amz-Security-Token=SeSsIoNtOkEn"),
            "{token}"
        );
        assert!(
            token.contains(
                "&X-Amz-Signature=18c82a22df03812eff0877954fff05e1f4593eb60f8dc437137a635a087b5eb1"
            ),
            "{token}"
        );
        assert!(
            !token.contains("wJalrXUtnFEMI"),
            "the secret key never appears"
        );
    }

    #[test]
    fn settings_choose_one_login_and_always_tls() {
        assert_eq!(settings(&[]).unwrap(), None);
        let s = settings(&[
            ("MOSAIC_DB_HOST", "p.proxy-x.us-east-1.rds.amazonaws.com"),
            (
                "MOSAIC_DB_SECRET_ARN",
                "arn:aws:secretsmanager:us-east-1:1:secret:db",
            ),
            ("MOSAIC_DB_IAM_AUTH", "false"),
            ("MOSAIC_DB_SSLMODE", "require"),
        ])
        .unwrap()
        .unwrap();
        assert!(matches!(s.auth, RdsAuth::Secret(_)));
        let s = settings(&[
            ("MOSAIC_DB_HOST", "p"),
            ("MOSAIC_DB_SECRET_ARN", ""),
            ("MOSAIC_DB_IAM_AUTH", "true"),
            ("MOSAIC_DB_USER", "mosaic_runtime"),
            ("MOSAIC_DB_PORT", "6432"),
        ])
        .unwrap()
        .unwrap();
        assert_eq!((s.auth, s.port), (RdsAuth::Iam, Some(6432)));
        assert_eq!(s.read_host, None);
        let s = settings(&[
            ("MOSAIC_DB_HOST", "p"),
            (
                "MOSAIC_DB_READ_HOST",
                "r.endpoint.proxy-x.us-east-1.rds.amazonaws.com",
            ),
            ("MOSAIC_DB_SECRET_ARN", "s"),
        ])
        .unwrap()
        .unwrap();
        assert_eq!(
            s.read_host.as_deref(),
            Some("r.endpoint.proxy-x.us-east-1.rds.amazonaws.com")
        );

        for (vars, needle) in [
            (vec![("MOSAIC_DB_HOST", "p")], "no login"),
            (
                vec![("MOSAIC_DB_IAM_AUTH", "true"), ("MOSAIC_DB_HOST", "p")],
                "MOSAIC_DB_USER",
            ),
            (
                vec![
                    ("MOSAIC_DB_IAM_AUTH", "true"),
                    ("MOSAIC_DB_SECRET_ARN", "s"),
                ],
                "choose one",
            ),
            (
                vec![
                    ("MOSAIC_DB_SECRET_ARN", "s"),
                    ("MOSAIC_DB_SSLMODE", "disable"),
                ],
                "always verified TLS",
            ),
            (
                vec![("MOSAIC_DB_SECRET_ARN", "s"), ("MOSAIC_DB_PORT", "0")],
                "MOSAIC_DB_PORT",
            ),
        ] {
            let e = settings(&vars).unwrap_err();
            assert!(e.contains(needle), "{vars:?}: {e}");
        }
    }

    #[test]
    fn the_reader_connects_to_the_read_only_endpoint_with_the_writer_login() {
        let sdk = SdkConfig::builder()
            .region(aws_config::Region::new("eu-west-1"))
            .credentials_provider(SharedCredentialsProvider::new(Credentials::new(
                "akid", "skid", None, None, "test",
            )))
            .build();
        let iam = [
            ("MOSAIC_DB_HOST", "w.proxy-x.eu-west-1.rds.amazonaws.com"),
            ("MOSAIC_DB_IAM_AUTH", "true"),
            ("MOSAIC_DB_USER", "mosaic_runtime"),
        ];
        let s = settings(&iam).unwrap().unwrap();
        let tokens = IamTokens::new(&sdk, s.host.as_deref().unwrap(), 5432, "mosaic_runtime");
        let writer = RdsConnect::new(&s, Login::Iam(Arc::new(tokens.unwrap()))).unwrap();
        assert!(writer.reader(&s).is_none(), "no read host, no reader");

        let read_host = "r.endpoint.proxy-x.eu-west-1.rds.amazonaws.com";
        let s = settings(&[iam.as_slice(), &[("MOSAIC_DB_READ_HOST", read_host)]].concat())
            .unwrap()
            .unwrap();
        let reader = writer.reader(&s).unwrap();
        assert_eq!(
            reader.base.get_hosts(),
            &[tokio_postgres::config::Host::Tcp(read_host.into())]
        );
        assert_eq!(reader.base.get_user(), Some("mosaic_runtime"));
        assert_eq!(
            reader.base.get_ssl_mode(),
            tokio_postgres::config::SslMode::Require
        );
        match &reader.login {
            Login::Iam(t) => assert_eq!(t.host, read_host, "tokens are signed for the reader"),
            Login::Secret(_) => panic!("the writer's login kind"),
        }
    }

    #[test]
    fn the_base_configuration_requires_tls_and_sends_no_options() {
        let s = settings(&[("MOSAIC_DB_HOST", "h"), ("MOSAIC_DB_SECRET_ARN", "s")])
            .unwrap()
            .unwrap();
        let cfg = s.base_config();
        assert_eq!(cfg.get_ssl_mode(), tokio_postgres::config::SslMode::Require);
        assert_eq!(cfg.get_options(), None);
        assert!(cfg.get_password().is_none());
    }
}
