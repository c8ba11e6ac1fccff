//! The local HTTP server (`mosaic serve`): one axum fallback handler that
//! reads the raw request, derives the principal and hands everything to the
//! transport-neutral router [`crate::http::handle`].
//!
//! Local development only: the principal is `local:<name>` for the name in
//! the [`principal::HEADER`] (`x-mosaic-principal`, one value of
//! 1..128 characters of `[A-Za-z0-9._:@-]`; see [`principal::validate`]),
//! and `anonymous` when the header is absent — the local server runs in
//! anonymous mode. A name cannot make a request anonymous (`anonymous` is
//! `local:anonymous`). Deployed functions derive the principal from what the
//! platform vouches for instead (see [`crate::lambda`]).
//!
//! Since the header authenticates nobody, a web page must not be able to
//! speak for the browser's machine: the server answers only requests whose
//! `Host` names this machine or a name its operator listed (a page whose
//! domain an attacker re-points at this machine's address sends its own
//! name), on loopback and on any other address alike, and a body must be
//! `application/json`, which a page cannot send to another origin without a
//! preflight the server never grants. Either refusal is a 400
//! `invalid_argument` naming `host` or `content-type`, before anything
//! runs; a request without a `Host` is refused like a foreign one.
//!
//! Connections are HTTP/1.1 with keep-alive, bounded by [`Connections`]:
//! a connection must deliver each request's headers within
//! [`Connections::header_read_timeout`] (10 s by default), which also closes
//! a keep-alive connection left idle that long, and at most
//! [`Connections::max_open`] (256) are open at once; past that, new
//! connections wait in the listen backlog until one closes. The body and
//! the operation then run under the request deadline, so a client that
//! sends slowly, or not at all, holds no connection and task for longer
//! than that.

use crate::context::{Ctx, Principal};
use crate::error::Error;
use crate::http::{self, HttpRequest, HttpResponse};
use crate::principal::{self, Part};
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use axum::response::Response;
use axum::Router;
use futures_util::StreamExt;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::Semaphore;

/// The header the local server takes the principal's name from.
pub const PRINCIPAL_HEADER: &str = principal::HEADER;

/// How much of an oversized body is read and discarded before the 413.
const DRAIN: usize = 1 << 20;

/// How long draining an oversized body may take.
const DRAIN_TIME: Duration = Duration::from_secs(2);

struct App {
    ctx: Ctx,
    max_body: usize,
    /// The `Host` names accepted (lower case, without a port).
    hosts: Vec<String>,
}

/// How a server holds its connections.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Connections {
    /// Most connections open at once. Past it the server accepts no more
    /// until one closes: new connections wait in the listen backlog (and
    /// are turned away by the system when that is full) rather than being
    /// accepted and closed unanswered.
    pub max_open: usize,
    /// How long a connection may take to deliver a request's headers, from
    /// when it opens or its previous response went out; a keep-alive
    /// connection idle that long is closed as well.
    pub header_read_timeout: Duration,
    /// How long a shutdown waits for the connections still open (requests
    /// in flight, responses still being written) before it returns anyway,
    /// so that a client that stops reading cannot hold the process.
    pub shutdown_grace: Duration,
}

impl Connections {
    /// 256 connections; a request's headers within 10 s. A client sends its
    /// headers in one write, in milliseconds even over a slow link, and
    /// HTTP clients reopen a closed keep-alive connection on their own, so
    /// 10 s turns away only a client that trickles its headers or parks its
    /// connection, while staying at the request deadline's order (10 s by
    /// default). 256 is well above what local clients open and keeps what
    /// a client holding connections open can tie up bounded.
    ///
    /// A shutdown waits up to 15 s: the request deadline (10 s by default)
    /// and time to write the last answers.
    pub const DEFAULT: Connections = Connections {
        max_open: 256,
        header_read_timeout: Duration::from_secs(10),
        shutdown_grace: Duration::from_secs(15),
    };
}

impl Default for Connections {
    fn default() -> Self {
        Connections::DEFAULT
    }
}

/// Serves the API on `listener` until `shutdown` resolves, then stops
/// accepting and lets requests in flight finish.
pub async fn serve(
    ctx: Ctx,
    listener: tokio::net::TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    serve_with(ctx, listener, shutdown, http::MAX_BODY, &[]).await
}

/// [`serve`] with another body limit (bytes) and more `Host` names to
/// answer besides this machine's (`mosaic serve --allowed-host`: the name
/// other machines reach it by).
pub async fn serve_with(
    ctx: Ctx,
    listener: tokio::net::TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
    max_body: usize,
    extra_hosts: &[String],
) -> std::io::Result<()> {
    serve_with_connections(
        ctx,
        listener,
        shutdown,
        max_body,
        extra_hosts,
        Connections::DEFAULT,
    )
    .await
}

/// [`serve_with`] with other connection bounds.
pub async fn serve_with_connections(
    ctx: Ctx,
    listener: tokio::net::TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
    max_body: usize,
    extra_hosts: &[String],
    connections: Connections,
) -> std::io::Result<()> {
    let hosts = allowed_hosts(listener.local_addr()?, extra_hosts);
    let app = Router::new().fallback(handler).with_state(Arc::new(App {
        ctx,
        max_body,
        hosts,
    }));
    serve_router(listener, app, shutdown, connections).await
}

/// Serves `router` on `listener` over HTTP/1.1 (keep-alive on) within
/// `connections`' bounds until `shutdown` resolves; then stops accepting,
/// closes idle connections, lets requests in flight finish and returns once
/// every connection has closed. Shared by `mosaic serve` and `mosaic mcp
/// --http`.
pub async fn serve_router(
    listener: tokio::net::TcpListener,
    router: Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
    connections: Connections,
) -> std::io::Result<()> {
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(connections.header_read_timeout)
        .keep_alive(true);
    let open = Arc::new(Semaphore::new(connections.max_open.max(1)));
    let graceful = GracefulShutdown::new();
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        // A free place first, then a connection: while every place is
        // taken, new connections wait in the listen backlog.
        let place = tokio::select! {
            () = &mut shutdown => break,
            place = Arc::clone(&open).acquire_owned() => match place {
                Ok(place) => place,
                Err(_) => break,
            },
        };
        let stream = tokio::select! {
            () = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(e) => match accept_failed(e, shutdown.as_mut()).await {
                    Stop::Now => break,
                    Stop::No => continue,
                },
            },
        };
        let conn = builder.serve_connection(
            TokioIo::new(stream),
            TowerToHyperService::new(router.clone()),
        );
        let conn = graceful.watch(conn);
        tokio::spawn(async move {
            if let Err(e) = conn.await {
                tracing::debug!(error = %e, "connection closed");
            }
            drop(place);
        });
    }
    drop(listener);
    if tokio::time::timeout(connections.shutdown_grace, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::warn!(
            grace_s = connections.shutdown_grace.as_secs_f64(),
            "connections still open at the end of the shutdown's grace; leaving them"
        );
    }
    Ok(())
}

/// Whether `shutdown` came while waiting.
enum Stop {
    Now,
    No,
}

/// After a failed accept: a connection that went away before it was
/// accepted is nothing; anything else (out of file descriptors, say) is
/// logged and the next accept waits a second, or until `shutdown`.
async fn accept_failed<F: Future<Output = ()>>(
    e: std::io::Error,
    shutdown: std::pin::Pin<&mut F>,
) -> Stop {
    use std::io::ErrorKind::{ConnectionAborted, ConnectionRefused, ConnectionReset};
    if matches!(
        e.kind(),
        ConnectionAborted | ConnectionRefused | ConnectionReset
    ) {
        return Stop::No;
    }
    tracing::error!(error = %e, "cannot accept a connection");
    tokio::select! {
        () = shutdown => Stop::Now,
        () = tokio::time::sleep(Duration::from_secs(1)) => Stop::No,
    }
}

async fn handler(State(app): State<Arc<App>>, req: Request) -> Response {
    let started = Instant::now();
    let deadline = started + Duration::from_millis(app.ctx.profile.request_deadline_ms);
    let request_id = uuid::Uuid::new_v4().to_string();
    let (parts, body) = req.into_parts();
    let method = parts.method.as_str();
    let path = parts.uri.path();
    let query = parts.uri.query().unwrap_or("");

    let principal =
        host(&parts.headers, &parts.uri, &app.hosts).and_then(|()| principal(&parts.headers));
    let out = match &principal {
        Err(e) => HttpResponse::error(e),
        // One byte over the limit is enough for the router to refuse with
        // its own 413; reading stops there.
        Ok(p) => match read_in_time(body, app.max_body.saturating_add(1), deadline).await {
            Err(e) => HttpResponse::error(&e),
            // A body the router would refuse anyway (too large, or sent to
            // a path that names nothing) gets the router's own answer, 413
            // or not_found, whatever its content type.
            Ok(bytes)
                if !bytes.is_empty()
                    && bytes.len() <= app.max_body
                    && http::names_a_route(path)
                    && !json_body(&parts.headers) =>
            {
                HttpResponse::error(&Error::invalid(
                    "content-type",
                    "a request body must be sent as `content-type: application/json`",
                ))
            }
            Ok(bytes) => {
                let req = HttpRequest {
                    method,
                    path,
                    query,
                    body: &bytes,
                    request_id: &request_id,
                };
                // The request deadline holds for the body and the
                // operation together.
                let left = deadline.saturating_duration_since(Instant::now());
                http::handle_within(&app.ctx, p, req, app.max_body, left).await
            }
        },
    };

    tracing::info!(
        request_id = %request_id,
        method,
        path,
        principal = principal.as_ref().map_or("-", |p| p.as_str()),
        status = out.status,
        ms = (started.elapsed().as_secs_f64() * 10_000.0).round() / 10.0,
        "request"
    );
    into_response(out)
}

/// The `Host` names of this machine for a server bound to `ip`: the
/// loopback names and the address itself (`mosaic serve`, and `mosaic mcp
/// --http` through its SDK's allowed hosts).
pub fn machine_hosts(ip: std::net::IpAddr) -> Vec<String> {
    let mut hosts: Vec<String> = ["localhost", "127.0.0.1", "::1"]
        .into_iter()
        .map(String::from)
        .collect();
    if !hosts.contains(&ip.to_string()) {
        hosts.push(ip.to_string());
    }
    hosts
}

/// The `Host` names a server listening on `bound` answers to: this
/// machine's ([`machine_hosts`]) and `extra`, the names its operator
/// listed. Bound beyond loopback as well: a page whose domain an attacker
/// re-points at the machine's address (DNS rebinding) sends its own name,
/// and the header speaks for whoever the page names.
pub fn allowed_hosts(bound: std::net::SocketAddr, extra: &[String]) -> Vec<String> {
    let mut hosts = machine_hosts(bound.ip());
    for h in extra.iter().map(|h| listed_host_name(h)) {
        if !h.is_empty() && !hosts.contains(&h) {
            hosts.push(h);
        }
    }
    hosts
}

/// A `Host` value's name: lower case, without its port and, for an IPv6
/// address, without its brackets (`[::1]:8787` → `::1`). Empty when the
/// value is not a name or a bracketed IPv6 address, optionally followed by
/// `:` and a port from 1 to 65535: nothing may follow the closing bracket
/// but a port (`[::1]evil.example`, `localhost:x` and a bare `::1` name
/// nothing).
pub fn host_name(value: &str) -> String {
    let name = value.trim().to_ascii_lowercase();
    let (host, port) = match name.strip_prefix('[') {
        Some(v6) => match v6.split_once(']') {
            Some((addr, rest)) if addr.parse::<std::net::Ipv6Addr>().is_ok() => {
                match rest.strip_prefix(':') {
                    Some(port) => (addr, Some(port)),
                    None if rest.is_empty() => (addr, None),
                    None => return String::new(),
                }
            }
            _ => return String::new(),
        },
        None => match name.split_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (name.as_str(), None),
        },
    };
    let port_ok = port.is_none_or(|p| {
        p.bytes().all(|b| b.is_ascii_digit()) && p.parse::<u16>().is_ok_and(|n| n > 0)
    });
    match port_ok && !host.contains(['[', ']']) {
        true => host.to_string(),
        false => String::new(),
    }
}

/// A name the operator lists (`--allowed-host`) as [`host_name`] reads a
/// `Host`, a bare IPv6 address (`fe80::1`) as well.
fn listed_host_name(value: &str) -> String {
    let name = value.trim().to_ascii_lowercase();
    match name.parse::<std::net::Ipv6Addr>() {
        Ok(_) => name,
        Err(_) => host_name(&name),
    }
}

/// Whether the request has one `Host` and it names one of `hosts`
/// ([`host_name`]), and so does the authority of a request target in
/// absolute form (`GET http://name/…`), which would otherwise name a host
/// unchecked. A request without a `Host` names nothing this server answers
/// to. `mosaic serve`, and `mosaic mcp --http` before its SDK's own check.
pub fn names_allowed_host(headers: &HeaderMap, target: &axum::http::Uri, hosts: &[String]) -> bool {
    let mut values = headers.get_all(axum::http::header::HOST).iter();
    let name = match (values.next(), values.next()) {
        (Some(value), None) => host_name(value.to_str().unwrap_or("")),
        _ => String::new(),
    };
    names(&name, hosts)
        && target
            .authority()
            .is_none_or(|a| names(&host_name(a.as_str()), hosts))
}

/// Whether `name` (a [`host_name`]) is one of `hosts`.
pub fn names(name: &str, hosts: &[String]) -> bool {
    !name.is_empty() && hosts.iter().any(|h| h == name)
}

/// [`names_allowed_host`] as the server's refusal.
fn host(headers: &HeaderMap, target: &axum::http::Uri, hosts: &[String]) -> Result<(), Error> {
    match names_allowed_host(headers, target, hosts) {
        true => Ok(()),
        false => Err(Error::invalid(
            "host",
            "the `Host` header must name this machine (localhost, a loopback address or the address the server is bound to) or a name given with `mosaic serve --allowed-host`",
        )),
    }
}

/// Whether the request says its body is JSON (`application/json`, with
/// or without parameters such as a charset).
fn json_body(headers: &HeaderMap) -> bool {
    let mut values = headers.get_all(axum::http::header::CONTENT_TYPE).iter();
    let (Some(value), None) = (values.next(), values.next()) else {
        return false;
    };
    value
        .to_str()
        .ok()
        .and_then(|v| v.split(';').next())
        .is_some_and(|media| media.trim().eq_ignore_ascii_case("application/json"))
}

/// The principal of a local request: `local:<name>`, or anonymous without
/// the header.
fn principal(headers: &HeaderMap) -> Result<Principal, Error> {
    let mut values = headers.get_all(PRINCIPAL_HEADER).iter();
    let Some(value) = values.next() else {
        return Ok(Principal::anonymous());
    };
    let bad = || {
        Error::invalid(
            PRINCIPAL_HEADER,
            format!(
                "`{PRINCIPAL_HEADER}` must be one value of {}",
                Part::LocalName.rule()
            ),
        )
    };
    if values.next().is_some() {
        return Err(bad());
    }
    let name = value.to_str().map_err(|_| bad())?;
    Principal::local(name).map_err(|_| bad())
}

/// [`read_capped`] by the request's `deadline`: a body that has not
/// arrived by then (a client that stops sending) is refused, so that it
/// holds no task and connection for longer than a request may take.
async fn read_in_time(body: Body, cap: usize, deadline: Instant) -> Result<Vec<u8>, Error> {
    let started = Instant::now();
    match tokio::time::timeout_at(deadline.into(), read_capped(body, cap)).await {
        Ok(read) => read,
        Err(_) => Err(Error::invalid_json(format!(
            "the request body did not arrive in full within {} ms",
            deadline.saturating_duration_since(started).as_millis()
        ))),
    }
}

/// Reads at most `cap` bytes of the body. Past the cap, up to [`DRAIN`]
/// more bytes are read and discarded (for at most [`DRAIN_TIME`]) so that a
/// client still sending sees the 413 instead of a broken pipe. `mosaic
/// serve`, and `mosaic mcp --http` before its SDK reads the body.
pub async fn read_capped(body: Body, cap: usize) -> Result<Vec<u8>, Error> {
    let mut stream = body.into_data_stream();
    let mut out = Vec::new();
    while let Some(chunk) = stream.next().await {
        let chunk =
            chunk.map_err(|e| Error::invalid_json(format!("cannot read the request body: {e}")))?;
        let room = cap - out.len();
        if chunk.len() >= room {
            out.extend_from_slice(&chunk[..room]);
            let drain = async {
                let mut drained = chunk.len() - room;
                while drained <= DRAIN {
                    match stream.next().await {
                        Some(Ok(c)) => drained += c.len(),
                        _ => break,
                    }
                }
            };
            let _ = tokio::time::timeout(DRAIN_TIME, drain).await;
            break;
        }
        out.extend_from_slice(&chunk);
    }
    Ok(out)
}

fn into_response(out: HttpResponse) -> Response {
    let mut resp = Response::new(Body::from(out.body));
    *resp.status_mut() =
        StatusCode::from_u16(out.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    for (name, value) in out.headers {
        if let (Ok(n), Ok(v)) = (HeaderName::try_from(name), HeaderValue::try_from(value)) {
            resp.headers_mut().insert(n, v);
        }
    }
    resp
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(values: &[&str]) -> HeaderMap {
        headers(HeaderName::from_static(PRINCIPAL_HEADER), values)
    }

    #[test]
    fn principals() {
        assert_eq!(principal(&with(&[])).unwrap(), Principal::anonymous());
        assert_eq!(
            principal(&with(&["alice@example.com:dev-1_2"])).unwrap().0,
            "local:alice@example.com:dev-1_2"
        );
        // Naming `anonymous` does not make a request anonymous.
        assert_eq!(
            principal(&with(&["anonymous"])).unwrap().0,
            "local:anonymous"
        );
        let long = "a".repeat(128);
        assert!(principal(&with(&[&long])).is_ok());
        let too_long = "a".repeat(129);
        for bad in ["", "a b", "a/b", "é", too_long.as_str()] {
            let e = principal(&with(&[bad])).unwrap_err();
            assert_eq!(e.status(), 400, "{bad:?}");
            assert_eq!(e.body()["error"]["field"], PRINCIPAL_HEADER);
        }
        assert!(principal(&with(&["a", "b"])).is_err());
    }

    fn headers(name: axum::http::header::HeaderName, values: &[&str]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for v in values {
            h.append(name.clone(), HeaderValue::from_bytes(v.as_bytes()).unwrap());
        }
        h
    }

    #[test]
    fn on_loopback_only_this_machine_s_names_are_answered() {
        use axum::http::header::HOST;
        let loopback = allowed_hosts("127.0.0.1:8787".parse().unwrap(), &[]);
        let hosts = &loopback;
        for ok in [
            "127.0.0.1:8787",
            "localhost",
            "LocalHost:1",
            "[::1]:8787",
            "127.0.0.1",
        ] {
            assert!(
                host(&headers(HOST, &[ok]), &origin(), hosts).is_ok(),
                "{ok}"
            );
        }
        // No Host at all names nothing this server answers to; two name
        // two things.
        assert!(host(&HeaderMap::new(), &origin(), hosts).is_err());
        assert!(host(
            &headers(HOST, &["localhost", "localhost"]),
            &origin(),
            hosts
        )
        .is_err());
        for bad in [
            "attacker.example",
            "attacker.example:8787",
            "127.0.0.2",
            "localhost.attacker.example",
            "[::2]:8787",
            "",
            // Only a port may follow a name or an IPv6 address's bracket.
            "[::1]evil.example",
            "[::1]:x",
            "[::1]:8787:1",
            "[::1",
            "localhost:notaport",
            "localhost:",
            "localhost:0",
            "localhost:65536",
            "localhost:+80",
            "localhost:8787@attacker.example",
            "127.0.0.1:80:80",
            // A Host writes an IPv6 address in brackets, and only one.
            "::1",
            "[localhost]",
            "[::1]]",
        ] {
            let e = host(&headers(HOST, &[bad]), &origin(), hosts).unwrap_err();
            assert_eq!(
                (e.status(), e.body()["error"]["field"].as_str()),
                (400, Some("host")),
                "{bad:?}"
            );
        }
        // Bound beyond loopback, still only this machine's names, the
        // bound address and the names the operator listed: a rebinding
        // page's own name is refused there too.
        let lan = allowed_hosts(
            "192.168.1.5:8787".parse().unwrap(),
            &[
                " Shop-Dev.Example ".to_string(),
                "other.example:8787".to_string(),
                "[fe80::1]".to_string(),
                "fe80::2".to_string(),
            ],
        );
        for ok in [
            "192.168.1.5:8787",
            "localhost:8787",
            "shop-dev.example:8787",
            "other.example",
            "[fe80::1]:8787",
            "[fe80::2]:8787",
        ] {
            assert!(host(&headers(HOST, &[ok]), &origin(), &lan).is_ok(), "{ok}");
        }
        assert!(host(&headers(HOST, &["attacker.example"]), &origin(), &lan).is_err());
        let any = allowed_hosts("0.0.0.0:8787".parse().unwrap(), &[]);
        for bad in ["attacker.example", "192.168.1.5:8787"] {
            assert!(
                host(&headers(HOST, &[bad]), &origin(), &any).is_err(),
                "{bad}"
            );
        }
        // A request target in absolute form names a host as well: it must
        // be one of these too, whatever the header says.
        let local = headers(HOST, &["localhost"]);
        for (target, ok) in [
            ("http://localhost:8787/healthz", true),
            ("http://[::1]/healthz", true),
            ("http://attacker.example/healthz", false),
            ("http://localhost:x/healthz", false),
        ] {
            let uri: axum::http::Uri = target.parse().unwrap();
            assert_eq!(host(&local, &uri, hosts).is_ok(), ok, "{target}");
        }
    }

    /// A request target in origin form (`/path`), which names no host.
    fn origin() -> axum::http::Uri {
        axum::http::Uri::from_static("/api/search")
    }

    #[test]
    fn a_body_must_say_it_is_json() {
        use axum::http::header::CONTENT_TYPE;
        for ok in [
            "application/json",
            "Application/JSON; charset=utf-8",
            " application/json ;x=y",
        ] {
            assert!(json_body(&headers(CONTENT_TYPE, &[ok])), "{ok}");
        }
        for bad in [
            "text/plain",
            "application/x-www-form-urlencoded",
            "multipart/form-data; boundary=x",
            "application/jsonx",
            "",
        ] {
            assert!(!json_body(&headers(CONTENT_TYPE, &[bad])), "{bad}");
        }
        assert!(!json_body(&HeaderMap::new()));
        assert!(!json_body(&headers(
            CONTENT_TYPE,
            &["application/json", "text/plain"]
        )));
    }
}
