//! `mosaic mcp` driven by a client the project did not write: the official
//! MCP Python SDK (PyPI `mcp`, installed by scripts/mcp-client.sh into a
//! private virtual environment) runs tests/mcp_client.py against the real
//! binary, over stdio and over streamable HTTP, on a throw-away database.
//!
//! The client initializes, lists the tools, searches, asks for evidence on a
//! granted and on an ungranted product, compares, explains, and makes two
//! calls that must fail. The SDK itself checks every successful result's
//! structured content against the tool's output schema.
//!
//! Where the SDK would not let a client be wrong, the tests speak to the
//! binary directly: JSON-RPC lines over stdio (malformed ones included,
//! and the log they leave) and raw HTTP requests (foreign `Host` and
//! `Origin` values, bodies that are not messages).
//!
//! This test belongs to the `mosaic-cli` package (see cli/Cargo.toml) so
//! that cargo builds the `mosaic` binary for it.

use mosaic::contract;
use mosaic::error::NOT_FOUND_MESSAGE;
use mosaic::http::MAX_BODY;
use mosaic_integration_tests::{principal_of, TestDb};
use serde_json::{json, Value};
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Mutex;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;

const MOSAIC: &str = env!("CARGO_BIN_EXE_mosaic");
const SESSION_TIMEOUT: Duration = Duration::from_secs(180);

fn repo() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
}

/// The virtual environment's Python, after making sure (once per process)
/// that the pinned SDK is installed there.
fn python() -> PathBuf {
    static INSTALLED: Mutex<bool> = Mutex::new(false);
    let mut installed = INSTALLED.lock().unwrap_or_else(|e| e.into_inner());
    if !*installed {
        let status = std::process::Command::new("bash")
            .arg(repo().join("scripts/mcp-client.sh"))
            .status()
            .expect("run scripts/mcp-client.sh");
        assert!(
            status.success(),
            "scripts/mcp-client.sh failed: the MCP Python SDK is not installed"
        );
        *installed = true;
    }
    let venv = std::env::var_os("MOSAIC_MCP_VENV").map_or_else(
        || PathBuf::from(std::env::var_os("HOME").expect("HOME")).join(".cache/mosaic/venv-mcp"),
        PathBuf::from,
    );
    venv.join("bin/python")
}

/// The server's arguments after `mcp`: the test database and the hashing
/// embedder its vectors were made with.
fn server_args(db: &TestDb, identity: &[&str]) -> Vec<String> {
    let mut args: Vec<String> = identity.iter().map(|s| s.to_string()).collect();
    args.extend([
        "--runtime-database-url".into(),
        db.runtime_url(),
        "--embedder".into(),
        "hashing".into(),
    ]);
    args
}

/// Runs the client script; its JSON report.
async fn client(args: &[String]) -> Value {
    client_with(args, &[]).await.0
}

/// [`client`] with more environment for the client; the report and the
/// session's stderr (the server's log over stdio).
async fn client_with(args: &[String], env: &[(&str, &str)]) -> (Value, String) {
    let mut cmd = Command::new(python());
    cmd.arg(repo().join("tests/mcp_client.py"))
        .args(args)
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .kill_on_drop(true);
    let out = tokio::time::timeout(SESSION_TIMEOUT, cmd.output())
        .await
        .expect("the MCP session finishes in time")
        .expect("run the MCP client");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "the MCP client failed ({}):\n{stdout}\n{stderr}",
        out.status
    );
    let report = serde_json::from_str(stdout.trim())
        .unwrap_or_else(|e| panic!("the client's report is not JSON ({e}):\n{stdout}\n{stderr}"));
    (report, stderr.to_string())
}

/// Everything the session must show, whatever the transport.
async fn check_session(report: &Value, db: &TestDb, principal: &str) {
    let c = contract::contract();
    assert_eq!(report["server_info"]["name"], c.service.name);
    assert!(report["capabilities"]["tools"].is_object(), "{report}");

    // The tool list is the contract's MCP listing, field for field.
    let want = contract::tools("mcp").unwrap();
    let want = want["tools"].as_array().unwrap();
    let have = report["tools"].as_array().expect("tools");
    assert_eq!(have.len(), 4);
    for (have, want) in have.iter().zip(want) {
        for key in [
            "name",
            "title",
            "description",
            "inputSchema",
            "outputSchema",
            "annotations",
        ] {
            assert_eq!(have[key], want[key], "{} {key}", want["name"]);
        }
    }

    let calls = report["calls"].as_array().expect("calls");
    let tools: Vec<&str> = calls.iter().map(|c| c["tool"].as_str().unwrap()).collect();
    assert_eq!(
        tools,
        [
            "search_products",
            "get_product_evidence",
            "get_product_evidence",
            "compare_products",
            "explain_retrieval",
            "search_products",
            "get_product_evidence"
        ]
    );
    let ok = |i: usize| {
        let call = &calls[i];
        assert_eq!(call["is_error"], false, "{call}");
        assert!(!call["text"].as_str().unwrap().is_empty(), "{call}");
        &call["structured"]
    };

    // search: the event is the process's principal's.
    let search = ok(0);
    let event = search["search_event_id"].as_str().expect("search_event_id");
    assert_eq!(principal_of(db, event).await, principal);
    assert_eq!(search["results"].as_array().unwrap().len(), 5);
    assert!(calls[0]["text"].as_str().unwrap().contains(event));

    // evidence on a granted product.
    let evidence = ok(1);
    assert_eq!(evidence["product_id"], calls[1]["arguments"]["product_id"]);
    assert_eq!(evidence["retrieval_scope_id"], event);
    assert!(!evidence["evidence"].as_array().unwrap().is_empty());

    // evidence on an ungranted one: a tool error with the generic refusal.
    let refusal = json!({"error": {"code": "not_found", "message": NOT_FOUND_MESSAGE}});
    assert_eq!(calls[2]["is_error"], true, "{}", calls[2]);
    assert_eq!(calls[2]["structured"], refusal);
    assert_eq!(
        calls[2]["text"],
        format!("not_found: {NOT_FOUND_MESSAGE}").as_str()
    );

    // compare and explain.
    let compared = ok(3);
    let ids: Vec<&Value> = compared["products"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| &p["product_id"])
        .collect();
    assert_eq!(
        ids,
        calls[3]["arguments"]["product_ids"]
            .as_array()
            .unwrap()
            .iter()
            .collect::<Vec<_>>()
    );
    let explained = ok(4);
    assert_eq!(explained["search_event_id"], event);
    assert_eq!(explained["authorized_limit"], 2);

    // An invalid argument: a tool error naming the field.
    assert_eq!(calls[5]["is_error"], true, "{}", calls[5]);
    assert_eq!(calls[5]["structured"]["error"]["code"], "invalid_argument");
    assert_eq!(calls[5]["structured"]["error"]["field"], "limit");

    // A scope that does not exist is refused exactly like an ungranted product.
    assert_eq!(calls[6]["is_error"], true, "{}", calls[6]);
    assert_eq!(calls[6]["structured"], refusal);
    assert_eq!(calls[6]["text"], calls[2]["text"]);
}

#[tokio::test]
async fn an_mcp_client_over_stdio() {
    let db = TestDb::with_sample("mcp_stdio").await;
    let mut args = vec!["stdio".to_string(), MOSAIC.to_string(), "mcp".to_string()];
    args.extend(server_args(&db, &["--principal", "alice"]));
    let report = client(&args).await;
    assert_eq!(report["transport"], "stdio");
    check_session(&report, &db, "local:alice").await;
}

/// `mosaic mcp --http 127.0.0.1:0 --allowed-host MCP.Example --principal
/// NAME` on `db`: the process and the URL it prints.
async fn http_server(db: &TestDb, principal: &str) -> (tokio::process::Child, String) {
    let mut server = Command::new(MOSAIC);
    server
        .arg("mcp")
        .args(["--http", "127.0.0.1:0", "--allowed-host", "MCP.Example"])
        .args(server_args(db, &["--principal", principal]))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true);
    let mut child = server.spawn().expect("start mosaic mcp --http");
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let url = tokio::time::timeout(Duration::from_secs(60), lines.next_line())
        .await
        .expect("the server prints its URL in time")
        .expect("read the server's stdout")
        .expect("the server prints its URL");
    assert!(
        url.starts_with("http://127.0.0.1:") && url.ends_with("/mcp"),
        "{url}"
    );
    (child, url)
}

#[tokio::test]
async fn an_mcp_client_over_streamable_http() {
    let db = TestDb::with_sample("mcp_http").await;
    let (mut child, url) = http_server(&db, "bob").await;
    http_guards(&url).await;
    let report = client(&["http".to_string(), url]).await;
    assert_eq!(report["transport"], "http");
    check_session(&report, &db, "local:bob").await;
    child.kill().await.expect("stop the server");

    // Another process, as the anonymous principal: bob's retrieval scope is
    // refused with the generic refusal, as over HTTP.
    let event = report["calls"][0]["structured"]["search_event_id"]
        .as_str()
        .unwrap()
        .to_string();
    let mut args = vec![
        "--explain".to_string(),
        event,
        "stdio".to_string(),
        MOSAIC.to_string(),
        "mcp".to_string(),
    ];
    args.extend(server_args(&db, &["--anonymous"]));
    let other = client(&args).await;
    let calls = other["calls"].as_array().unwrap();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0]["is_error"], true, "{other}");
    assert_eq!(
        calls[0]["structured"],
        json!({"error": {"code": "not_found", "message": NOT_FOUND_MESSAGE}})
    );
}

/// An `initialize` request of exactly `len` bytes (padded with spaces).
fn initialize_body(len: usize) -> Vec<u8> {
    let mut body = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"}}})
    .to_string()
    .into_bytes();
    assert!(body.len() <= len);
    body.resize(len, b' ');
    body
}

/// One POST to the MCP endpoint at `addr` over a fresh connection, with
/// `headers` and the ones a client sends that `headers` do not give
/// (`host` naming `addr`, JSON content, JSON and event streams accepted):
/// the status, and with `whole` the response's body (read to the end: the
/// server closes the connection after it), else nothing past the status
/// line (an accepted initialize answers on a stream).
async fn post(addr: &str, headers: &[(&str, &str)], body: &[u8], whole: bool) -> (u16, Vec<u8>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut s = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let mut head = format!(
        "POST /mcp HTTP/1.1\r\nconnection: close\r\ncontent-length: {}\r\n",
        body.len()
    );
    for (name, value) in [
        ("host", addr),
        ("content-type", "application/json"),
        ("accept", "application/json, text/event-stream"),
    ] {
        if !headers.iter().any(|(n, _)| n.eq_ignore_ascii_case(name)) {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
    }
    for (n, v) in headers {
        head.push_str(&format!("{n}: {v}\r\n"));
    }
    head.push_str("\r\n");
    let mut req = head.into_bytes();
    req.extend_from_slice(body);
    s.write_all(&req).await.expect("write the request");
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let read = async {
        loop {
            let n = s.read(&mut chunk).await.expect("read the response");
            buf.extend_from_slice(&chunk[..n]);
            if n == 0 || (!whole && buf.windows(2).any(|w| w == b"\r\n")) {
                break;
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(30), read)
        .await
        .expect("an answer in time");
    let line = String::from_utf8_lossy(&buf);
    let status = line
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("no status in {line:?}"));
    let body = match buf.windows(4).position(|w| w == b"\r\n\r\n") {
        Some(end) if whole => buf[end + 4..].to_vec(),
        _ => Vec::new(),
    };
    (status, body)
}

/// The status of one POST (see [`post`]).
async fn post_status(addr: &str, headers: &[(&str, &str)], body: &[u8]) -> u16 {
    post(addr, headers, body, false).await.0
}

/// The `host:port` of an MCP endpoint's URL (`http://host:port/mcp`).
fn address_of(url: &str) -> &str {
    url.strip_prefix("http://")
        .and_then(|a| a.strip_suffix("/mcp"))
        .expect("an MCP endpoint's URL")
}

/// What `mosaic mcp --http ... --allowed-host MCP.Example` refuses before
/// any MCP runs: a foreign `Host`, a browser `Origin` that does not name
/// this machine or the listed name, and a body over 64 KiB.
async fn http_guards(url: &str) {
    let addr = address_of(url);
    let port = addr.rsplit_once(':').unwrap().1;
    let init = initialize_body(200);
    for (headers, want) in [
        (vec![], 200),
        (vec![("host", format!("localhost:{port}"))], 200),
        (vec![("host", format!("mcp.example:{port}"))], 200),
        (vec![("host", format!("attacker.example:{port}"))], 403),
        (vec![("origin", format!("http://127.0.0.1:{port}"))], 200),
        (vec![("origin", "http://localhost:5173".to_string())], 200),
        (vec![("origin", "https://mcp.example".to_string())], 200),
        (vec![("origin", "http://attacker.example".to_string())], 403),
        (
            vec![("origin", format!("http://attacker.example:{port}"))],
            403,
        ),
        (vec![("origin", "null".to_string())], 403),
    ] {
        let headers: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (*n, v.as_str())).collect();
        assert_eq!(
            post_status(addr, &headers, &init).await,
            want,
            "{headers:?}"
        );
    }
    assert_eq!(
        post_status(addr, &[], &initialize_body(MAX_BODY)).await,
        200
    );
    assert_eq!(
        post_status(addr, &[], &initialize_body(MAX_BODY + 1)).await,
        413
    );
}

#[tokio::test]
async fn an_identity_is_required() {
    // Neither --principal nor --anonymous: refused before serving.
    let out = Command::new(MOSAIC)
        .args(["mcp", "--embedder", "hashing"])
        .stdin(Stdio::null())
        .output()
        .await
        .expect("run mosaic mcp");
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--principal"), "{stderr}");
    // Both at once: refused too.
    let out = Command::new(MOSAIC)
        .args(["mcp", "--principal", "a", "--anonymous"])
        .stdin(Stdio::null())
        .output()
        .await
        .expect("run mosaic mcp");
    assert!(!out.status.success());
}

#[tokio::test]
async fn a_call_past_the_request_deadline_is_unavailable() {
    // The receipts held by another transaction: the explain call's read
    // waits, and the request deadline (100 ms here, as over HTTP and in the
    // functions) ends it long before the statement timeout would.
    let db = TestDb::with_sample("mcp_deadline").await;
    let mut owner = db.owner().await;
    let lock = owner.transaction().await.unwrap();
    lock.batch_execute("LOCK TABLE receipts.search_events IN ACCESS EXCLUSIVE MODE")
        .await
        .unwrap();
    let mut args: Vec<String> = [
        "--explain",
        "0b6f7d3c-5e2a-4c8b-9f1d-2a3b4c5d6e7f",
        "--server-env",
        "MOSAIC_REQUEST_DEADLINE_MS=100",
        "--server-env",
        "MOSAIC_STATEMENT_TIMEOUT_MS=60000",
        "--server-env",
        "MOSAIC_LOG=error",
        "stdio",
        MOSAIC,
        "mcp",
    ]
    .map(String::from)
    .to_vec();
    args.extend(server_args(&db, &["--principal", "alice"]));
    let (report, log) = client_with(&args, &[]).await;
    lock.rollback().await.unwrap();
    let calls = report["calls"].as_array().unwrap();
    assert_eq!(calls.len(), 1, "{report}");
    assert_eq!(calls[0]["is_error"], true, "{report}");
    assert_eq!(
        calls[0]["structured"]["error"]["code"], "unavailable",
        "{report}"
    );
    assert!(log.contains("the 100 ms deadline passed"), "{log}");
}

/// Speaks JSON-RPC to `mosaic mcp` over stdio line by line, as a client
/// the SDK would not let us be: each line of `requests` is sent, and the
/// answers are returned by id. A request longer than a message may be
/// (64 KiB) is expected to go unanswered.
async fn raw_session(args: &[String], requests: &[Value]) -> Vec<Value> {
    let answered = |r: &Value| r.get("id").is_some() && r.to_string().len() <= MAX_BODY;
    let lines: Vec<(Vec<u8>, bool)> = requests
        .iter()
        .map(|r| (r.to_string().into_bytes(), answered(r)))
        .collect();
    raw_lines(args, &[("MOSAIC_LOG", "error")], &lines).await.0
}

/// Sends each line of `lines` (without its `\n`) to `mosaic mcp` over
/// stdio, with `env`; after one marked as answered, reads one line of
/// stdout before sending the next, so the answers come in the server's
/// reading order. Then closes stdin: the answers, and the server's stderr
/// once it has exited.
async fn raw_lines(
    args: &[String],
    env: &[(&str, &str)],
    lines: &[(Vec<u8>, bool)],
) -> (Vec<Value>, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut child = Command::new(MOSAIC)
        .args(args)
        .envs(env.iter().copied())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("start mosaic mcp");
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut stderr = child.stderr.take().unwrap();
    let log = tokio::spawn(async move {
        let mut log = String::new();
        stderr.read_to_string(&mut log).await.expect("read stderr");
        log
    });
    let mut answers = Vec::new();
    for (n, (line, answered)) in lines.iter().enumerate() {
        let mut line = line.clone();
        line.push(b'\n');
        stdin.write_all(&line).await.unwrap();
        stdin.flush().await.unwrap();
        if *answered {
            let answer = tokio::time::timeout(Duration::from_secs(60), stdout.next_line())
                .await
                .unwrap_or_else(|_| panic!("no answer in time to line {}", n + 1))
                .unwrap()
                .expect("an answer");
            answers.push(serde_json::from_str::<Value>(&answer).unwrap());
        }
    }
    drop(stdin);
    let status = tokio::time::timeout(SESSION_TIMEOUT, child.wait())
        .await
        .expect("the server ends at the end of its input")
        .unwrap();
    let log = log.await.unwrap();
    assert!(status.success(), "{status}: {log}");
    // Nothing unanswered was answered.
    assert_eq!(stdout.next_line().await.unwrap(), None, "{log}");
    (answers, log)
}

#[tokio::test]
async fn a_message_that_is_not_one_is_answered_and_the_session_goes_on() {
    let db = TestDb::with_sample("mcp_bad_frames").await;
    let mut args = vec!["mcp".to_string()];
    args.extend(server_args(&db, &["--principal", "alice"]));
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"}}});
    let deep = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
    // Each bad line carries "zebra", which the log must not repeat.
    let bad: Vec<(Vec<u8>, i64, Value)> = vec![
        // Not JSON: a parse error, id null.
        (
            br#"{"jsonrpc":"2.0","id":1,"method":"ping","params":{"zebra":1}"#.to_vec(),
            -32700,
            Value::Null,
        ),
        (
            b"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"zebra\xff\"}".to_vec(),
            -32700,
            Value::Null,
        ),
        (
            br#"{"jsonrpc":"2.0","id":3,"method":"zebra"} trailing"#.to_vec(),
            -32700,
            Value::Null,
        ),
        // JSON, but not a request: invalid request, with the id when it
        // is a string or a number.
        (
            br#"{"jsonrpc":"2.0","id":4,"method":"tools/list","params":5,"zebra":1}"#.to_vec(),
            -32600,
            json!(4),
        ),
        (
            br#"{"jsonrpc":"2.0","id":"five","method":"tools/call","params":["zebra"]}"#.to_vec(),
            -32600,
            json!("five"),
        ),
        (
            br#"{"jsonrpc":"2.0","id":6.5,"method":"ping","params":{"zebra":1}}"#.to_vec(),
            -32600,
            json!(6.5),
        ),
        (
            br#"{"jsonrpc":"2.0","id":true,"method":"ping","params":{"zebra":1}}"#.to_vec(),
            -32600,
            Value::Null,
        ),
        (
            br#"{"jsonrpc":"2.0","id":{"zebra":7},"method":"ping"}"#.to_vec(),
            -32600,
            Value::Null,
        ),
        (
            br#"{"jsonrpc":"1.0","id":8,"method":"ping","params":{"zebra":1}}"#.to_vec(),
            -32600,
            json!(8),
        ),
        (
            br#"{"jsonrpc":"2.0","id":9,"method":["zebra"]}"#.to_vec(),
            -32600,
            json!(9),
        ),
        (
            br#"{"jsonrpc":"2.0","id":10,"zebra":1}"#.to_vec(),
            -32600,
            json!(10),
        ),
        (
            br#"[{"jsonrpc":"2.0","id":11,"method":"ping","params":{"zebra":1}}]"#.to_vec(),
            -32600,
            Value::Null,
        ),
        (b"[]".to_vec(), -32600, Value::Null),
        (br#""zebra""#.to_vec(), -32600, Value::Null),
        // Nested 20,000 deep: read as far as its id.
        (
            format!("[\"zebra\",{}]", deep(20_000)).into_bytes(),
            -32600,
            Value::Null,
        ),
        (
            format!(
                r#"{{"jsonrpc":"2.0","id":12,"method":"ping","params":{{"zebra":{}}}}}"#,
                deep(20_000)
            )
            .into_bytes(),
            -32600,
            json!(12),
        ),
    ];
    let mut lines = vec![
        (init.to_string().into_bytes(), true),
        (
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"})
                .to_string()
                .into_bytes(),
            false,
        ),
    ];
    for (line, _, _) in &bad {
        lines.push((line.clone(), true));
    }
    // The session goes on.
    lines.push((
        json!({"jsonrpc": "2.0", "id": 13, "method": "tools/list", "params": {}})
            .to_string()
            .into_bytes(),
        true,
    ));
    let (answers, log) = raw_lines(&args, &[("MOSAIC_LOG", "warn")], &lines).await;
    assert!(
        answers[0]["result"]["serverInfo"].is_object(),
        "{}",
        answers[0]
    );
    for ((line, code, id), answer) in bad.iter().zip(&answers[1..]) {
        let line = String::from_utf8_lossy(&line[..line.len().min(80)]);
        assert_eq!(answer["jsonrpc"], "2.0", "{line}: {answer}");
        assert_eq!(answer["error"]["code"], *code, "{line}: {answer}");
        let message = answer["error"]["message"].as_str().unwrap();
        let want = if *code == -32700 {
            "Parse error"
        } else {
            "Invalid request"
        };
        assert!(message.starts_with(want), "{line}: {answer}");
        // The id is there, null when it cannot be read.
        assert_eq!(answer.get("id"), Some(id), "{line}: {answer}");
        assert!(!answer.to_string().contains("zebra"), "{line}: {answer}");
    }
    let last = answers.last().unwrap();
    assert_eq!(last["id"], 13);
    assert_eq!(last["result"]["tools"].as_array().unwrap().len(), 4);
    assert_eq!(answers.len(), bad.len() + 2);
    // Each bad line is one line of the log, without its content.
    let refused: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("mcp: refused a message"))
        .collect();
    assert_eq!(refused.len(), bad.len(), "{log}");
    assert!(!log.contains("zebra"), "{log}");
}

#[tokio::test]
async fn the_log_at_info_has_one_line_per_call_without_its_arguments() {
    let db = TestDb::with_sample("mcp_quiet_log").await;
    let mut args = vec!["mcp".to_string()];
    args.extend(server_args(&db, &["--principal", "alice"]));
    let lines: Vec<(Vec<u8>, bool)> = [
        (
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "client-name-marker", "version": "0"}}}),
            true,
        ),
        (
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
            false,
        ),
        (
            json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
                "name": "search_products",
                "arguments": {"query": "argument-marker running shoes", "limit": 3}}}),
            true,
        ),
        (
            json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
                "name": "get_product_evidence",
                "arguments": {"retrieval_scope_id": "argument-marker", "product_id": "p"}}}),
            true,
        ),
    ]
    .into_iter()
    .map(|(v, answered)| (v.to_string().into_bytes(), answered))
    .collect();
    let (answers, log) = raw_lines(&args, &[("MOSAIC_LOG", "info")], &lines).await;
    assert_eq!(answers[1]["result"]["isError"], false, "{}", answers[1]);
    assert_eq!(answers[2]["result"]["isError"], true, "{}", answers[2]);
    let calls: Vec<&str> = log.lines().filter(|l| l.contains("mcp call")).collect();
    assert_eq!(calls.len(), 2, "{log}");
    assert!(calls[0].contains("search_products"), "{log}");
    assert!(calls[1].contains("get_product_evidence"), "{log}");
    assert!(!log.contains("argument-marker"), "{log}");
    assert!(!log.contains("client-name-marker"), "{log}");
    assert!(!log.contains("rmcp"), "{log}");

    // Naming the SDK's target brings its events back: the operator asked.
    let (_, log) = raw_lines(&args, &[("MOSAIC_LOG", "info,rmcp=info")], &lines).await;
    assert!(log.contains("rmcp::"), "{log}");
    assert!(log.contains("client-name-marker"), "{log}");
}

#[tokio::test]
async fn a_post_that_is_not_a_message_is_a_400_with_the_json_rpc_error() {
    let db = TestDb::with_sample("mcp_http_bodies").await;
    let (mut child, url) = http_server(&db, "bob").await;
    let addr = address_of(&url);
    for (body, code, id) in [
        (br#"{"jsonrpc":"#.to_vec(), -32700, Value::Null),
        (
            b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"p\xffing\"}".to_vec(),
            -32700,
            Value::Null,
        ),
        (br#"5"#.to_vec(), -32600, Value::Null),
        (
            br#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#.to_vec(),
            -32600,
            Value::Null,
        ),
        (
            br#"{"jsonrpc":"2.0","id":7,"method":"tools/list","params":5}"#.to_vec(),
            -32600,
            json!(7),
        ),
        (
            br#"{"jsonrpc":"2.0","method":"notifications/initialized","params":[]}"#.to_vec(),
            -32600,
            Value::Null,
        ),
    ] {
        let shown = String::from_utf8_lossy(&body).to_string();
        let (status, answer) = post(addr, &[], &body, true).await;
        assert_eq!(status, 400, "{shown}: {}", String::from_utf8_lossy(&answer));
        let answer: Value = serde_json::from_slice(&answer)
            .unwrap_or_else(|e| panic!("{shown}: not JSON ({e}): {answer:?}"));
        assert_eq!(answer["jsonrpc"], "2.0", "{shown}: {answer}");
        assert_eq!(answer["error"]["code"], code, "{shown}: {answer}");
        assert_eq!(answer.get("id"), Some(&id), "{shown}: {answer}");
    }
    // The refusals before the body's keep their order and their answers:
    // a foreign Origin is a 403, a body that is not JSON by its type a 415,
    // a client that does not accept both answers' types a 406, a body over
    // the limit a 413, whatever the body holds.
    let not_json = br#"{"jsonrpc":"#;
    assert_eq!(
        post_status(addr, &[("origin", "http://attacker.example")], not_json).await,
        403
    );
    assert_eq!(
        post_status(addr, &[("content-type", "text/plain")], not_json).await,
        415
    );
    assert_eq!(
        post_status(addr, &[("accept", "application/json")], not_json).await,
        406
    );
    assert_eq!(post_status(addr, &[], &vec![b'['; MAX_BODY + 1]).await, 413);
    // And a message still passes.
    assert_eq!(post_status(addr, &[], &initialize_body(200)).await, 200);
    child.kill().await.expect("stop the server");
}

#[tokio::test]
async fn a_host_is_exactly_a_served_name_and_a_port() {
    let db = TestDb::with_sample("mcp_http_hosts").await;
    let (mut child, url) = http_server(&db, "bob").await;
    let addr = address_of(&url);
    let port = addr.rsplit_once(':').unwrap().1;
    let init = initialize_body(200);
    let served = [
        "localhost".to_string(),
        format!("LocalHost:{port}"),
        "127.0.0.1:65535".to_string(),
        "[::1]".to_string(),
        format!("[::1]:{port}"),
        "mcp.example".to_string(),
        format!("MCP.example:{port}"),
    ];
    for host in &served {
        assert_eq!(
            post_status(addr, &[("host", host)], &init).await,
            200,
            "{host}"
        );
    }
    let refused = [
        "[::1]evil.example",
        "[::1]:x",
        "[::1]:",
        "[::1]]:80",
        "[localhost]",
        "::1",
        "localhost:notaport",
        "localhost:",
        "localhost:0",
        "localhost:65536",
        "localhost:+80",
        "localhost:80:80",
        "user@localhost",
        "localhost.",
        "mcp.example.attacker.example",
    ];
    for host in refused {
        let (status, body) = post(addr, &[("host", host)], &init, true).await;
        assert_eq!(status, 403, "{host}");
        assert_eq!(body, b"Forbidden: Host header is not allowed", "{host}");
    }
    // A browser's Origin is held to the same names.
    for origin in [
        format!("http://localhost:{port}"),
        "https://[::1]".to_string(),
        "HTTP://MCP.EXAMPLE:5173".to_string(),
    ] {
        assert_eq!(
            post_status(addr, &[("origin", &origin)], &init).await,
            200,
            "{origin}"
        );
    }
    for origin in [
        "http://[::1]evil.example",
        "http://localhost:x",
        "http://user@localhost",
        "http://localhost/path",
        "ftp://localhost",
        "null",
    ] {
        let (status, body) = post(addr, &[("origin", origin)], &init, true).await;
        assert_eq!(status, 403, "{origin}");
        assert_eq!(body, b"Forbidden: Origin header is not allowed", "{origin}");
    }
    child.kill().await.expect("stop the server");
}

#[tokio::test]
async fn a_call_the_protocol_cannot_carry_is_invalid_params() {
    let db = TestDb::with_sample("mcp_malformed").await;
    let mut args = vec!["mcp".to_string()];
    args.extend(server_args(&db, &["--principal", "alice"]));
    let call = |id: u64, params: Value| json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params});
    let answers = raw_session(
        &args,
        &[
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "raw", "version": "0"}}}),
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
            // Arguments that are not an object, and a call without a name.
            call(
                2,
                json!({"name": "search_products", "arguments": "running shoes"}),
            ),
            call(
                3,
                json!({"name": "search_products", "arguments": ["running shoes"]}),
            ),
            call(4, json!({"arguments": {"query": "running shoes"}})),
            // A tool the server does not have.
            call(5, json!({"name": "drop_catalog", "arguments": {}})),
            // A method the protocol does not define.
            json!({"jsonrpc": "2.0", "id": 6, "method": "catalog/drop", "params": {}}),
            // The session still serves a well-formed call afterwards.
            json!({"jsonrpc": "2.0", "id": 7, "method": "tools/list", "params": {}}),
            // An unknown tool's name is repeated cut short and without
            // control or bidirectional characters.
            call(
                8,
                json!({"name": format!("drop\u{202E}{}\u{0007}", "x".repeat(5_000)), "arguments": {}}),
            ),
            // So is an unknown method's.
            json!({"jsonrpc": "2.0", "id": 9, "params": {},
                   "method": format!("drop\u{202E}{}\u{0007}", "x".repeat(5_000))}),
            // A line over 64 KiB is dropped unanswered; one just under it
            // is read (and its query refused as too long).
            call(
                10,
                json!({"name": "search_products", "arguments": {"query": "q".repeat(MAX_BODY)}}),
            ),
            call(
                11,
                json!({"name": "search_products", "arguments": {"query": "q".repeat(MAX_BODY - 200)}}),
            ),
        ],
    )
    .await;
    assert!(
        answers[0]["result"]["serverInfo"].is_object(),
        "{}",
        answers[0]
    );
    for a in &answers[1..5] {
        assert_eq!(a["error"]["code"], -32602, "{a}");
        assert!(a.get("result").is_none(), "{a}");
        // The params are not echoed back.
        assert!(!a.to_string().contains("running shoes"), "{a}");
    }
    assert_eq!(answers[5]["error"]["code"], -32601, "{}", answers[5]);
    assert_eq!(answers[6]["result"]["tools"].as_array().unwrap().len(), 4);
    assert_eq!(answers[7]["error"]["code"], -32602, "{}", answers[7]);
    let message = answers[7]["error"]["message"].as_str().unwrap();
    assert!(message.starts_with("unknown tool `dropxxx"), "{message}");
    assert!(message.chars().count() < 100, "{message}");
    assert!(!message.contains(['\u{202E}', '\u{0007}']), "{message}");
    assert_eq!(answers[8]["error"]["code"], -32601, "{}", answers[8]);
    let message = answers[8]["error"]["message"].as_str().unwrap();
    assert!(message.starts_with("unknown method `dropxxx"), "{message}");
    assert!(message.chars().count() < 100, "{message}");
    assert!(!message.contains(['\u{202E}', '\u{0007}']), "{message}");
    assert_eq!(answers[9]["result"]["isError"], true, "{}", answers[9]);
    assert_eq!(
        answers[9]["result"]["structuredContent"]["error"]["field"], "query",
        "{}",
        answers[9]
    );
    let ids: Vec<&Value> = answers.iter().map(|a| &a["id"]).collect();
    assert_eq!(
        ids,
        [1, 2, 3, 4, 5, 6, 7, 8, 9, 11]
            .map(|i| json!(i))
            .iter()
            .collect::<Vec<_>>()
    );
    // Nothing ran: no search was recorded.
    let owner = db.owner().await;
    let n: i64 = owner
        .query_one("SELECT count(*) FROM receipts.search_events", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(n, 0);
}
