//! The error type of every operation, with stable machine codes.
//!
//! Transports map an [`Error`] to their envelope in exactly one place
//! ([`Error::status`] and [`Error::body`]); nothing else decides status codes.
//! Refusals are deliberately uninformative: every scope refusal is the same
//! [`Error::NotFound`] with the same body, so a caller cannot learn whether an
//! event exists, belongs to someone else, or did not grant a product.

use serde_json::{json, Value};

/// Stable error codes, part of the public contract.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Code {
    InvalidJson,
    InvalidArgument,
    UnknownField,
    PayloadTooLarge,
    Unauthenticated,
    NotFound,
    Unavailable,
    Internal,
}

impl Code {
    pub fn as_str(self) -> &'static str {
        match self {
            Code::InvalidJson => "invalid_json",
            Code::InvalidArgument => "invalid_argument",
            Code::UnknownField => "unknown_field",
            Code::PayloadTooLarge => "payload_too_large",
            Code::Unauthenticated => "unauthenticated",
            Code::NotFound => "not_found",
            Code::Unavailable => "unavailable",
            Code::Internal => "internal",
        }
    }

    pub fn status(self) -> u16 {
        match self {
            Code::InvalidJson | Code::InvalidArgument | Code::UnknownField => 400,
            Code::PayloadTooLarge => 413,
            Code::Unauthenticated => 401,
            Code::NotFound => 404,
            Code::Unavailable => 503,
            Code::Internal => 500,
        }
    }
}

/// A response as JSON. Serialising the response types cannot fail short
/// of a bug, which is an [`Error::Internal`].
pub fn to_json<T: serde::Serialize>(v: &T) -> Result<Value, Error> {
    serde_json::to_value(v).map_err(|e| Error::Internal(e.to_string()))
}

/// The one generic refusal message.
pub const NOT_FOUND_MESSAGE: &str = "no such retrieval scope or product";

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Bad input (or an unauthenticated caller): a 4xx, naming the field at
    /// fault where one is. Nothing was written.
    #[error("{message}")]
    Invalid {
        code: Code,
        field: Option<String>,
        message: String,
    },
    /// Every scope refusal. Carries nothing on purpose.
    #[error("not found")]
    NotFound,
    /// The database or the receipt write is unavailable; nothing was served.
    /// The detail is logged, never returned.
    #[error("unavailable: {0}")]
    Unavailable(String),
    /// A bug. The detail is logged with the request id, never returned.
    #[error("internal: {0}")]
    Internal(String),
}

/// The most characters of a caller's key an error message repeats.
pub const SHOWN_KEY_CHARS: usize = 64;

/// A caller's key (or name) as an error repeats it ([`Error::unknown_field`],
/// a key named twice, a tool name): without control or bidirectional
/// characters, cut at [`SHOWN_KEY_CHARS`] characters and `…`.
pub fn shown_key(key: &str) -> String {
    let mut kept = key
        .chars()
        .filter(|c| !c.is_control() && !crate::search::request::is_bidi_control(*c));
    let mut shown: String = kept.by_ref().take(SHOWN_KEY_CHARS).collect();
    if kept.next().is_some() {
        shown.push('…');
    }
    shown
}

impl Error {
    pub fn invalid(field: &str, message: impl Into<String>) -> Self {
        Error::Invalid {
            code: Code::InvalidArgument,
            field: Some(field.to_string()),
            message: message.into(),
        }
    }

    /// A key the operation does not take. The key is the caller's own text,
    /// so the envelope names it only as far as it is safe to show: control
    /// and bidirectional-override characters left out, at most
    /// [`SHOWN_KEY_CHARS`] characters, then `…`.
    pub fn unknown_field(field: &str) -> Self {
        let field = shown_key(field);
        Error::Invalid {
            code: Code::UnknownField,
            message: format!("unknown field `{field}`"),
            field: Some(field),
        }
    }

    /// [`Error::unknown_field`] for a key this service knows elsewhere,
    /// with where it goes (`hint`, written by the service, never by the
    /// caller).
    pub fn misplaced_field(field: &str, hint: &str) -> Self {
        match Self::unknown_field(field) {
            Error::Invalid {
                code,
                field,
                message,
            } => Error::Invalid {
                code,
                field,
                message: format!("{message}: {hint}"),
            },
            other => other,
        }
    }

    pub fn invalid_json(message: impl Into<String>) -> Self {
        Error::Invalid {
            code: Code::InvalidJson,
            field: None,
            message: message.into(),
        }
    }

    pub fn payload_too_large(limit: usize) -> Self {
        Error::Invalid {
            code: Code::PayloadTooLarge,
            field: None,
            message: format!("request body is larger than {limit} bytes"),
        }
    }

    /// The transport could not establish who is calling (no authenticated
    /// principal, and anonymous calls are not allowed). Nothing ran.
    pub fn unauthenticated(message: impl Into<String>) -> Self {
        Error::Invalid {
            code: Code::Unauthenticated,
            field: None,
            message: message.into(),
        }
    }

    pub fn code(&self) -> Code {
        match self {
            Error::Invalid { code, .. } => *code,
            Error::NotFound => Code::NotFound,
            Error::Unavailable(_) => Code::Unavailable,
            Error::Internal(_) => Code::Internal,
        }
    }

    pub fn status(&self) -> u16 {
        self.code().status()
    }

    /// The response envelope: `{"error": {"code", "message", "field"?}}`.
    pub fn body(&self) -> Value {
        let message = match self {
            Error::Invalid { message, .. } => message.as_str(),
            Error::NotFound => NOT_FOUND_MESSAGE,
            Error::Unavailable(_) => "the service is temporarily unavailable; retry later",
            Error::Internal(_) => "internal error",
        };
        let mut error = json!({ "code": self.code().as_str(), "message": message });
        if let Error::Invalid { field: Some(f), .. } = self {
            error["field"] = Value::from(f.as_str());
        }
        json!({ "error": error })
    }
}

/// Runs an operation, turning a panic inside it into [`Error::Internal`]
/// (logged by the transport, answered with the generic 500).
pub async fn catch_panic<T, F>(f: F) -> Result<T, Error>
where
    F: std::future::Future<Output = Result<T, Error>>,
{
    use futures_util::FutureExt;
    std::panic::AssertUnwindSafe(f)
        .catch_unwind()
        .await
        .unwrap_or_else(|panic| {
            let msg = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "panic".to_string());
            Err(Error::Internal(format!("panic: {msg}")))
        })
}

/// Database errors are `unavailable` (retrying may help: a lost
/// connection, a statement past its timeout, a lock); the message (logged,
/// never sent to callers) carries the cause chain, e.g. why a TLS handshake
/// failed.
///
/// The exception is SQLSTATE class 22, *data exception* (a NUL in text, an
/// invalid escape, a value out of range): the database refused a value, and
/// retrying the same request cannot help. Validation refuses every such
/// value with a 400 before anything runs, so reaching one is a bug:
/// `internal`, never "retry later".
impl From<tokio_postgres::Error> for Error {
    fn from(e: tokio_postgres::Error) -> Self {
        let detail = crate::db::describe_connect_error(&e);
        match e.code().map(|c| c.code()) {
            Some(code) if code.starts_with("22") => {
                Error::Internal(format!("database refused a value ({code}): {detail}"))
            }
            _ => Error::Unavailable(format!("database: {detail}")),
        }
    }
}

impl From<deadpool_postgres::PoolError> for Error {
    fn from(e: deadpool_postgres::PoolError) -> Self {
        match e {
            deadpool_postgres::PoolError::Backend(e) => Error::Unavailable(format!(
                "database connection: {}",
                crate::db::describe_connect_error(&e)
            )),
            e => Error::Unavailable(format!("database pool: {e}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unknown_key_is_named_only_as_far_as_it_is_safe_to_show() {
        let named = |key: &str| match Error::unknown_field(key) {
            Error::Invalid { field, message, .. } => (field.unwrap(), message),
            other => panic!("{other:?}"),
        };
        assert_eq!(
            named("extra"),
            ("extra".to_string(), "unknown field `extra`".to_string())
        );
        // Control and bidirectional-override characters are left out.
        assert_eq!(named("a\u{202E}b\u{0007}c\n").0, "abc");
        // A long key is cut, and says so.
        let long = "k".repeat(60_000);
        let (field, message) = named(&long);
        assert_eq!(field.chars().count(), SHOWN_KEY_CHARS + 1);
        assert!(field.ends_with('…'));
        assert!(message.len() < 100, "{message}");
        // Exactly the limit is shown whole.
        let exact = "é".repeat(SHOWN_KEY_CHARS);
        assert_eq!(named(&exact).0, exact);
    }
}
