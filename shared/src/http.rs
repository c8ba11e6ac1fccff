//! The transport-neutral HTTP router, shared by the local server
//! (`mosaic serve`, [`crate::server`]) and the Lambda API Gateway adapter.
//!
//! A transport turns its request into an [`HttpRequest`] (method, raw path,
//! raw query string, body bytes), derives the [`Principal`], calls
//! [`handle`] and writes the [`HttpResponse`] back unchanged. Every error
//! body is [`Error::body`] and every status [`Error::status`]; responses
//! carry no per-request header, so two refusals are byte-identical.
//!
//! Routes (matched on the raw path from its `/api/` segment, which may
//! follow one stage segment, so an API Gateway stage prefix such as
//! `/prod/api/search` is tolerated; deeper prefixes are unknown routes):
//!
//! | method | path                                          | operation              |
//! |--------|-----------------------------------------------|------------------------|
//! | POST   | `/api/search`                                 | `search_products`      |
//! | POST   | `/api/products/{product_id}/evidence`         | `get_product_evidence` |
//! | POST   | `/api/retrieval/events/{search_event_id}/compare` | `compare_products` |
//! | GET    | `/api/retrieval/events/{search_event_id}`     | `explain_retrieval`    |
//! | GET    | `/api/tools?surface=skill\|mcp\|agentcore`     | the contract, as tools |
//! | GET    | `/api/openapi.json`                           | OpenAPI 3.1 document   |
//! | GET    | `/healthz` (optionally behind one stage segment) | database ping       |
//!
//! Unknown routes and known paths with another method are the standard
//! `not_found` refusal. Path ids are percent-decoded and then validated like
//! any body argument (a decoded control character is a 400 naming the
//! field). Every request runs under the profile's `request_deadline_ms`;
//! past it the answer is 503 and the statement in flight is cancelled.

use crate::context::{Ctx, Principal};
use crate::contract::decode_segment;
use crate::error::Error;
use crate::operation::Operation;
use crate::search::Shape;
use serde_json::{json, Map, Value};
use std::time::Duration;

/// Default largest accepted request body, in bytes (64 KiB).
pub const MAX_BODY: usize = 64 * 1024;

/// How long `/healthz` waits for the database.
const HEALTH_TIMEOUT: Duration = Duration::from_secs(3);

/// One request as the transport received it.
#[derive(Debug, Clone, Copy)]
pub struct HttpRequest<'a> {
    /// The method, as sent (`GET`, `POST`; case-sensitive).
    pub method: &'a str,
    /// The raw (still percent-encoded) path, without the query string.
    pub path: &'a str,
    /// The raw query string without `?` (empty when absent). Unused by the
    /// current routes.
    pub query: &'a str,
    /// The body as received (already base64-decoded by the Lambda adapter).
    pub body: &'a [u8],
    /// The transport's request id, logged with internal errors (the server's
    /// uuid, the Lambda request id). Never returned to the caller.
    pub request_id: &'a str,
}

/// The response to write back as it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpResponse {
    pub status: u16,
    /// Fixed headers only (no per-request values).
    pub headers: Vec<(&'static str, &'static str)>,
    pub body: Vec<u8>,
}

impl HttpResponse {
    /// A JSON response.
    pub fn json(status: u16, body: &Value) -> Self {
        // Serialising a `Value` cannot fail.
        let body = serde_json::to_vec(body).unwrap_or_else(|_| b"{}".to_vec());
        HttpResponse {
            status,
            headers: vec![("content-type", "application/json")],
            body,
        }
    }

    /// The envelope of an error: [`Error::status`] and [`Error::body`].
    pub fn error(e: &Error) -> Self {
        Self::json(e.status(), &e.body())
    }
}

/// Routes one request with the default body limit ([`MAX_BODY`]).
pub async fn handle(ctx: &Ctx, principal: &Principal, req: HttpRequest<'_>) -> HttpResponse {
    handle_with_limit(ctx, principal, req, MAX_BODY).await
}

/// Routes one request; bodies over `max_body` bytes are refused with 413
/// before any parsing.
pub async fn handle_with_limit(
    ctx: &Ctx,
    principal: &Principal,
    req: HttpRequest<'_>,
    max_body: usize,
) -> HttpResponse {
    let deadline = Duration::from_millis(ctx.profile.request_deadline_ms);
    handle_within(ctx, principal, req, max_body, deadline).await
}

/// [`handle_with_limit`] with `deadline` for the operation: what is left of
/// the request deadline once the body has been read (`mosaic serve`), so
/// that a request takes no longer than the deadline in all.
pub async fn handle_within(
    ctx: &Ctx,
    principal: &Principal,
    req: HttpRequest<'_>,
    max_body: usize,
    deadline: Duration,
) -> HttpResponse {
    // Past the deadline the operation's future is dropped: its connection
    // cancels the statement in flight and is closed, not reused.
    let outcome = crate::db::within(
        deadline,
        "request",
        crate::error::catch_panic(route(ctx, principal, &req, max_body)),
    )
    .await;
    match outcome {
        Ok((status, body)) => HttpResponse::json(status, &body),
        Err(e) => {
            match &e {
                Error::Internal(detail) => tracing::error!(
                    request_id = req.request_id,
                    method = req.method,
                    path = req.path,
                    error = %detail,
                    "internal error"
                ),
                Error::Unavailable(detail) => tracing::error!(
                    request_id = req.request_id,
                    method = req.method,
                    path = req.path,
                    error = %detail,
                    "unavailable"
                ),
                _ => {}
            }
            HttpResponse::error(&e)
        }
    }
}

/// The route a path names, ids percent-decoded.
#[derive(Debug, PartialEq, Eq)]
enum Route {
    /// One of the operations, with the argument its path binds.
    Operation(Operation, Option<(&'static str, String)>),
    Tools,
    OpenApi,
    Health,
}

/// Matches a raw path (method aside). `Err(NotFound)` for unknown paths and
/// for ids that do not percent-decode to UTF-8.
fn match_path(path: &str) -> Result<Route, Error> {
    let segments: Vec<&str> = match path.strip_prefix('/') {
        Some(rest) => rest.split('/').collect(),
        None => return Err(Error::NotFound),
    };
    // `/api/...`, or `/{stage}/api/...` behind one stage segment.
    let api = match segments.as_slice() {
        ["api", rest @ ..] | [_, "api", rest @ ..] => Some(rest),
        _ => None,
    };
    if let Some(rest) = api {
        let bound = |op, field, raw: &str| {
            let id = decode_segment(raw).ok_or(Error::NotFound)?;
            Ok(Route::Operation(op, Some((field, id))))
        };
        return match rest {
            ["search"] => Ok(Route::Operation(Operation::SearchProducts, None)),
            ["tools"] => Ok(Route::Tools),
            ["openapi.json"] => Ok(Route::OpenApi),
            ["products", pid, "evidence"] => {
                bound(Operation::GetProductEvidence, "product_id", pid)
            }
            ["retrieval", "events", eid, "compare"] => {
                bound(Operation::CompareProducts, "retrieval_scope_id", eid)
            }
            ["retrieval", "events", eid] => {
                bound(Operation::ExplainRetrieval, "retrieval_scope_id", eid)
            }
            _ => Err(Error::NotFound),
        };
    }
    match segments.as_slice() {
        ["healthz"] | [_, "healthz"] => Ok(Route::Health),
        _ => Err(Error::NotFound),
    }
}

/// Whether a deployed function of `op` answers `path` behind its API
/// Gateway routes: its own operation's route, the contract's routes (the
/// search function's), the liveness check, or a path that names nothing
/// (the router's own `not_found`). Another operation's route is refused, so
/// a route pointed at the wrong function reaches nothing.
pub fn served_by(path: &str, op: Operation) -> bool {
    match match_path(path) {
        Ok(Route::Operation(o, _)) => o == op,
        Ok(Route::Tools | Route::OpenApi) => op == Operation::SearchProducts,
        Ok(Route::Health) | Err(_) => true,
    }
}

/// Whether `path` names one of the routes (whatever the method).
pub fn names_a_route(path: &str) -> bool {
    match_path(path).is_ok()
}

/// Whether `path` is the liveness check (`/healthz`, behind at most one
/// stage segment).
pub fn is_health(path: &str) -> bool {
    matches!(match_path(path), Ok(Route::Health))
}

/// The method a route answers: an operation's is the contract's.
fn method(route: &Route) -> &'static str {
    match route {
        Route::Operation(op, _) => match op.contract().http.method.as_str() {
            "GET" => "GET",
            _ => "POST",
        },
        Route::Health | Route::Tools | Route::OpenApi => "GET",
    }
}

async fn route(
    ctx: &Ctx,
    principal: &Principal,
    req: &HttpRequest<'_>,
    max_body: usize,
) -> Result<(u16, Value), Error> {
    let route = match_path(req.path)?;
    if req.method != method(&route) {
        return Err(Error::NotFound);
    }
    if req.body.len() > max_body {
        return Err(Error::payload_too_large(max_body));
    }
    match route {
        Route::Health => {
            health(ctx).await?;
            Ok((200, json!({ "status": "ok" })))
        }
        Route::Tools => {
            // A value that does not decode names no surface: refused like
            // any other unknown one, never read as the default.
            let surface = match query_param(req.query, "surface") {
                None => "skill".to_string(),
                Some(v) => v.unwrap_or_default(),
            };
            Ok((200, crate::contract::tools(&surface)?))
        }
        Route::OpenApi => Ok((200, crate::contract::openapi())),
        Route::Operation(op, bound) => {
            // A GET carries its arguments in the path only.
            let mut args = match req.method {
                "GET" => Map::new(),
                _ => parse_object(req.body)?,
            };
            if let Some((field, value)) = bound {
                bind(&mut args, field, value)?;
            }
            let args = Value::Object(args);
            Ok((
                200,
                op.call_shaped(ctx, principal, &args, Shape::Nested).await?,
            ))
        }
    }
}

/// The percent-decoded value of `name` in a raw query string.
fn query_param(query: &str, name: &str) -> Option<Option<String>> {
    query
        .split('&')
        .filter_map(|pair| pair.split_once('=').or(Some((pair, ""))))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| decode_segment(v))
}

/// Sets `field` from the path; a body value that differs is refused.
fn bind(args: &mut Map<String, Value>, field: &str, from_path: String) -> Result<(), Error> {
    match args.get(field) {
        None | Some(Value::Null) => {}
        Some(Value::String(s)) if same(field, s, &from_path) => {}
        Some(_) => {
            return Err(Error::invalid(
                field,
                format!("`{field}` in the body must match the one in the path"),
            ))
        }
    }
    args.insert(field.to_string(), Value::String(from_path));
    Ok(())
}

/// Whether a body's `value` and the path's name the same thing: the same
/// text, or for a scope id the same UUID in any of its spellings (case,
/// braces, no hyphens), as the operation reads it.
fn same(field: &str, value: &str, from_path: &str) -> bool {
    let uuid = |s: &str| uuid::Uuid::try_parse(s.trim()).ok();
    value == from_path
        || (field == "retrieval_scope_id"
            && matches!((uuid(value), uuid(from_path)), (Some(a), Some(b)) if a == b))
}

/// The body as a JSON object. An object that names a key twice is
/// refused: parsers disagree on which of the two counts (this one would keep
/// the last), so a proxy or log that read the first could be shown other
/// filters than the search applied.
fn parse_object(body: &[u8]) -> Result<Map<String, Value>, Error> {
    if std::str::from_utf8(body).is_err() {
        return Err(Error::invalid_json("the request body is not UTF-8"));
    }
    match serde_json::from_slice::<Unique>(body).map(|u| u.0) {
        Ok(Value::Object(m)) => Ok(m),
        Ok(_) => Err(Error::invalid_json(
            "the request body must be a JSON object",
        )),
        Err(e) => Err(Error::invalid_json(format!(
            "the request body is not valid JSON: {e}"
        ))),
    }
}

/// `bytes` as one JSON value in which no object names a key twice (the
/// check of [`parse_object`], for transports that read a whole event as the
/// arguments: the functions' tool calls).
pub fn parse_unique(bytes: &[u8]) -> Result<Value, serde_json::Error> {
    serde_json::from_slice::<Unique>(bytes).map(|u| u.0)
}

/// A JSON value in which no object names a key twice.
struct Unique(Value);

impl<'de> serde::Deserialize<'de> for Unique {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(UniqueVisitor).map(Unique)
    }
}

struct UniqueVisitor;

impl<'de> serde::de::Visitor<'de> for UniqueVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_string()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(Unique(v)) = seq.next_element()? {
            items.push(v);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut m = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            let Unique(v) = map.next_value()?;
            if m.contains_key(&key) {
                return Err(serde::de::Error::custom(format!(
                    "the key `{}` appears twice in one object",
                    crate::error::shown_key(&key)
                )));
            }
            m.insert(key, v);
        }
        Ok(Value::Object(m))
    }
}

/// A cheap `SELECT 1` under a deadline.
async fn health(ctx: &Ctx) -> Result<(), Error> {
    let ping = async {
        let client = ctx.pool.get().await?;
        client.query_one("SELECT 1", &[]).await?;
        Ok::<(), Error>(())
    };
    match tokio::time::timeout(HEALTH_TIMEOUT, ping).await {
        Ok(r) => r,
        Err(_) => Err(Error::Unavailable("health check: database timeout".into())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths() {
        let search = Route::Operation(Operation::SearchProducts, None);
        assert_eq!(match_path("/api/search").unwrap(), search);
        assert_eq!(match_path("/prod/api/search").unwrap(), search);
        let bound = |op, field, id: &str| Route::Operation(op, Some((field, id.to_string())));
        assert_eq!(
            match_path("/api/products/P%2F1%20x/evidence").unwrap(),
            bound(Operation::GetProductEvidence, "product_id", "P/1 x")
        );
        assert_eq!(
            match_path("/api/retrieval/events/abc").unwrap(),
            bound(Operation::ExplainRetrieval, "retrieval_scope_id", "abc")
        );
        assert_eq!(
            match_path("/v1/api/retrieval/events/abc/compare").unwrap(),
            bound(Operation::CompareProducts, "retrieval_scope_id", "abc")
        );
        for op in Operation::ALL {
            let want = if op == Operation::ExplainRetrieval {
                "GET"
            } else {
                "POST"
            };
            assert_eq!(method(&Route::Operation(op, None)), want, "{}", op.name());
        }
        assert_eq!(match_path("/healthz").unwrap(), Route::Health);
        assert_eq!(match_path("/prod/healthz").unwrap(), Route::Health);
        for bad in [
            "",
            "api/search",
            "/api/search/",
            "/api",
            "/api/",
            "/a/b/healthz",
            "/a/b/api/search",
            "/a/b/c/d/api/search",
            "/a/b/api/retrieval/events/abc",
            "/a/api/b/api/search",
            "/api/products/x",
            "/api/products/%zz/evidence",
            "/api/products/%ff/evidence",
            "/api/products/%4/evidence",
            "/api/retrieval/events",
        ] {
            assert!(matches!(match_path(bad), Err(Error::NotFound)), "{bad}");
        }
    }

    #[test]
    fn decoding() {
        assert_eq!(decode_segment("a+b%41%c3%a9").as_deref(), Some("a+bAé"));
        assert_eq!(decode_segment("%"), None);
        assert_eq!(decode_segment("%4"), None);
        assert_eq!(decode_segment("%+1"), None);
    }

    #[test]
    fn binding() {
        let mut m = Map::new();
        bind(&mut m, "product_id", "p1".into()).unwrap();
        assert_eq!(m["product_id"], "p1");
        bind(&mut m, "product_id", "p1".into()).unwrap();
        let e = bind(&mut m, "product_id", "p2".into()).unwrap_err();
        assert_eq!(e.status(), 400);
        assert_eq!(e.body()["error"]["field"], "product_id");
        let mut m = Map::from_iter([("product_id".to_string(), json!(7))]);
        assert!(bind(&mut m, "product_id", "7".into()).is_err());
        // A scope id in another spelling of the same UUID is the same id.
        let id = "0e2c6f0a-54b1-4c5e-9d7e-2f1a3b4c5d6e";
        for spelled in [id.to_uppercase(), format!("{{{id}}}"), id.replace('-', "")] {
            let mut m = Map::from_iter([("retrieval_scope_id".to_string(), json!(spelled))]);
            bind(&mut m, "retrieval_scope_id", id.into()).unwrap();
            assert_eq!(m["retrieval_scope_id"], id);
        }
        let mut m = Map::from_iter([(
            "retrieval_scope_id".to_string(),
            json!(id.replace('e', "f")),
        )]);
        assert!(bind(&mut m, "retrieval_scope_id", id.into()).is_err());
        // Case matters for other ids.
        let mut m = Map::from_iter([("product_id".to_string(), json!("P1"))]);
        assert!(bind(&mut m, "product_id", "p1".into()).is_err());
    }

    #[test]
    fn a_key_named_twice_in_any_object_is_refused() {
        for bad in [
            &br#"{"query": "headphones", "query": "x"}"#[..],
            br#"{"query": "headphones", "filters": {"max_price_cents": 100}, "filters": {}}"#,
            br#"{"query": "q", "filters": {"attributes": {"color": "red", "color": "blue"}}}"#,
            br#"{"product_ids": [{"a": 1, "a": 2}]}"#,
        ] {
            let e = parse_object(bad).unwrap_err();
            assert_eq!(e.body()["error"]["code"], "invalid_json");
            let message = e.body()["error"]["message"].as_str().unwrap().to_string();
            assert!(message.contains("appears twice"), "{message}");
        }
        // The key is repeated without control or bidirectional characters,
        // and cut short.
        let key = format!(r"a\u202Eb\u0007{}", "k".repeat(500));
        let doc = format!(r#"{{"{key}": 1, "{key}": 2}}"#);
        let e = parse_object(doc.as_bytes()).unwrap_err();
        let message = e.body()["error"]["message"].as_str().unwrap().to_string();
        assert!(message.contains("`ab"), "{message}");
        assert!(!message.contains('\u{202E}') && !message.contains('\u{7}'));
        assert!(message.contains('…') && message.len() < 200, "{message}");
        // Otherwise the same value serde_json reads, numbers included.
        for good in [
            &br#"{"query": "q", "limit": 5, "filters": {"min_rating": 4.5, "max_price_cents": 18446744073709551615}}"#[..],
            br#"{"a": [1, -2, 3.25, true, null, "s", {"b": {}}], "c": {"a": 1}, "d": -9223372036854775808}"#,
        ] {
            let expected: Value = serde_json::from_slice(good).unwrap();
            assert_eq!(Value::Object(parse_object(good).unwrap()), expected);
        }
    }

    #[test]
    fn bodies() {
        assert!(parse_object(b"{}").is_ok());
        for bad in [&b""[..], b"[]", b"1", b"{", b"\xff{}"] {
            let e = parse_object(bad).unwrap_err();
            assert_eq!(e.body()["error"]["code"], "invalid_json");
        }
        // Deep nesting meets the parser's depth limit, not the stack's.
        for depth in [200, 100_000] {
            let deep = format!("{{\"a\": {}{}}}", "[".repeat(depth), "]".repeat(depth));
            let e = parse_object(deep.as_bytes()).unwrap_err();
            assert_eq!(e.body()["error"]["code"], "invalid_json");
        }
    }
}
