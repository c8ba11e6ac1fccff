//! The database login from a Secrets Manager secret in RDS format, fetched
//! once per container and again only when asked to.
//!
//! An RDS-format secret is a JSON object with `username` and `password` and,
//! for secrets that describe a whole connection, `host`, `port`, `dbname`
//! (plus `engine` and identifiers we ignore). An RDS-managed master secret
//! holds only `username` and `password`, so the connection target usually
//! comes from configuration; and behind RDS Proxy the configured proxy
//! endpoint must win over the cluster host a secret may name. Hence
//! [`DbSecret::apply_to`]: the login always from the secret, host, port and
//! database from configuration when set, else from the secret.
//!
//! [`SecretCache::get`] fetches on first use and serves the cached value
//! after that; concurrent first callers share one fetch. After the database
//! rejects the login (the secret was rotated), call
//! [`SecretCache::invalidate`] and reconnect: the next `get` fetches again.
//!
//! The password never appears in `Debug` output, errors or logs.

use super::{sdk_failure, with_retries, CallPolicy, FailureKind, SdkConfig};
use aws_sdk_secretsmanager::config::retry::RetryConfig;
use aws_sdk_secretsmanager::Client;
use std::sync::Arc;
use tokio::sync::Mutex;

/// A Secrets Manager client for this module: the SDK's own retries are off
/// (the [`CallPolicy`] retries inside its deadline instead).
pub fn client(sdk: &SdkConfig) -> Client {
    let conf = aws_sdk_secretsmanager::config::Builder::from(sdk)
        .retry_config(RetryConfig::disabled())
        .build();
    Client::from_conf(conf)
}

/// Why the database secret could not be had. Messages name fields and
/// failure kinds, never values.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SecretError {
    #[error("database secret unavailable: {0}")]
    Unavailable(String),
    #[error("database secret fetch timed out after {0} ms")]
    Timeout(u64),
    #[error("database secret is unusable: {0}")]
    Invalid(String),
}

/// A database login from an RDS-format secret.
#[derive(Clone, PartialEq, Eq)]
pub struct DbSecret {
    pub username: String,
    password: String,
    pub host: Option<String>,
    pub port: Option<u16>,
    pub dbname: Option<String>,
}

impl std::fmt::Debug for DbSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DbSecret")
            .field("username", &self.username)
            .field("password", &"<redacted>")
            .field("host", &self.host)
            .field("port", &self.port)
            .field("dbname", &self.dbname)
            .finish()
    }
}

impl DbSecret {
    /// A login without a connection target.
    pub fn new(username: impl Into<String>, password: impl Into<String>) -> Self {
        Self {
            username: username.into(),
            password: password.into(),
            host: None,
            port: None,
            dbname: None,
        }
    }

    pub fn password(&self) -> &str {
        &self.password
    }

    /// Reads an RDS-format secret string. `port` may be a number or a
    /// numeric string; empty optional fields count as absent.
    pub fn parse(secret: &str) -> Result<Self, SecretError> {
        // Parse into a Value first: serde's own messages can quote values.
        let value: serde_json::Value = serde_json::from_str(secret)
            .map_err(|_| SecretError::Invalid("not a JSON object".into()))?;
        let obj = value
            .as_object()
            .ok_or_else(|| SecretError::Invalid("not a JSON object".into()))?;
        let text = |key: &str| -> Result<Option<String>, SecretError> {
            match obj.get(key) {
                None | Some(serde_json::Value::Null) => Ok(None),
                Some(serde_json::Value::String(s)) if s.is_empty() => Ok(None),
                Some(serde_json::Value::String(s)) => Ok(Some(s.clone())),
                Some(_) => Err(SecretError::Invalid(format!("`{key}` is not a string"))),
            }
        };
        let required = |key: &str| {
            text(key)?.ok_or_else(|| SecretError::Invalid(format!("`{key}` is missing")))
        };
        let port = match obj.get("port") {
            None | Some(serde_json::Value::Null) => None,
            Some(serde_json::Value::Number(n)) => Some(n.as_u64()),
            Some(serde_json::Value::String(s)) if s.trim().is_empty() => None,
            Some(serde_json::Value::String(s)) => Some(s.trim().parse::<u64>().ok()),
            Some(_) => Some(None),
        }
        .map(|p| {
            p.and_then(|p| u16::try_from(p).ok())
                .filter(|&p| p > 0)
                .ok_or_else(|| SecretError::Invalid("`port` is not a TCP port".into()))
        })
        .transpose()?;
        Ok(Self {
            username: required("username")?,
            password: required("password")?,
            host: text("host")?,
            port,
            dbname: text("dbname")?,
        })
    }

    /// Puts the login into `cfg`, and the secret's host, port and database
    /// name where `cfg` has none from configuration. Fails when no host is
    /// known from either.
    pub fn apply_to(&self, cfg: &mut tokio_postgres::Config) -> Result<(), SecretError> {
        cfg.user(&self.username);
        cfg.password(&self.password);
        if cfg.get_hosts().is_empty() {
            match &self.host {
                Some(host) => {
                    cfg.host(host);
                }
                None => {
                    return Err(SecretError::Invalid(
                        "no database host: configure one (MOSAIC_DB_HOST) or use a secret \
                         with `host`"
                            .into(),
                    ))
                }
            }
        }
        if cfg.get_ports().is_empty() {
            if let Some(port) = self.port {
                cfg.port(port);
            }
        }
        if cfg.get_dbname().is_none() {
            if let Some(dbname) = &self.dbname {
                cfg.dbname(dbname);
            }
        }
        Ok(())
    }
}

/// The database secret, fetched once per container and on demand after
/// [`invalidate`](Self::invalidate).
pub struct SecretCache {
    client: Client,
    secret_id: String,
    policy: CallPolicy,
    slot: Mutex<Option<Arc<DbSecret>>>,
}

impl std::fmt::Debug for SecretCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SecretCache")
            .field("secret_id", &self.secret_id)
            .field("policy", &self.policy)
            .finish_non_exhaustive()
    }
}

impl SecretCache {
    pub fn new(client: Client, secret_id: impl Into<String>, policy: CallPolicy) -> Self {
        Self {
            client,
            secret_id: secret_id.into(),
            policy,
            slot: Mutex::new(None),
        }
    }

    /// The cached secret, fetched first if there is none. Callers that
    /// arrive during a fetch wait for it rather than fetching again.
    pub async fn get(&self) -> Result<Arc<DbSecret>, SecretError> {
        let mut slot = self.slot.lock().await;
        if let Some(secret) = slot.as_ref() {
            return Ok(secret.clone());
        }
        let secret = Arc::new(self.fetch().await?);
        *slot = Some(secret.clone());
        Ok(secret)
    }

    /// Forgets the cached secret; the next [`get`](Self::get) fetches it
    /// again. Call it after the database rejected the login.
    pub async fn invalidate(&self) {
        *self.slot.lock().await = None;
    }

    async fn fetch(&self) -> Result<DbSecret, SecretError> {
        let id = self.secret_id.as_str();
        let secret_string = with_retries(&self.policy, "secret", || async {
            let out = self
                .client
                .get_secret_value()
                .secret_id(id)
                .send()
                .await
                .map_err(|e| sdk_failure("secret", &e))?;
            out.secret_string
                .ok_or(FailureKind::Malformed)
                .inspect_err(|_| tracing::warn!("the database secret has no SecretString"))
        })
        .await
        .map_err(|f| match f.kind {
            FailureKind::Timeout => SecretError::Timeout(self.policy.deadline_ms()),
            FailureKind::Malformed => SecretError::Invalid("the secret holds no string".into()),
            k if k.is_retryable() => SecretError::Unavailable(f.to_string()),
            _ => SecretError::Invalid(f.to_string()),
        })?;
        let secret = DbSecret::parse(&secret_string)?;
        tracing::info!(username = %secret.username, has_host = secret.host.is_some(),
                       "database secret fetched");
        Ok(secret)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rds_format_parses_with_optional_target() {
        let s = DbSecret::parse(
            r#"{"engine":"postgres","username":"app","password":"pw","host":"db.example","port":"5432","dbname":"mosaic"}"#,
        )
        .unwrap();
        assert_eq!(s.username, "app");
        assert_eq!(s.password(), "pw");
        assert_eq!(s.host.as_deref(), Some("db.example"));
        assert_eq!(s.port, Some(5432));
        assert_eq!(s.dbname.as_deref(), Some("mosaic"));

        let m = DbSecret::parse(r#"{"username":"master","password":"pw"}"#).unwrap();
        assert_eq!((m.host, m.port, m.dbname), (None, None, None));
    }

    #[test]
    fn bad_secrets_name_the_field_not_the_value() {
        for (json, field) in [
            (r#"{"password":"hunter2"}"#, "username"),
            (r#"{"username":"u"}"#, "password"),
            (
                r#"{"username":"u","password":"hunter2","port":"hunter2"}"#,
                "port",
            ),
            (
                r#"{"username":"u","password":"hunter2","port":70000}"#,
                "port",
            ),
            (r#"{"username":"u","password":7}"#, "password"),
        ] {
            let e = DbSecret::parse(json).unwrap_err().to_string();
            assert!(e.contains(field), "{e}");
            assert!(!e.contains("hunter2"), "{e}");
        }
        let e = DbSecret::parse("hunter2 is not json")
            .unwrap_err()
            .to_string();
        assert!(!e.contains("hunter2"), "{e}");
    }

    #[test]
    fn debug_redacts_the_password() {
        let s = DbSecret::new("app", "hunter2");
        let shown = format!("{s:?} {s:#?}");
        assert!(
            !shown.contains("hunter2") && shown.contains("<redacted>"),
            "{shown}"
        );
    }

    #[test]
    fn configuration_wins_over_the_secret_target() {
        let mut secret = DbSecret::new("app", "pw");
        secret.host = Some("cluster.example".into());
        secret.port = Some(5433);
        secret.dbname = Some("fromsecret".into());

        let mut cfg = tokio_postgres::Config::new();
        cfg.host("proxy.example").dbname("mosaic");
        secret.apply_to(&mut cfg).unwrap();
        assert_eq!(cfg.get_user(), Some("app"));
        assert_eq!(cfg.get_password(), Some(&b"pw"[..]));
        assert_eq!(
            cfg.get_hosts(),
            &[tokio_postgres::config::Host::Tcp("proxy.example".into())]
        );
        assert_eq!(cfg.get_ports(), &[5433]);
        assert_eq!(cfg.get_dbname(), Some("mosaic"));

        let mut empty = tokio_postgres::Config::new();
        assert!(DbSecret::new("app", "pw").apply_to(&mut empty).is_err());
    }
}
