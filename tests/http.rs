//! The HTTP surface (`mosaic serve`): the shared router behind the local
//! axum server, spoken to over a raw HTTP/1.1 client on a real socket.

use mosaic::server::Connections;
use mosaic::{Ctx, Error, RetrievalProfile};
use mosaic_integration_tests::{ctx, principal_of, TestDb};
use serde_json::{json, Value};
use std::net::SocketAddr;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

struct Server {
    addr: SocketAddr,
    stop: oneshot::Sender<()>,
    task: JoinHandle<std::io::Result<()>>,
}

impl Server {
    async fn start(ctx: Ctx) -> Server {
        Server::start_with(ctx, Connections::DEFAULT).await
    }

    /// A server with other connection bounds.
    async fn start_with(ctx: Ctx, connections: Connections) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(mosaic::server::serve_with_connections(
            ctx,
            listener,
            async {
                let _ = stopped.await;
            },
            mosaic::http::MAX_BODY,
            &[],
            connections,
        ));
        Server { addr, stop, task }
    }

    async fn shutdown(self) {
        self.stop.send(()).unwrap();
        tokio::time::timeout(std::time::Duration::from_secs(10), self.task)
            .await
            .expect("graceful shutdown in time")
            .expect("server task")
            .expect("server result");
    }

    async fn send(&self, method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> Resp {
        raw(self.addr, method, path, headers, body).await
    }

    async fn post(&self, path: &str, body: &Value) -> Resp {
        self.send("POST", path, &[], body.to_string().as_bytes())
            .await
    }

    async fn get(&self, path: &str) -> Resp {
        self.send("GET", path, &[], b"").await
    }
}

#[derive(Debug)]
struct Resp {
    status: u16,
    /// Lower-cased names, in order.
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Resp {
    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| {
            panic!(
                "response body is not JSON ({e}): {}",
                String::from_utf8_lossy(&self.body)
            )
        })
    }

    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// Asserts an error envelope with this status, code and field.
    fn assert_error(&self, status: u16, code: &str, field: Option<&str>) {
        let v = self.json();
        assert_eq!(self.status, status, "{v}");
        assert_eq!(v["error"]["code"], code, "{v}");
        assert!(v["error"]["message"].is_string(), "{v}");
        match field {
            Some(f) => assert_eq!(v["error"]["field"], f, "{v}"),
            None => assert!(v["error"].get("field").is_none(), "{v}"),
        }
        assert_eq!(self.header("content-type"), Some("application/json"));
    }
}

/// One request over a fresh connection (`Connection: close`).
async fn raw(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Resp {
    let mut s = TcpStream::connect(addr).await.expect("connect");
    // A host and a JSON content type unless the test sends its own.
    let has = |name: &str| headers.iter().any(|(n, _)| n.eq_ignore_ascii_case(name));
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nconnection: close\r\ncontent-length: {}\r\n",
        body.len()
    );
    if !has("host") {
        head.push_str(&format!("host: {addr}\r\n"));
    }
    if !body.is_empty() && !has("content-type") {
        head.push_str("content-type: application/json\r\n");
    }
    for (n, v) in headers {
        head.push_str(&format!("{n}: {v}\r\n"));
    }
    head.push_str("\r\n");
    let mut req = head.into_bytes();
    req.extend_from_slice(body);
    s.write_all(&req).await.expect("write request");
    let mut buf = Vec::new();
    tokio::time::timeout(std::time::Duration::from_secs(30), s.read_to_end(&mut buf))
        .await
        .expect("response in time")
        .expect("read response");
    parse(&buf)
}

fn parse(buf: &[u8]) -> Resp {
    let end = buf
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or_else(|| panic!("no header end in {:?}", String::from_utf8_lossy(buf)));
    let head = std::str::from_utf8(&buf[..end]).expect("ASCII head");
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap();
    let mut parts = status_line.splitn(3, ' ');
    assert_eq!(parts.next(), Some("HTTP/1.1"), "{status_line}");
    let status: u16 = parts.next().unwrap().parse().unwrap();
    let headers: Vec<(String, String)> = lines
        .map(|l| {
            let (n, v) = l.split_once(':').expect("header line");
            (n.trim().to_ascii_lowercase(), v.trim().to_string())
        })
        .collect();
    let rest = &buf[end + 4..];
    let chunked = headers
        .iter()
        .any(|(n, v)| n == "transfer-encoding" && v.eq_ignore_ascii_case("chunked"));
    let body = if chunked {
        dechunk(rest)
    } else {
        if let Some((_, len)) = headers.iter().find(|(n, _)| n == "content-length") {
            assert_eq!(rest.len(), len.parse::<usize>().unwrap(), "content-length");
        }
        rest.to_vec()
    };
    Resp {
        status,
        headers,
        body,
    }
}

fn dechunk(mut rest: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let eol = rest
            .windows(2)
            .position(|w| w == b"\r\n")
            .expect("chunk size");
        let size_line = std::str::from_utf8(&rest[..eol]).unwrap();
        let size = usize::from_str_radix(size_line.split(';').next().unwrap().trim(), 16).unwrap();
        rest = &rest[eol + 2..];
        if size == 0 {
            return out;
        }
        out.extend_from_slice(&rest[..size]);
        rest = &rest[size + 2..];
    }
}

#[tokio::test]
async fn search_health_and_principals() {
    let db = TestDb::with_sample("http_search").await;
    let server = Server::start(ctx(&db, RetrievalProfile::default())).await;

    let r = server
        .post(
            "/api/search",
            &json!({"query": "wireless headphones", "limit": 5}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(r.header("content-type"), Some("application/json"));
    let v = r.json();
    let results = v["results"].as_array().expect("results");
    assert!(!results.is_empty() && results.len() <= 5, "{v}");
    let event = v["search_event_id"].as_str().expect("search_event_id");
    assert_eq!(principal_of(&db, event).await, "anonymous");

    // An API Gateway stage prefix is tolerated.
    let r = server
        .post("/prod/api/search", &json!({"query": "kettle", "limit": 3}))
        .await;
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    assert!(r.json()["search_event_id"].is_string());

    // The local principal header is recorded in the receipt.
    let body = json!({"query": "office chair", "limit": 3}).to_string();
    let r = server
        .send(
            "POST",
            "/api/search",
            &[("x-mosaic-principal", "tester@example.com:dev_1.a-b")],
            body.as_bytes(),
        )
        .await;
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    let event = r.json()["search_event_id"].as_str().unwrap().to_string();
    assert_eq!(
        principal_of(&db, &event).await,
        "local:tester@example.com:dev_1.a-b"
    );

    // A malformed principal is refused before anything runs.
    let too_long = "p".repeat(129);
    for bad in ["two words", "a/b", too_long.as_str(), ""] {
        let r = server
            .send(
                "POST",
                "/api/search",
                &[("x-mosaic-principal", bad)],
                body.as_bytes(),
            )
            .await;
        r.assert_error(400, "invalid_argument", Some("x-mosaic-principal"));
    }
    let r = server
        .send("GET", "/healthz", &[("x-mosaic-principal", "a b")], b"")
        .await;
    r.assert_error(400, "invalid_argument", Some("x-mosaic-principal"));

    for path in ["/healthz", "/prod/healthz"] {
        let r = server.get(path).await;
        assert_eq!(r.status, 200);
        assert_eq!(r.json(), json!({"status": "ok"}));
    }
    server.shutdown().await;
}

#[tokio::test]
async fn body_rules_and_routes() {
    let db = TestDb::with_sample("http_body").await;
    let server = Server::start(ctx(&db, RetrievalProfile::default())).await;

    for bad in [&b"{\"query\": "[..], b"not json", b"", b"\xff\xfe{}"] {
        let r = server.send("POST", "/api/search", &[], bad).await;
        r.assert_error(400, "invalid_json", None);
    }
    for non_object in ["[1, 2]", "\"headphones\"", "42", "null"] {
        let r = server
            .send("POST", "/api/search", &[], non_object.as_bytes())
            .await;
        r.assert_error(400, "invalid_json", None);
    }

    // 65 KiB: refused before parsing, even though it is valid JSON.
    let big = padded_body(65 * 1024);
    let r = server.send("POST", "/api/search", &[], &big).await;
    r.assert_error(413, "payload_too_large", None);
    // A much larger body still gets the envelope, not a broken pipe.
    let r = server
        .send("POST", "/api/search", &[], &padded_body(512 * 1024))
        .await;
    r.assert_error(413, "payload_too_large", None);
    // Exactly 64 KiB is parsed (and refused for the over-long query).
    let at_limit = padded_body(64 * 1024);
    let r = server.send("POST", "/api/search", &[], &at_limit).await;
    r.assert_error(400, "invalid_argument", Some("query"));

    let r = server
        .post("/api/search", &json!({"query": "tent", "bogus": 1}))
        .await;
    r.assert_error(400, "unknown_field", Some("bogus"));

    // Unknown routes and wrong methods are the standard refusal.
    let not_found = serde_json::to_vec(&Error::NotFound.body()).unwrap();
    for (method, path) in [
        ("GET", "/api/nope"),
        ("POST", "/nope"),
        ("GET", "/"),
        ("GET", "/api/search"),
        ("PUT", "/api/search"),
        ("POST", "/api/retrieval/events/abc"),
        ("GET", "/api/products/p1/evidence"),
        ("POST", "/healthz"),
        ("GET", "/a/b/healthz"),
        // At most one stage segment before `api`.
        ("POST", "/a/b/api/search"),
        ("POST", "/a/b/c/d/api/search"),
        ("GET", "/a/b/api/openapi.json"),
    ] {
        let r = server.send(method, path, &[], b"").await;
        r.assert_error(404, "not_found", None);
        assert_eq!(r.body, not_found, "{method} {path}");
    }
    let r = server
        .post("/a/b/c/d/api/search", &json!({"query": "tent"}))
        .await;
    r.assert_error(404, "not_found", None);

    // A body id that contradicts the path is refused by the router.
    let r = server
        .post(
            "/api/products/P-1/evidence",
            &json!({"retrieval_scope_id": uuid::Uuid::new_v4(), "evidence_query": "battery", "product_id": "P-2"}),
        )
        .await;
    r.assert_error(400, "invalid_argument", Some("product_id"));
    let r = server
        .post(
            &format!("/api/retrieval/events/{}/compare", uuid::Uuid::new_v4()),
            &json!({"retrieval_scope_id": uuid::Uuid::new_v4(), "product_ids": ["a", "b"]}),
        )
        .await;
    r.assert_error(400, "invalid_argument", Some("retrieval_scope_id"));
    // The scoped routes apply the same body rules.
    let r = server
        .send("POST", "/api/products/P-1/evidence", &[], b"[]")
        .await;
    r.assert_error(400, "invalid_json", None);
    let r = server
        .send(
            "POST",
            &format!("/api/retrieval/events/{}/compare", uuid::Uuid::new_v4()),
            &[],
            &big,
        )
        .await;
    r.assert_error(413, "payload_too_large", None);
    server.shutdown().await;
}

/// A JSON object of exactly `n` bytes with a long `query`.
fn padded_body(n: usize) -> Vec<u8> {
    let frame = "{\"query\":\"\"}".len();
    let body = format!("{{\"query\":\"{}\"}}", "a".repeat(n - frame));
    assert_eq!(body.len(), n);
    body.into_bytes()
}

#[tokio::test]
async fn refusals_are_byte_identical() {
    let db = TestDb::with_sample("http_refusals").await;
    let server = Server::start(ctx(&db, RetrievalProfile::default())).await;

    // A real event of another principal.
    let body = json!({"query": "laptop", "limit": 3}).to_string();
    let r = server
        .send(
            "POST",
            "/api/search",
            &[("x-mosaic-principal", "alice")],
            body.as_bytes(),
        )
        .await;
    assert_eq!(r.status, 200);
    let alices = r.json()["search_event_id"].as_str().unwrap().to_string();

    let strip = |r: Resp| {
        let headers: Vec<(String, String)> =
            r.headers.into_iter().filter(|(n, _)| n != "date").collect();
        (r.status, headers, r.body)
    };
    let reference = strip(server.get("/api/retrieval/events/not-a-uuid").await);
    assert_eq!(reference.0, 404);
    assert_eq!(
        reference.2,
        serde_json::to_vec(&Error::NotFound.body()).unwrap()
    );
    let random = format!("/api/retrieval/events/{}", uuid::Uuid::new_v4());
    let others = [
        strip(server.get(&random).await),
        strip(
            server
                .send(
                    "GET",
                    &format!("/api/retrieval/events/{alices}"),
                    &[("x-mosaic-principal", "bob")],
                    b"",
                )
                .await,
        ),
        strip(server.get("/api/retrieval/events/%zz").await),
        strip(server.get("/api/no-such-route").await),
    ];
    for other in others {
        assert_eq!(other, reference);
    }
    server.shutdown().await;
}

#[tokio::test]
async fn healthz_reports_an_unreachable_database() {
    // Nothing listens on port 1.
    let ctx = Ctx::from_url(
        "postgres://nobody:nothing@127.0.0.1:1/none",
        1,
        RetrievalProfile::default(),
    )
    .unwrap();
    let server = Server::start(ctx).await;
    let r = server.get("/healthz").await;
    r.assert_error(503, "unavailable", None);
    server.shutdown().await;
}

#[tokio::test]
async fn scoped_routes_map_path_and_body() {
    let db = TestDb::with_sample("http_scoped").await;
    let server = Server::start(ctx(&db, RetrievalProfile::default())).await;
    let alice = [("x-mosaic-principal", "alice")];
    let post = |path: String, body: Value| {
        let server = &server;
        async move {
            server
                .send("POST", &path, &alice, body.to_string().as_bytes())
                .await
        }
    };

    let r = post(
        "/api/search".into(),
        json!({"query": "wireless headphones", "limit": 3}),
    )
    .await;
    assert_eq!(r.status, 200);
    let v = r.json();
    let event = v["search_event_id"].as_str().unwrap().to_string();
    let products: Vec<String> = v["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["product_id"].as_str().unwrap().to_string())
        .collect();
    assert!(products.len() >= 2, "{v}");

    let r = server
        .send(
            "GET",
            &format!("/prod/api/retrieval/events/{event}"),
            &alice,
            b"",
        )
        .await;
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    assert!(r.json().is_object());

    // The path id is percent-decoded; a matching body id is accepted.
    let encoded: String = products[0].bytes().map(|b| format!("%{b:02X}")).collect();
    for (path_id, body_id) in [
        (products[0].clone(), None),
        (encoded, Some(products[0].clone())),
    ] {
        let mut body = json!({"retrieval_scope_id": event, "evidence_query": "battery life"});
        if let Some(id) = body_id {
            body["product_id"] = id.into();
        }
        let r = post(format!("/api/products/{path_id}/evidence"), body).await;
        assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
        assert!(r.json().is_object());
    }
    // Unknown fields reach the operation's own validation.
    let r = post(
        format!("/api/products/{}/evidence", products[0]),
        json!({"retrieval_scope_id": event, "evidence_query": "battery", "bogus": true}),
    )
    .await;
    r.assert_error(400, "unknown_field", Some("bogus"));

    let r = post(
        format!("/api/retrieval/events/{event}/compare"),
        json!({"product_ids": [products[0], products[1]]}),
    )
    .await;
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    let r = post(
        format!("/api/retrieval/events/{event}/compare"),
        json!({"product_ids": [products[0], products[1]], "retrieval_scope_id": event}),
    )
    .await;
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    server.shutdown().await;
}

#[tokio::test]
async fn the_contract_is_served_as_tools_and_openapi() {
    let db = TestDb::with_sample("http_tools").await;
    let server = Server::start(ctx(&db, RetrievalProfile::default())).await;
    for surface in ["skill", "mcp", "agentcore"] {
        let r = server.get(&format!("/api/tools?surface={surface}")).await;
        assert_eq!(r.status, 200, "{surface}");
        let served: Value = serde_json::from_slice(&r.body).unwrap();
        assert_eq!(
            served,
            mosaic::contract::tools(surface).unwrap(),
            "{surface}"
        );
    }
    let default: Value = serde_json::from_slice(&server.get("/api/tools").await.body).unwrap();
    assert_eq!(default, mosaic::contract::tools("skill").unwrap());
    for bad in ["soap", "%zz", "%FF"] {
        server
            .get(&format!("/api/tools?surface={bad}"))
            .await
            .assert_error(400, "invalid_argument", Some("surface"));
    }
    let r = server.get("/prod/api/openapi.json").await;
    assert_eq!(r.status, 200);
    let doc: Value = serde_json::from_slice(&r.body).unwrap();
    assert_eq!(doc, mosaic::contract::openapi());
    assert!(doc["openapi"].as_str().unwrap().starts_with("3.1"));
    server.shutdown().await;
}

#[tokio::test]
async fn a_web_page_cannot_speak_for_this_machine() {
    // The principal header authenticates nobody, so the local server must
    // not answer a page that re-pointed its own domain at 127.0.0.1 (DNS
    // rebinding), nor take a body a page can send cross-origin without a
    // preflight (text/plain, a form).
    let db = TestDb::with_sample("http_rebinding").await;
    let server = Server::start(ctx(&db, RetrievalProfile::default())).await;
    let owner = db.owner().await;
    let events = || async {
        let n: i64 = owner
            .query_one("SELECT count(*) FROM receipts.search_events", &[])
            .await
            .unwrap()
            .get(0);
        n
    };
    let before = events().await;
    let body = json!({"query": "wireless headphones", "limit": 3}).to_string();
    let body = body.as_bytes();
    let port = server.addr.port().to_string();
    for host in [
        "attacker.example",
        &format!("attacker.example:{port}"),
        "127.0.0.2",
    ] {
        let r = server
            .send("POST", "/api/search", &[("host", host)], body)
            .await;
        r.assert_error(400, "invalid_argument", Some("host"));
        let r = server.send("GET", "/healthz", &[("host", host)], b"").await;
        r.assert_error(400, "invalid_argument", Some("host"));
    }
    for media in ["text/plain", "application/x-www-form-urlencoded"] {
        let r = server
            .send("POST", "/api/search", &[("content-type", media)], body)
            .await;
        r.assert_error(400, "invalid_argument", Some("content-type"));
    }
    // A body the router refuses anyway gets the router's answer, whatever
    // its content type: 413 past the limit, not_found on a path that names
    // nothing.
    let large = vec![b'x'; mosaic::http::MAX_BODY + 1];
    let r = server
        .send(
            "POST",
            "/api/search",
            &[("content-type", "text/plain")],
            &large,
        )
        .await;
    r.assert_error(413, "payload_too_large", None);
    let r = server
        .send(
            "POST",
            "/api/nothing",
            &[("content-type", "text/plain")],
            body,
        )
        .await;
    r.assert_error(404, "not_found", None);
    // A request without a Host names nothing this server answers to.
    for (method, path, body) in [("POST", "/api/search", body), ("GET", "/healthz", &b""[..])] {
        let mut s = TcpStream::connect(server.addr).await.expect("connect");
        let mut req = format!(
            "{method} {path} HTTP/1.1\r\nconnection: close\r\ncontent-type: application/json\r\n\
             content-length: {}\r\n\r\n",
            body.len()
        )
        .into_bytes();
        req.extend_from_slice(body);
        s.write_all(&req).await.expect("write");
        let mut buf = Vec::new();
        tokio::time::timeout(std::time::Duration::from_secs(30), s.read_to_end(&mut buf))
            .await
            .expect("response in time")
            .expect("read response");
        parse(&buf).assert_error(400, "invalid_argument", Some("host"));
    }
    assert_eq!(events().await, before, "a refused request wrote a receipt");

    // This machine's names, and JSON with a charset, are served.
    for host in [format!("localhost:{port}"), format!("127.0.0.1:{port}")] {
        let r = server
            .send(
                "POST",
                "/api/search",
                &[
                    ("host", &host),
                    ("content-type", "application/json; charset=utf-8"),
                ],
                body,
            )
            .await;
        assert_eq!(
            r.status,
            200,
            "{host}: {}",
            String::from_utf8_lossy(&r.body)
        );
    }
    assert_eq!(events().await, before + 2);
    server.shutdown().await;
}

#[tokio::test]
async fn a_body_that_stops_arriving_is_refused_at_the_request_deadline() {
    let db = TestDb::with_sample("http_slow_body").await;
    let profile = RetrievalProfile {
        request_deadline_ms: 300,
        ..RetrievalProfile::default()
    };
    let server = Server::start(ctx(&db, profile)).await;
    // A body announced as 100 bytes of which 9 arrive; the connection
    // stays open.
    let mut s = TcpStream::connect(server.addr).await.expect("connect");
    let head = format!(
        "POST /api/search HTTP/1.1\r\nhost: {}\r\ncontent-type: application/json\r\n\
         content-length: 100\r\n\r\n{{\"query\":",
        server.addr
    );
    s.write_all(head.as_bytes()).await.expect("write");
    let mut buf = Vec::new();
    tokio::time::timeout(std::time::Duration::from_secs(20), s.read_to_end(&mut buf))
        .await
        .expect("an answer and the connection closed, not a wait for the rest of the body")
        .expect("read");
    let r = parse(&buf);
    r.assert_error(400, "invalid_json", None);
    assert!(
        r.json()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("did not arrive in full"),
        "{}",
        r.json()
    );
    drop(s);
    server.shutdown().await;
}

/// A server that needs no database: the routes below do not touch it.
async fn server_without_database(connections: Connections) -> Server {
    let ctx = Ctx::from_url(
        "postgres://nobody:nothing@127.0.0.1:1/none",
        1,
        RetrievalProfile::default(),
    )
    .unwrap();
    Server::start_with(ctx, connections).await
}

/// Reads one response with a `content-length` body off a kept-alive
/// connection.
async fn read_response(s: &mut TcpStream) -> Resp {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
            let length: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .map(|v| v.trim().parse().unwrap())
                .expect("a content-length");
            if buf.len() >= end + 4 + length {
                return parse(&buf[..end + 4 + length]);
            }
        }
        let n = s.read(&mut chunk).await.expect("read");
        assert!(
            n > 0,
            "closed mid-response: {:?}",
            String::from_utf8_lossy(&buf)
        );
        buf.extend_from_slice(&chunk[..n]);
    }
}

/// Whether the server closes `s` within `within` (whatever it sent first).
async fn closed_within(s: &mut TcpStream, within: std::time::Duration) -> Option<Vec<u8>> {
    let mut buf = Vec::new();
    match tokio::time::timeout(within, s.read_to_end(&mut buf)).await {
        Ok(_) => Some(buf),
        Err(_) => None,
    }
}

#[tokio::test]
async fn a_connection_that_trickles_its_headers_is_closed() {
    let server = server_without_database(Connections {
        header_read_timeout: std::time::Duration::from_millis(300),
        ..Connections::DEFAULT
    })
    .await;
    let s = TcpStream::connect(server.addr).await.expect("connect");
    let (mut read, mut write) = s.into_split();
    // The request line and headers one byte at a time, far slower than the
    // header timeout allows; writing stops once the server has hung up.
    let head = format!("GET /api/tools HTTP/1.1\r\nhost: {}\r\n\r\n", server.addr);
    let trickle = tokio::spawn(async move {
        for b in head.into_bytes() {
            if write.write_all(&[b]).await.is_err() {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
    });
    let mut buf = Vec::new();
    let _ = tokio::time::timeout(
        std::time::Duration::from_secs(10),
        read.read_to_end(&mut buf),
    )
    .await
    .expect("the server closes a connection whose headers do not arrive in time");
    assert!(
        !String::from_utf8_lossy(&buf).contains(" 200 "),
        "{}",
        String::from_utf8_lossy(&buf)
    );
    trickle.abort();

    // A connection that sends nothing at all is closed as well.
    let mut silent = TcpStream::connect(server.addr).await.expect("connect");
    closed_within(&mut silent, std::time::Duration::from_secs(10))
        .await
        .expect("a silent connection is closed");
    server.shutdown().await;
}

#[tokio::test]
async fn a_client_that_stops_reading_cannot_hold_the_shutdown() {
    let server = server_without_database(Connections {
        shutdown_grace: std::time::Duration::from_millis(500),
        ..Connections::DEFAULT
    })
    .await;
    // Requests sent back to back and their answers never read: once the
    // socket buffers are full the server's writes wait for ever.
    let socket = tokio::net::TcpSocket::new_v4().expect("socket");
    socket.set_recv_buffer_size(4096).expect("buffer");
    let mut s = socket.connect(server.addr).await.expect("connect");
    let request = format!(
        "GET /api/openapi.json HTTP/1.1\r\nhost: {}\r\n\r\n",
        server.addr
    );
    for _ in 0..400 {
        if s.write_all(request.as_bytes()).await.is_err() {
            break;
        }
    }
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    // The shutdown returns after its grace (the helper allows 10 s).
    server.shutdown().await;
    drop(s);
}

#[tokio::test]
async fn keep_alive_serves_requests_and_closes_when_idle() {
    let server = server_without_database(Connections {
        header_read_timeout: std::time::Duration::from_millis(500),
        ..Connections::DEFAULT
    })
    .await;
    let mut s = TcpStream::connect(server.addr).await.expect("connect");
    let request = format!("GET /api/tools HTTP/1.1\r\nhost: {}\r\n\r\n", server.addr);
    for _ in 0..3 {
        s.write_all(request.as_bytes()).await.expect("write");
        let r = read_response(&mut s).await;
        assert_eq!(r.status, 200);
        assert_eq!(r.json(), mosaic::contract::tools("skill").unwrap());
    }
    // Idle past the header timeout: the server closes the connection.
    let rest = closed_within(&mut s, std::time::Duration::from_secs(10))
        .await
        .expect("an idle keep-alive connection is closed");
    assert!(rest.is_empty(), "{}", String::from_utf8_lossy(&rest));
    server.shutdown().await;
}

#[tokio::test]
async fn connections_past_the_cap_wait_for_a_free_place() {
    let server = server_without_database(Connections {
        max_open: 1,
        header_read_timeout: std::time::Duration::from_secs(60),
        ..Connections::DEFAULT
    })
    .await;
    // One connection takes the only place and sends nothing.
    let holder = TcpStream::connect(server.addr).await.expect("connect");
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    // The next one is not served while the place is taken...
    let mut waiting = TcpStream::connect(server.addr).await.expect("connect");
    let request = format!(
        "GET /api/tools HTTP/1.1\r\nhost: {}\r\nconnection: close\r\n\r\n",
        server.addr
    );
    waiting.write_all(request.as_bytes()).await.expect("write");
    let mut first = [0u8; 1];
    let early = tokio::time::timeout(
        std::time::Duration::from_millis(500),
        waiting.read(&mut first),
    )
    .await;
    assert!(early.is_err(), "served past the connection cap: {early:?}");
    // ...and is once the first one closes.
    drop(holder);
    let buf = closed_within(&mut waiting, std::time::Duration::from_secs(10))
        .await
        .expect("served once a place is free");
    assert_eq!(parse(&buf).status, 200);
    server.shutdown().await;
}
