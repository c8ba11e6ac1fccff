//! The four Lambda functions and the AgentCore identity interceptor, as the
//! real compiled binaries, against an emulated Lambda Runtime API and a real
//! PostgreSQL.
//!
//! Each test starts an emulator of the Runtime API (`/runtime/invocation/next`
//! with the `Lambda-Runtime-*` headers, `/response`, `/error`, `/init/error`)
//! on a loopback port, spawns function binaries with `AWS_LAMBDA_RUNTIME_API`
//! pointing at it, and sends them the sample events in `events/` — both event
//! kinds — plus the client-context shapes that stop `lambda_runtime` 1.5, a
//! database outage through a TCP proxy of the test's own, and every way of
//! claiming someone else's principal that the functions must refuse.
//!
//! Over AgentCore the functions accept a principal only with the identity
//! interceptor's proof; the tests share the interceptor's key
//! ([`PROOF_KEY`]) to mint proofs where they play the interceptor, and run
//! the interceptor binary itself where they test it.
//!
//! The binaries are not built by `cargo test` (they belong to other
//! packages): build them first with
//! `cargo build -p search-products -p get-product-evidence -p compare-products -p explain-retrieval -p identity-interceptor`
//! — `make test` does. They are looked up next to this test executable
//! (`target/debug/<name>`).

use mosaic::principal::{self, proof, Principal};
use mosaic_integration_tests::aws_stub::{AwsStub, StubReply, StubRequest};
use mosaic_integration_tests::locks::{bound_env, bounded_profiles, locked_then_served, settled};
use mosaic_integration_tests::tls_door::TlsOnlyDoor;
use mosaic_integration_tests::{principal_of, TestDb};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::process::{Child, Command};
use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::JoinHandle;

/// The caller the sample events carry (JWT `sub`).
const SUB: &str = "3f6c9a2e-8d41-4b7a-9e55-1c2d3e4f5a6b";
/// The issuer of the sample events' tokens.
const ISS: &str = "https://cognito-idp.us-east-1.amazonaws.com/us-east-1_Mosaic0Ex";
/// The app client the sample events' tokens were issued to (`client_id`).
const CLIENT_ID: &str = "5example0client0id0mosaic";
/// The key the functions and the interceptor share in these tests.
const PROOF_KEY: &str = "mosaic-lambda-tests-principal-proof-key-0001";
/// The scope placeholder of the sample events.
const PLACEHOLDER: &str = "00000000-0000-4000-8000-000000000000";
/// The product placeholders of the sample events.
const P1: &str = "P0000001";
const P2: &str = "P0000002";
const FUNCTIONS: [&str; 4] = [
    "search-products",
    "get-product-evidence",
    "compare-products",
    "explain-retrieval",
];
/// How long one invocation may take before the test gives up.
const INVOKE_TIMEOUT: Duration = Duration::from_secs(60);

// ------------------------------------------------------- Runtime API emulator

#[derive(Debug)]
enum Outcome {
    /// `POST /runtime/invocation/{id}/response`.
    Response(Value),
    /// `POST /runtime/invocation/{id}/error`.
    Error(Value),
}

struct Pending {
    id: String,
    event: Vec<u8>,
    client_context: Option<String>,
    reply: oneshot::Sender<Outcome>,
}

#[derive(Default)]
struct Shared {
    waiting: Mutex<HashMap<String, oneshot::Sender<Outcome>>>,
    init_errors: Mutex<Vec<(Option<String>, Value)>>,
    invocation_errors: Mutex<Vec<Value>>,
}

/// An emulated Lambda Runtime API (2018-06-01) for one function process.
struct RuntimeApi {
    addr: SocketAddr,
    queue: mpsc::UnboundedSender<Pending>,
    shared: Arc<Shared>,
    counter: AtomicU64,
    task: JoinHandle<()>,
}

impl Drop for RuntimeApi {
    fn drop(&mut self) {
        self.task.abort();
    }
}

struct Request {
    method: String,
    path: String,
    headers: HashMap<String, String>,
    body: Vec<u8>,
}

impl RuntimeApi {
    async fn start(function: &str) -> RuntimeApi {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().unwrap();
        let (queue, rx) = mpsc::unbounded_channel::<Pending>();
        let rx = Arc::new(tokio::sync::Mutex::new(rx));
        let shared = Arc::new(Shared::default());
        let arn = format!("arn:aws:lambda:us-east-1:123456789012:function:{function}");
        let task = {
            let shared = shared.clone();
            tokio::spawn(async move {
                loop {
                    let Ok((stream, _)) = listener.accept().await else {
                        return;
                    };
                    tokio::spawn(serve_connection(
                        stream,
                        rx.clone(),
                        shared.clone(),
                        arn.clone(),
                    ));
                }
            })
        };
        RuntimeApi {
            addr,
            queue,
            shared,
            counter: AtomicU64::new(0),
            task,
        }
    }

    /// Queues an invocation; the receiver yields the function's answer.
    fn enqueue(
        &self,
        event: Vec<u8>,
        client_context: Option<String>,
    ) -> oneshot::Receiver<Outcome> {
        let n = self.counter.fetch_add(1, Ordering::SeqCst);
        let (reply, answer) = oneshot::channel();
        let pending = Pending {
            id: format!("8f5e2c1a-0000-4000-9000-{n:012}"),
            event,
            client_context,
            reply,
        };
        assert!(self.queue.send(pending).is_ok(), "emulator running");
        answer
    }

    fn init_errors(&self) -> Vec<(Option<String>, Value)> {
        self.shared.init_errors.lock().unwrap().clone()
    }

    fn invocation_errors(&self) -> Vec<Value> {
        self.shared.invocation_errors.lock().unwrap().clone()
    }
}

async fn serve_connection(
    stream: TcpStream,
    queue: Arc<tokio::sync::Mutex<mpsc::UnboundedReceiver<Pending>>>,
    shared: Arc<Shared>,
    arn: String,
) {
    let (read, mut write) = stream.into_split();
    let mut read = BufReader::new(read);
    // HTTP/1.1 keep-alive: one request after the other on the connection.
    while let Some(req) = read_request(&mut read).await {
        let response = match (req.method.as_str(), req.path.as_str()) {
            ("GET", "/2018-06-01/runtime/invocation/next") => {
                let Some(p) = queue.lock().await.recv().await else {
                    return;
                };
                shared.waiting.lock().unwrap().insert(p.id.clone(), p.reply);
                let deadline = now_ms() + 30_000;
                let mut head = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n\
                     lambda-runtime-aws-request-id: {}\r\n\
                     lambda-runtime-deadline-ms: {deadline}\r\n\
                     lambda-runtime-invoked-function-arn: {arn}\r\n\
                     lambda-runtime-trace-id: Root=1-692d5f28-0123456789abcdef01234567;Parent=53995c3f42cd8ad8;Sampled=0\r\n",
                    p.id
                );
                if let Some(cc) = &p.client_context {
                    head.push_str(&format!("lambda-runtime-client-context: {cc}\r\n"));
                }
                head.push_str(&format!("content-length: {}\r\n\r\n", p.event.len()));
                let mut bytes = head.into_bytes();
                bytes.extend_from_slice(&p.event);
                bytes
            }
            ("POST", "/2018-06-01/runtime/init/error") => {
                let body = serde_json::from_slice(&req.body).unwrap_or(Value::Null);
                let kind = req
                    .headers
                    .get("lambda-runtime-function-error-type")
                    .cloned();
                shared.init_errors.lock().unwrap().push((kind, body));
                accepted()
            }
            ("POST", path) if path.starts_with("/2018-06-01/runtime/invocation/") => {
                let rest = &path["/2018-06-01/runtime/invocation/".len()..];
                let (id, what) = rest.split_once('/').unwrap_or((rest, ""));
                let body = serde_json::from_slice::<Value>(&req.body).unwrap_or_else(|_| {
                    Value::String(String::from_utf8_lossy(&req.body).into_owned())
                });
                let outcome = match what {
                    "response" => Outcome::Response(body),
                    "error" => {
                        shared.invocation_errors.lock().unwrap().push(body.clone());
                        Outcome::Error(body)
                    }
                    _ => {
                        write.write_all(&not_found()).await.ok();
                        continue;
                    }
                };
                match shared.waiting.lock().unwrap().remove(id) {
                    Some(reply) => {
                        let _ = reply.send(outcome);
                        accepted()
                    }
                    None => not_found(),
                }
            }
            _ => not_found(),
        };
        if write.write_all(&response).await.is_err() {
            return;
        }
    }
}

fn accepted() -> Vec<u8> {
    b"HTTP/1.1 202 Accepted\r\ncontent-type: application/json\r\ncontent-length: 15\r\n\r\n{\"status\":\"OK\"}"
        .to_vec()
}

fn not_found() -> Vec<u8> {
    b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n".to_vec()
}

/// One HTTP/1.1 request (`content-length` bodies only); `None` at EOF.
async fn read_request<R: tokio::io::AsyncBufRead + Unpin>(r: &mut R) -> Option<Request> {
    let mut line = String::new();
    if r.read_line(&mut line).await.ok()? == 0 {
        return None;
    }
    let mut parts = line.split_whitespace();
    let method = parts.next()?.to_string();
    let path = parts.next()?.to_string();
    let mut headers = HashMap::new();
    loop {
        let mut h = String::new();
        if r.read_line(&mut h).await.ok()? == 0 {
            return None;
        }
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        let (k, v) = h.split_once(':')?;
        headers.insert(k.trim().to_ascii_lowercase(), v.trim().to_string());
    }
    assert!(
        !headers.contains_key("transfer-encoding"),
        "the emulator reads content-length bodies only: {headers:?}"
    );
    let len: usize = headers
        .get("content-length")
        .map_or(0, |v| v.parse().expect("content-length"));
    let mut body = vec![0; len];
    r.read_exact(&mut body).await.ok()?;
    Some(Request {
        method,
        path,
        headers,
        body,
    })
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

// ------------------------------------------------------------ the functions

/// The function binary under test: the `bootstrap` that `sam build` made
/// when `MOSAIC_LAMBDA_BOOTSTRAP_DIR` points at `.aws-sam/build` (`make
/// test` does), else the cargo-built binary next to this test executable.
fn binary(name: &str) -> PathBuf {
    if let Some(dir) = std::env::var_os("MOSAIC_LAMBDA_BOOTSTRAP_DIR") {
        let path = PathBuf::from(dir).join(logical_id(name)).join("bootstrap");
        assert!(
            path.is_file(),
            "{} is missing: run `make sam-build` (or unset MOSAIC_LAMBDA_BOOTSTRAP_DIR)",
            path.display()
        );
        return path;
    }
    let exe = std::env::current_exe().expect("test executable");
    // target/<profile>/deps/lambda-<hash> -> target/<profile>/<name>
    let dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("target directory");
    let path = dir.join(name);
    assert!(
        path.is_file(),
        "{} is missing: build the functions first with `cargo build -p search-products \
         -p get-product-evidence -p compare-products -p explain-retrieval \
         -p identity-interceptor` (`make test` does)",
        path.display()
    );
    path
}

/// The function's logical id in `template.yaml`.
fn logical_id(name: &str) -> &'static str {
    match name {
        "search-products" => "SearchProductsFunction",
        "get-product-evidence" => "GetProductEvidenceFunction",
        "compare-products" => "CompareProductsFunction",
        "explain-retrieval" => "ExplainRetrievalFunction",
        "identity-interceptor" => "IdentityInterceptorFunction",
        other => panic!("no function {other}"),
    }
}

/// A running function process with its own Runtime API.
struct Function {
    name: &'static str,
    api: RuntimeApi,
    child: Child,
    logs: Arc<Mutex<String>>,
    started: Instant,
}

impl Function {
    async fn start(name: &'static str, database_url: &str, env: &[(&str, &str)]) -> Function {
        Self::start_binary(name, &binary(name), database_url, env).await
    }

    async fn start_binary(
        name: &'static str,
        path: &Path,
        database_url: &str,
        env: &[(&str, &str)],
    ) -> Function {
        let api = RuntimeApi::start(name).await;
        let mut cmd = Command::new(path);
        cmd.env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("AWS_LAMBDA_RUNTIME_API", api.addr.to_string())
            .env("AWS_LAMBDA_FUNCTION_NAME", name)
            .env("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "512")
            .env("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST")
            .env(
                "AWS_LAMBDA_LOG_STREAM_NAME",
                "2026/12/01/[$LATEST]0123456789abcdef0123456789abcdef",
            )
            .env("AWS_LAMBDA_LOG_GROUP_NAME", format!("/aws/lambda/{name}"))
            .env("AWS_REGION", "us-east-1")
            .env("MOSAIC_DATABASE_URL", database_url)
            .env("MOSAIC_EMBEDDER", "hashing")
            .env("MOSAIC_PRINCIPAL_PROOF_KEY", PROOF_KEY)
            .env("RUST_LOG", "info");
        for (k, v) in env {
            cmd.env(k, v);
        }
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let started = Instant::now();
        let mut child = cmd.spawn().expect("spawn the function");
        let logs = Arc::new(Mutex::new(String::new()));
        for stream in [
            child
                .stdout
                .take()
                .map(|s| Box::new(s) as Box<dyn tokio::io::AsyncRead + Unpin + Send>),
            child
                .stderr
                .take()
                .map(|s| Box::new(s) as Box<dyn tokio::io::AsyncRead + Unpin + Send>),
        ]
        .into_iter()
        .flatten()
        {
            let logs = logs.clone();
            tokio::spawn(async move {
                let mut lines = BufReader::new(stream).lines();
                while let Ok(Some(line)) = lines.next_line().await {
                    let mut l = logs.lock().unwrap();
                    l.push_str(&line);
                    l.push('\n');
                }
            });
        }
        Function {
            name,
            api,
            child,
            logs,
            started,
        }
    }

    fn logs(&self) -> String {
        self.logs.lock().unwrap().clone()
    }

    /// Sends one event and waits for the answer; fails fast (with the
    /// function's logs) when the process exits instead.
    async fn invoke(&mut self, event: &[u8], client_context: Option<&str>) -> Outcome {
        let answer = self
            .api
            .enqueue(event.to_vec(), client_context.map(str::to_string));
        let name = self.name;
        tokio::select! {
            a = tokio::time::timeout(INVOKE_TIMEOUT, answer) => match a {
                Ok(Ok(outcome)) => outcome,
                _ => panic!("{name}: no answer in {INVOKE_TIMEOUT:?}; logs:\n{}", self.logs()),
            },
            status = self.child.wait() => {
                // Let the log readers drain.
                tokio::time::sleep(Duration::from_millis(100)).await;
                panic!("{name} exited ({status:?}) instead of answering; logs:\n{}", self.logs())
            }
        }
    }

    async fn response(&mut self, event: &[u8], client_context: Option<&str>) -> Value {
        match self.invoke(event, client_context).await {
            Outcome::Response(v) => v,
            Outcome::Error(e) => panic!(
                "{}: the invocation failed instead of answering: {e}; logs:\n{}",
                self.name,
                self.logs()
            ),
        }
    }

    /// An API Gateway event: `(statusCode, parsed body)`, after checking the
    /// proxy result's shape.
    async fn apigw(&mut self, event: &Value) -> (u16, Value) {
        let r = self.response(event.to_string().as_bytes(), None).await;
        let status = r["statusCode"].as_u64().unwrap_or_else(|| panic!("{r}")) as u16;
        assert_eq!(r["headers"]["content-type"], "application/json", "{r}");
        assert_eq!(r["isBase64Encoded"], false, "{r}");
        let body = serde_json::from_str(r["body"].as_str().expect("body string"))
            .unwrap_or_else(|e| panic!("body is not JSON ({e}): {r}"));
        (status, body)
    }

    /// An AgentCore tool call (or a direct invocation): the output object,
    /// or the error envelope of a function error, after checking that
    /// error's shape ([`tool_error`]).
    async fn agentcore(&mut self, args: &Value, client_context: Option<&str>) -> Value {
        self.tool_answer(args.to_string().as_bytes(), client_context)
            .await
    }

    async fn tool_answer(&mut self, event: &[u8], client_context: Option<&str>) -> Value {
        match self.invoke(event, client_context).await {
            Outcome::Response(v) => {
                assert!(
                    v.get("error").is_none(),
                    "{}: an error must be a function error, not a response: {v}",
                    self.name
                );
                v
            }
            Outcome::Error(e) => tool_error(&e),
        }
    }

    /// Waits for the process to exit after a failed start; the one init
    /// error it reported to the Runtime API (its kind and body).
    async fn init_failure(&mut self) -> (Option<String>, Value) {
        let status = tokio::time::timeout(Duration::from_secs(30), self.child.wait())
            .await
            .unwrap_or_else(|_| panic!("{} exits after a failed init", self.name))
            .unwrap();
        assert!(!status.success(), "{status:?}");
        let mut errors = self.api.init_errors();
        assert_eq!(errors.len(), 1, "{errors:?}\n{}", self.logs());
        errors.remove(0)
    }

    fn assert_alive(&mut self) {
        assert!(
            self.child.try_wait().expect("process status").is_none(),
            "{} stopped; logs:\n{}",
            self.name,
            self.logs()
        );
        assert!(
            self.api.init_errors().is_empty(),
            "{}: init errors were reported to the Runtime API: {:?}",
            self.name,
            self.api.init_errors()
        );
        // Function errors are how tool calls report errors; each is one.
        for e in self.api.invocation_errors() {
            tool_error(&e);
        }
    }
}

// ------------------------------------------------------------- sample events

fn events_dir(function: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../events")
        .join(function)
}

/// Every sample event of a function: `(file name, raw text)`, sorted.
fn sample_events(function: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = std::fs::read_dir(events_dir(function))
        .unwrap_or_else(|e| panic!("events/{function}: {e}"))
        .map(|entry| {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            let text = std::fs::read_to_string(&path).unwrap();
            serde_json::from_str::<Value>(&text)
                .unwrap_or_else(|e| panic!("events/{function}/{name} is not JSON: {e}"));
            (name, text)
        })
        .collect();
    out.sort();
    out
}

/// One sample event's text.
fn event_text(function: &str, file: &str) -> String {
    std::fs::read_to_string(events_dir(function).join(file))
        .unwrap_or_else(|e| panic!("events/{function}/{file}: {e}"))
}

/// The principal the sample events carry.
fn sample_principal() -> Principal {
    Principal::jwt(ISS, SUB).unwrap()
}

/// Unix seconds.
fn now_s() -> u64 {
    now_ms() / 1000
}

/// A proof as the identity interceptor makes it.
fn proof_for(principal: &Principal, tool_name: &str, expiry: u64) -> String {
    proof::Key::new(PROOF_KEY)
        .unwrap()
        .sign(principal, tool_name, expiry)
}

/// The error envelope of a function error, after checking its shape: the
/// stable code as `errorType`, the envelope as JSON text in `errorMessage`.
fn tool_error(e: &Value) -> Value {
    let kind = e["errorType"].as_str().unwrap_or_else(|| panic!("{e}"));
    let envelope: Value = serde_json::from_str(e["errorMessage"].as_str().unwrap_or_default())
        .unwrap_or_else(|err| panic!("errorMessage is not the envelope ({err}): {e}"));
    assert_eq!(envelope["error"]["code"], kind, "{e}");
    envelope
}

/// The gateway's client context of a function (the sample file), with a
/// fresh proof from the interceptor for its principal and tool, compacted to
/// one header line.
fn client_context(function: &str) -> String {
    let text = std::fs::read_to_string(events_dir(function).join("agentcore-client-context.json"))
        .expect("agentcore-client-context.json");
    let mut cc: Value = serde_json::from_str(&text).unwrap();
    let tool = cc["custom"]["bedrockAgentCoreToolName"]
        .as_str()
        .unwrap()
        .to_string();
    let headers = &mut cc["custom"]["bedrockAgentCorePropagatedHeaders"];
    assert_eq!(headers[principal::HEADER], sample_principal().as_str());
    headers[principal::PROOF_HEADER] =
        Value::from(proof_for(&sample_principal(), &tool, now_s() + 60));
    cc.to_string()
}

/// A gateway client context for `tool` with the given propagated headers
/// (principal, proof), as they are: the proof is whatever the caller says.
fn gateway_context(tool_name: &str, principal: Option<&str>, proof: Option<&str>) -> String {
    let mut custom = json!({
        "bedrockAgentCoreGatewayId": "mosaic-gateway-test",
        "bedrockAgentCoreTargetId": "TARGET0001",
        "bedrockAgentCoreMessageVersion": "1.0",
        "bedrockAgentCoreToolName": tool_name,
    });
    let mut headers = serde_json::Map::new();
    if let Some(p) = principal {
        headers.insert(principal::HEADER.into(), p.into());
    }
    if let Some(p) = proof {
        headers.insert(principal::PROOF_HEADER.into(), p.into());
    }
    if !headers.is_empty() {
        custom["bedrockAgentCorePropagatedHeaders"] = Value::Object(headers);
    }
    json!({ "custom": custom, "client": null, "env": null }).to_string()
}

/// The gateway's tool name of an operation.
fn tool_name(tool: &str) -> String {
    format!("mosaic-products___{tool}")
}

/// A client context that names `tool` and, when given, a principal with the
/// interceptor's valid proof.
fn context_for(tool: &str, principal: Option<&Principal>) -> String {
    let full = tool_name(tool);
    match principal {
        None => gateway_context(&full, None, None),
        Some(p) => gateway_context(
            &full,
            Some(p.as_str()),
            Some(&proof_for(p, &full, now_s() + 60)),
        ),
    }
}

/// Replaces the placeholders of a sample event (scope id, then the two
/// products, through markers so a real id equal to a placeholder is safe).
fn substitute(text: &str, event_id: &str, products: &[String]) -> Value {
    let t = text
        .replace(PLACEHOLDER, "\u{1}SCOPE\u{1}")
        .replace(P1, "\u{1}P1\u{1}")
        .replace(P2, "\u{1}P2\u{1}")
        .replace("\u{1}SCOPE\u{1}", event_id)
        .replace("\u{1}P1\u{1}", &products[0])
        .replace("\u{1}P2\u{1}", &products[1]);
    serde_json::from_str(&t).unwrap()
}

fn parse(text: &str) -> Value {
    serde_json::from_str(text).unwrap()
}

/// The stable error code and field of an error envelope.
fn error_of(v: &Value) -> (&str, Option<&str>) {
    let code = v["error"]["code"]
        .as_str()
        .unwrap_or_else(|| panic!("not an error envelope: {v}"));
    assert!(v["error"]["message"].is_string(), "{v}");
    (code, v["error"]["field"].as_str())
}

/// The HTTP status the contract gives an error code.
fn status_of(code: &str) -> u16 {
    mosaic::contract::errors()
        .iter()
        .find(|e| e.code == code)
        .map(|e| e.http_status)
        .unwrap_or_else(|| panic!("unknown error code {code}"))
}

/// The generic refusal body, the same for every refusal.
fn generic_refusal() -> Value {
    mosaic::Error::NotFound.body()
}

/// Checks a search output: results, at most `limit`, the first
/// `authorized_limit` granted and no other.
fn check_search(v: &Value, limit: usize, authorized: usize) -> (String, Vec<String>, Vec<String>) {
    let results = v["results"].as_array().unwrap_or_else(|| panic!("{v}"));
    assert!(!results.is_empty() && results.len() <= limit, "{v}");
    assert_eq!(v["limit"], limit as u64, "{v}");
    assert_eq!(v["authorized_limit"], authorized as u64, "{v}");
    let mut granted = Vec::new();
    let mut served_only = Vec::new();
    for (i, r) in results.iter().enumerate() {
        assert_eq!(r["rank"], i as u64 + 1, "{v}");
        assert_eq!(r["granted"], i < authorized, "result {i}: {v}");
        let id = r["product_id"].as_str().unwrap().to_string();
        if i < authorized {
            granted.push(id);
        } else {
            served_only.push(id);
        }
    }
    let event = v["search_event_id"].as_str().expect("search_event_id");
    uuid::Uuid::parse_str(event).expect("a uuid");
    (event.to_string(), granted, served_only)
}

/// The receipt of a search answer: principal, rerank status, warnings.
async fn receipt_of(db: &TestDb, answer: &Value) -> (String, String, String) {
    let id = uuid::Uuid::parse_str(answer["search_event_id"].as_str().expect("event id")).unwrap();
    let row = db
        .owner()
        .await
        .query_one(
            "SELECT principal, rerank_status, warnings::text FROM receipts.search_events
             WHERE search_event_id = $1",
            &[&id],
        )
        .await
        .expect("receipt");
    (row.get(0), row.get(1), row.get(2))
}

// ------------------------------------------------------------------- tests

#[tokio::test]
async fn search_products_serves_every_sample_event() {
    let db = TestDb::with_sample("lambda_search").await;
    let mut f = Function::start("search-products", &db.runtime_url(), &[]).await;
    let cc = client_context("search-products");

    for (name, text) in sample_events("search-products") {
        let event = parse(&text);
        match name.as_str() {
            "apigw.json" => {
                let (status, v) = f.apigw(&event).await;
                assert_eq!(status, 200, "{v}");
                let (id, granted, _) = check_search(&v, 5, 3);
                assert_eq!(granted.len(), 3, "{v}");
                assert_eq!(principal_of(&db, &id).await, sample_principal().as_str());
            }
            "apigw-bad-input.json" => {
                let (status, v) = f.apigw(&event).await;
                assert_eq!(status, 400, "{v}");
                assert_eq!(error_of(&v), ("invalid_argument", Some("limit")));
            }
            "apigw-tools.json" => {
                let (status, v) = f.apigw(&event).await;
                assert_eq!(status, 200, "{v}");
                assert_eq!(v, mosaic::contract::tools("agentcore").unwrap());
            }
            "agentcore.json" => {
                let v = f.agentcore(&event, Some(&cc)).await;
                let (id, _, _) = check_search(&v, 5, 3);
                assert_eq!(principal_of(&db, &id).await, sample_principal().as_str());
            }
            "agentcore-bad-input.json" => {
                let v = f.agentcore(&event, Some(&cc)).await;
                assert_eq!(error_of(&v), ("unknown_field", Some("sort")));
            }
            "agentcore-client-context.json" => {}
            other => panic!("events/search-products/{other}: no expectation for this file"),
        }
    }

    // Principals: an IAM caller; no caller at all (anonymous is off here).
    let mut iam = parse(&event_text("search-products", "apigw.json"));
    assert_eq!(iam["rawPath"], "/api/search");
    let arn = "arn:aws:sts::123456789012:assumed-role/mosaic-client/session-1";
    iam["requestContext"]["authorizer"] = json!({"iam": {
        "accessKey": "ASIAEXAMPLE", "accountId": "123456789012", "callerId": "AROAEXAMPLE:session-1",
        "cognitoIdentity": null, "principalOrgId": null, "userArn": arn, "userId": "AROAEXAMPLE:session-1"}});
    let (status, v) = f.apigw(&iam).await;
    assert_eq!(status, 200, "{v}");
    assert_eq!(
        principal_of(&db, v["search_event_id"].as_str().unwrap()).await,
        format!("iam:{arn}")
    );
    let mut anonymous = iam.clone();
    anonymous["requestContext"]
        .as_object_mut()
        .unwrap()
        .remove("authorizer");
    let (status, v) = f.apigw(&anonymous).await;
    assert_eq!(status, 401, "{v}");
    assert_eq!(error_of(&v), ("unauthenticated", None));
    let args = parse(&event_text("search-products", "agentcore.json"));
    for cc in [None, Some(context_for("search_products", None))] {
        let v = f.agentcore(&args, cc.as_deref()).await;
        assert_eq!(error_of(&v), ("unauthenticated", None), "{cc:?}");
    }
    // A tool of another function; a bare tool name is fine.
    let me = sample_principal();
    let v = f
        .agentcore(&args, Some(&context_for("get_product_evidence", Some(&me))))
        .await;
    assert_eq!(error_of(&v).0, "invalid_argument", "{v}");
    let bare = gateway_context(
        "search_products",
        Some(me.as_str()),
        Some(&proof_for(&me, "search_products", now_s() + 60)),
    );
    check_search(&f.agentcore(&args, Some(&bare)).await, 5, 3);
    // Not an object, not JSON.
    let v = f.agentcore(&json!(["kettle"]), Some(&cc)).await;
    assert_eq!(error_of(&v), ("invalid_json", None));
    let v = f.tool_answer(b"{not json", Some(&cc)).await;
    assert_eq!(error_of(&v), ("invalid_json", None));
    // A key named twice, at the top or inside the filters: refused as over
    // HTTP, and no search ran (the receipts count stays).
    let before = receipts_of(&db, me.as_str()).await;
    for twice in [
        r#"{"query": "kettle", "query": "zzzz", "limit": 1}"#,
        r#"{"query": "kettle", "filters": {"in_stock_only": true, "in_stock_only": false}}"#,
    ] {
        let v = f.tool_answer(twice.as_bytes(), Some(&cc)).await;
        assert_eq!(error_of(&v), ("invalid_json", None), "{twice}");
    }
    assert_eq!(receipts_of(&db, me.as_str()).await, before);
    // Errors over AgentCore are function errors (the gateway's `isError`),
    // typed by the stable code, with the envelope as the message.
    match f.invoke(b"{not json", Some(&cc)).await {
        Outcome::Error(e) => {
            assert_eq!(e["errorType"], "invalid_json", "{e}");
            assert!(
                e["errorMessage"]
                    .as_str()
                    .unwrap()
                    .starts_with("{\"error\""),
                "{e}"
            );
        }
        other => panic!("{other:?}"),
    }
    f.assert_alive();
}

#[tokio::test]
async fn scoped_functions_serve_every_sample_event_in_scope_and_refuse_outside() {
    let db = TestDb::with_sample("lambda_scoped").await;
    let url = db.runtime_url();
    let mut search = Function::start("search-products", &url, &[]).await;
    let search_event = parse(&event_text("search-products", "apigw.json"));
    let (status, v) = search.apigw(&search_event).await;
    assert_eq!(status, 200, "{v}");
    let (event_id, granted, served_only) = check_search(&v, 5, 3);

    for function in [
        "get-product-evidence",
        "compare-products",
        "explain-retrieval",
    ] {
        let mut f = Function::start(function, &url, &[]).await;
        let cc = client_context(function);
        let tool = function.replace('-', "_");
        let mut in_scope: HashMap<&str, Value> = HashMap::new();
        for (name, text) in sample_events(function) {
            let event = substitute(&text, &event_id, &granted);
            let kind = if name.starts_with("apigw") {
                "apigw"
            } else {
                "agentcore"
            };
            let (status, v) = match (kind, name.as_str()) {
                (_, "agentcore-client-context.json") => continue,
                ("apigw", _) => f.apigw(&event).await,
                _ => {
                    let v = f.agentcore(&event, Some(&cc)).await;
                    let status = match v["error"]["code"].as_str() {
                        None => 200,
                        Some(code) => status_of(code),
                    };
                    (status, v)
                }
            };
            let base = name.trim_end_matches(".json");
            let expect = base.strip_prefix(kind).unwrap_or(base);
            match expect {
                "" => {
                    assert_eq!(status, 200, "{function}/{name}: {v}");
                    assert_eq!(v["retrieval_scope_id"], event_id.as_str(), "{v}");
                    match function {
                        "get-product-evidence" => {
                            assert_eq!(v["product_id"], granted[0].as_str(), "{v}");
                            assert!(v["evidence"].is_array(), "{v}");
                        }
                        "compare-products" => {
                            let ids: Vec<&str> = v["products"]
                                .as_array()
                                .unwrap()
                                .iter()
                                .map(|p| p["product_id"].as_str().unwrap())
                                .collect();
                            assert_eq!(ids.len(), 2, "{v}");
                            assert!(ids.contains(&granted[0].as_str()), "{v}");
                            assert!(ids.contains(&granted[1].as_str()), "{v}");
                        }
                        _ => {
                            let pool = v["pool"].as_array().expect("pool");
                            let granted_in_pool =
                                pool.iter().filter(|c| c["granted"] == true).count();
                            assert_eq!(granted_in_pool, granted.len(), "{v}");
                        }
                    }
                    in_scope.insert(kind, v);
                }
                "-bad-input" => {
                    assert_eq!(status, 400, "{function}/{name}: {v}");
                    let expected = match (function, kind) {
                        ("get-product-evidence", "apigw") => ("invalid_argument", Some("limit")),
                        ("get-product-evidence", _) => ("invalid_argument", Some("evidence_query")),
                        ("compare-products", _) => ("invalid_argument", Some("product_ids")),
                        ("explain-retrieval", "apigw") => ("invalid_json", None),
                        _ => ("unknown_field", Some("include_pool")),
                    };
                    assert_eq!(error_of(&v), expected, "{function}/{name}");
                }
                "-refusal" => {
                    assert_eq!(status, 404, "{function}/{name}: {v}");
                    assert_eq!(v, generic_refusal(), "{function}/{name}");
                }
                _ => panic!("events/{function}/{name}: no expectation for this file"),
            }
            // As it stands (placeholders), every scoped event is refused.
            if !name.contains("bad-input") {
                let raw = parse(&text);
                let v = if kind == "apigw" {
                    let (status, v) = f.apigw(&raw).await;
                    assert_eq!(status, 404, "{function}/{name} unsubstituted: {v}");
                    v
                } else {
                    f.agentcore(&raw, Some(&cc)).await
                };
                assert_eq!(v, generic_refusal(), "{function}/{name} unsubstituted");
            }
        }
        // Both transports give the same answer in scope.
        assert_eq!(in_scope.len(), 2, "{function}: {:?}", in_scope.keys());
        assert_eq!(in_scope["apigw"], in_scope["agentcore"], "{function}");

        // Outside the scope: another caller; a product served but not granted.
        let agentcore_args =
            substitute(&event_text(function, "agentcore.json"), &event_id, &granted);
        let someone_else = Principal::jwt(ISS, "someone-else").unwrap();
        let other = context_for(&tool, Some(&someone_else));
        assert_eq!(
            f.agentcore(&agentcore_args, Some(&other)).await,
            generic_refusal()
        );
        if let (Some(outside), false) = (served_only.first(), function == "explain-retrieval") {
            let args = substitute(
                &event_text(function, "agentcore.json"),
                &event_id,
                &[outside.clone(), granted[1].clone()],
            );
            assert_eq!(f.agentcore(&args, Some(&cc)).await, generic_refusal());
        }
        f.assert_alive();
    }
    search.assert_alive();
}

#[tokio::test]
async fn client_context_shapes_never_stop_the_function() {
    let db = TestDb::with_sample("lambda_contexts").await;
    let mut f = Function::start(
        "search-products",
        &db.runtime_url(),
        &[("MOSAIC_ALLOW_ANONYMOUS", "true")],
    )
    .await;
    let args = json!({"query": "espresso machine", "limit": 3});
    let good = client_context("search-products");
    // (client context, expected: Ok(principal) or Err(code)). Without any
    // of the gateway's keys an invocation is direct: anonymous here,
    // whatever else the context says. With them, it needs the tool name,
    // and a principal needs the proof.
    let shapes: Vec<(&str, Result<&str, &str>)> = vec![
        (r#"{"custom":null}"#, Ok("anonymous")),
        (r#"{"client":null}"#, Ok("anonymous")),
        (
            r#"{"custom":null,"client":null,"env":null}"#,
            Ok("anonymous"),
        ),
        (
            r#"{"client":{"installation_id":7},"custom":{},"env":{"locale":1}}"#,
            Ok("anonymous"),
        ),
        (
            r#"{"custom":{"bedrockAgentCoreToolName":"mosaic___search_products","attempt":2,"sampled":true,"bedrockAgentCorePropagatedHeaders":{"x-mosaic-principal":"local:ctx-user","x-tenant":["a","b"]}},"client":null}"#,
            Err("unauthenticated"),
        ),
        (
            r#"{"custom":{"bedrockAgentCoreToolName":"mosaic___search_products","bedrockAgentCorePropagatedHeaders":"{\"X-Mosaic-Principal\":\"local:json-string-user\"}"}}"#,
            Err("unauthenticated"),
        ),
        // A tool call that names no principal, on a function that holds the
        // interceptor's key: behind the interceptor every tool call names
        // one, so this one did not come through it.
        (
            r#"{"custom":{"bedrockAgentCoreToolName":"mosaic___search_products"}}"#,
            Err("unauthenticated"),
        ),
        (r#"{"custom":"a string"}"#, Ok("anonymous")),
        (
            r#"{"custom":{"bedrockAgentCorePropagatedHeaders":{"x-mosaic-principal":"local:jurgen"}}}"#,
            Err("invalid_argument"),
        ),
        (
            r#"{"custom":{"bedrockAgentCoreToolName":null}}"#,
            Err("invalid_argument"),
        ),
        (
            r#"{"custom":{"bedrockAgentCoreToolName":5}}"#,
            Err("invalid_argument"),
        ),
        (
            r#"{"custom":{"bedrockAgentCoreToolName":"mosaic___explain_retrieval"}}"#,
            Err("invalid_argument"),
        ),
        // A propagated identity that is there but unusable is refused, not
        // taken for anonymous.
        (
            r#"{"custom":{"bedrockAgentCoreToolName":"mosaic___search_products","bedrockAgentCorePropagatedHeaders":{"x-mosaic-principal":""}}}"#,
            Err("unauthenticated"),
        ),
        (
            r#"{"custom":{"bedrockAgentCoreToolName":"mosaic___search_products","bedrockAgentCorePropagatedHeaders":{"x-mosaic-principal":"anonymous"}}}"#,
            Err("unauthenticated"),
        ),
        ("[]", Ok("anonymous")),
        ("null", Ok("anonymous")),
        ("not json at all", Ok("anonymous")),
    ];
    for (cc, expected) in shapes {
        let v = f.agentcore(&args, Some(cc)).await;
        match expected {
            Ok(principal) => {
                let (id, _, _) = check_search(&v, 3, 3);
                assert_eq!(principal_of(&db, &id).await, principal, "{cc}");
            }
            Err(code) => assert_eq!(error_of(&v).0, code, "{cc}: {v}"),
        }
        // The next invocation is served as usual.
        let v = f.agentcore(&args, Some(&good)).await;
        let (id, _, _) = check_search(&v, 3, 3);
        assert_eq!(
            principal_of(&db, &id).await,
            sample_principal().as_str(),
            "after {cc}"
        );
        f.assert_alive();
    }

    // Another tool's name is repeated in the refusal without control or
    // bidirectional characters, and cut short.
    let odd = format!("mosaic___\u{202E}x\u{7}{}", "y".repeat(1000));
    let cc = json!({"custom": {"bedrockAgentCoreToolName": odd}}).to_string();
    let v = f.agentcore(&args, Some(&cc)).await;
    assert_eq!(error_of(&v).0, "invalid_argument", "{v}");
    let message = v["error"]["message"].as_str().unwrap();
    assert!(message.len() < 300, "{message}");
    assert!(!message.contains(['\u{202E}', '\u{7}']), "{message}");

    // Tool arguments are held to the HTTP routes' body limit (64 KiB): a
    // larger event is refused before it is read as arguments.
    let big = json!({"query": "espresso machine", "limit": 3,
        "note": "x".repeat(mosaic::http::MAX_BODY)});
    let v = f.agentcore(&big, Some(&good)).await;
    assert_eq!(error_of(&v).0, "payload_too_large", "{v}");
    let v = f.agentcore(&args, Some(&good)).await;
    check_search(&v, 3, 3);

    // A gateway without the interceptor (no key), anonymous calls allowed:
    // a tool call that names no one is anonymous there.
    let mut keyless = Function::start(
        "search-products",
        &db.runtime_url(),
        &[
            ("MOSAIC_ALLOW_ANONYMOUS", "true"),
            ("MOSAIC_PRINCIPAL_PROOF_KEY", ""),
        ],
    )
    .await;
    let bare = r#"{"custom":{"bedrockAgentCoreToolName":"mosaic___search_products"}}"#;
    let v = keyless.agentcore(&args, Some(bare)).await;
    let (id, _, _) = check_search(&v, 3, 3);
    assert_eq!(principal_of(&db, &id).await, "anonymous");
}

/// A TCP proxy in front of PostgreSQL that the test can cut and close.
struct Proxy {
    addr: SocketAddr,
    open: Arc<AtomicBool>,
    cut: watch::Sender<u64>,
    task: JoinHandle<()>,
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Proxy {
    async fn start(upstream: String) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let open = Arc::new(AtomicBool::new(true));
        let (cut, cuts) = watch::channel(0u64);
        let task = {
            let open = open.clone();
            tokio::spawn(async move {
                while let Ok((mut client, _)) = listener.accept().await {
                    if !open.load(Ordering::SeqCst) {
                        // Refused: closed before a byte is exchanged.
                        drop(client);
                        continue;
                    }
                    let upstream = upstream.clone();
                    let mut cuts = cuts.clone();
                    // Only cuts from now on end this connection.
                    cuts.mark_unchanged();
                    tokio::spawn(async move {
                        let Ok(mut server) = TcpStream::connect(&upstream).await else {
                            return;
                        };
                        tokio::select! {
                            _ = tokio::io::copy_bidirectional(&mut client, &mut server) => {}
                            // Both sockets close when the task ends.
                            _ = cuts.changed() => {}
                        }
                    });
                }
            })
        };
        Proxy {
            addr,
            open,
            cut,
            task,
        }
    }

    /// Drops every proxied connection.
    fn cut_all(&self) {
        self.cut.send_modify(|n| *n += 1);
    }

    fn set_open(&self, open: bool) {
        self.open.store(open, Ordering::SeqCst);
    }
}

/// An anonymous search that must succeed (the logs are shown if not).
async fn served(f: &mut Function, args: &Value) {
    let v = f.agentcore(args, None).await;
    assert!(v["results"].is_array(), "{v}\nlogs:\n{}", f.logs());
}

#[tokio::test]
async fn a_database_outage_is_a_503_and_the_function_recovers() {
    let db = TestDb::with_sample("lambda_outage").await;
    let url = db.runtime_url();
    let cfg: tokio_postgres::Config = url.parse().unwrap();
    let host = match &cfg.get_hosts()[0] {
        tokio_postgres::config::Host::Tcp(h) => h.clone(),
        other => panic!("the test database must be on TCP: {other:?}"),
    };
    let port = cfg.get_ports()[0];
    let proxy = Proxy::start(format!("{host}:{port}")).await;
    let proxied = url.replacen(&format!("{host}:{port}"), &proxy.addr.to_string(), 1);
    assert_ne!(proxied, url, "{url}");

    let mut f = Function::start(
        "search-products",
        &proxied,
        &[("MOSAIC_ALLOW_ANONYMOUS", "true")],
    )
    .await;
    let args = json!({"query": "robot vacuum", "limit": 3});
    let apigw = parse(&event_text("search-products", "apigw.json"));
    served(&mut f, &args).await;

    // Connections cut between two invocations, the database still there:
    // the connection is re-established and nothing fails.
    proxy.cut_all();
    served(&mut f, &args).await;
    proxy.cut_all();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let (status, v) = f.apigw(&apigw).await;
    assert_eq!(status, 200, "{v}");

    // A connection lost in the middle of an operation: the operation runs
    // once more on a new connection (when the cut lands after the last
    // statement there is nothing to retry; the answer is the same).
    for delay_ms in [30, 120, 250] {
        let (v, ()) = tokio::join!(f.agentcore(&args, None), async {
            tokio::time::sleep(Duration::from_millis(delay_ms)).await;
            proxy.cut_all();
        });
        assert!(
            v["results"].is_array(),
            "cut after {delay_ms} ms: {v}\n{}",
            f.logs()
        );
    }
    if std::env::var_os("MOSAIC_TEST_SHOW_LOGS").is_some() {
        println!("{}", f.logs());
    }

    // Connections cut and new ones refused: unavailable, on both event kinds.
    proxy.set_open(false);
    proxy.cut_all();
    let v = f.agentcore(&args, None).await;
    assert_eq!(error_of(&v), ("unavailable", None), "{v}");
    let (status, v) = f.apigw(&apigw).await;
    assert_eq!(status, 503, "{v}");
    assert_eq!(error_of(&v), ("unavailable", None));

    // Back: the same process serves again.
    proxy.set_open(true);
    served(&mut f, &args).await;
    let (status, v) = f.apigw(&apigw).await;
    assert_eq!(status, 200, "{v}");
    f.assert_alive();
    let logs = f.logs();
    assert!(logs.contains("\"status\":503"), "{logs}");
}

#[tokio::test]
async fn a_configuration_error_is_reported_as_an_init_error() {
    let db = TestDb::empty("lambda_init").await;
    for (var, value) in [
        ("MOSAIC_EMBEDDER", "word2vec"),
        ("MOSAIC_ALLOW_ANONYMOUS", "perhaps"),
        ("MOSAIC_PRINCIPAL_PROOF_KEY", "too short"),
    ] {
        let mut f = Function::start("explain-retrieval", &db.runtime_url(), &[(var, value)]).await;
        let (kind, body) = f.init_failure().await;
        assert_eq!(kind.as_deref(), Some("Runtime.ConfigurationError"));
        assert_eq!(body["errorType"], "Runtime.ConfigurationError", "{body}");
        assert!(
            body["errorMessage"].as_str().unwrap().contains(var),
            "{body}"
        );
    }
}

/// Process start to first response, and a warm invocation, per function
/// (release binaries when `target/release/<name>` exists, else debug).
/// Prints; asserts nothing. Run with
/// `cargo test -p mosaic-integration-tests --test lambda -- --ignored --nocapture`.
#[tokio::test]
#[ignore = "a measurement, not a check"]
async fn measure_start_to_first_response() {
    let db = TestDb::with_sample("lambda_timing").await;
    let url = db.runtime_url();
    let sam = std::env::var_os("MOSAIC_LAMBDA_BOOTSTRAP_DIR").is_some();
    let release_dir = binary("search-products")
        .parent()
        .and_then(Path::parent)
        .unwrap()
        .join("release");
    for name in FUNCTIONS {
        let release = release_dir.join(name);
        let (path, profile) = if sam {
            (binary(name), "sam build bootstrap")
        } else if release.is_file() {
            (release, "release")
        } else {
            (binary(name), "debug")
        };
        let size = std::fs::metadata(&path).unwrap().len();
        // Each operation with its own arguments; the scoped ones are
        // refusals (placeholder scope), which still run their SQL.
        let args = match name {
            "search-products" => json!({"query": "wireless headphones", "limit": 5}),
            "get-product-evidence" => json!({"retrieval_scope_id": PLACEHOLDER,
                "product_id": P1, "evidence_query": "battery"}),
            "compare-products" => {
                json!({"retrieval_scope_id": PLACEHOLDER, "product_ids": [P1, P2]})
            }
            _ => json!({"retrieval_scope_id": PLACEHOLDER}),
        };
        let (mut first, mut warm) = (Vec::new(), Vec::new());
        for _ in 0..7 {
            let mut f =
                Function::start_binary(name, &path, &url, &[("MOSAIC_ALLOW_ANONYMOUS", "true")])
                    .await;
            let v = f.agentcore(&args, None).await;
            first.push(f.started.elapsed());
            assert!(v.is_object(), "{v}");
            let t = Instant::now();
            f.agentcore(&args, None).await;
            warm.push(t.elapsed());
        }
        first.sort();
        warm.sort();
        println!(
            "{name} ({profile}, {:.1} MiB): start to first response min {:?} median {:?} max {:?}; \
             warm invocation median {:?}",
            size as f64 / 1048576.0,
            first[0],
            first[first.len() / 2],
            first[first.len() - 1],
            warm[warm.len() / 2],
        );
    }
}

// ------------------------------------------------- the AWS configuration

/// The function configured as in AWS: no `MOSAIC_DATABASE_URL`; the
/// database login from a Secrets Manager secret, over TLS verified against
/// the local cluster's test CA; Bedrock through the real SDK; every AWS
/// endpoint the stub.
async fn start_as_in_aws(
    name: &'static str,
    db: &TestDb,
    stub: &AwsStub,
    env: &[(&str, &str)],
) -> Function {
    let ca = std::env::var("MOSAIC_TEST_TLS_CA").unwrap_or_else(|_| {
        concat!(env!("CARGO_MANIFEST_DIR"), "/../.mosaic/pg/tls/ca.crt").to_string()
    });
    let mut all: Vec<(&str, &str)> = vec![
        ("MOSAIC_DATABASE_URL", ""),
        (
            "MOSAIC_DB_SECRET_ARN",
            "arn:aws:secretsmanager:us-east-1:123456789012:secret:mosaic/db-AbCdEf",
        ),
        ("MOSAIC_DB_SSLMODE", "require"),
        ("MOSAIC_DB_CA_FILE", &ca),
        ("AWS_ENDPOINT_URL", &stub.url),
        ("AWS_ACCESS_KEY_ID", "AKIDSTUBEXAMPLE0000"),
        ("AWS_SECRET_ACCESS_KEY", "stub/secret/key"),
        ("AWS_SESSION_TOKEN", "stub-session-token"),
    ];
    all.extend_from_slice(env);
    // The URL is not passed (empty = unset); the secret names the database.
    let _ = db;
    Function::start(name, "", &all).await
}

/// The secret the stub serves: the test database's runtime login, at
/// `localhost` (the name on the test certificate).
fn runtime_secret(db: &TestDb) -> Value {
    let cfg: tokio_postgres::Config = db.runtime_url().parse().unwrap();
    json!({
        "engine": "postgres",
        "username": cfg.get_user().unwrap(),
        "password": String::from_utf8(cfg.get_password().unwrap().to_vec()).unwrap(),
        "host": "localhost",
        "port": cfg.get_ports()[0],
        "dbname": cfg.get_dbname().unwrap(),
    })
}

/// A stub that answers every Secrets Manager call with `secret`.
async fn secret_stub(secret: Value) -> AwsStub {
    AwsStub::start(move |req| {
        StubReply::json11(&json!({"ARN": req.body["SecretId"], "SecretString": secret.to_string()}))
    })
    .await
}

/// Cohere Rerank 3.5 answers: documents scored in reverse order of the pool,
/// sorted by score as the service does.
fn cohere_rerank(req: &StubRequest) -> StubReply {
    assert_eq!(req.body["api_version"], 2, "{}", req.body);
    let n = req.body["documents"].as_array().map(Vec::len).unwrap_or(0);
    let results: Vec<Value> = (0..n)
        .rev()
        .map(|i| json!({"index": i, "relevance_score": (i + 1) as f64 / n as f64}))
        .collect();
    StubReply::json(&json!({"id": "stub", "results": results}))
}

#[tokio::test]
async fn in_aws_configuration_the_secret_is_fetched_once_and_bedrock_reranks() {
    let db = TestDb::with_sample("lambda_aws").await;
    let secret = runtime_secret(&db);
    // 0: reranks; 1: unavailable; 2: access denied.
    let fail_rerank = Arc::new(AtomicU64::new(0));
    let fail = fail_rerank.clone();
    let stub = AwsStub::start(move |req| {
        if req.is_secret() {
            return StubReply::json11(&json!({
                "ARN": req.body["SecretId"], "Name": "mosaic/db",
                "SecretString": secret.to_string()}));
        }
        match (req.model().as_deref(), fail.load(Ordering::SeqCst)) {
            (Some("cohere.rerank-v3-5:0"), 1) => {
                StubReply::error(503, "ServiceUnavailableException")
            }
            (Some("cohere.rerank-v3-5:0"), 2) => StubReply::error(403, "AccessDeniedException"),
            (Some("cohere.rerank-v3-5:0"), _) => cohere_rerank(req),
            _ => StubReply::error(404, "ResourceNotFoundException"),
        }
    })
    .await;
    let mut f = start_as_in_aws(
        "search-products",
        &db,
        &stub,
        &[
            ("MOSAIC_RERANKER", "bedrock:cohere-rerank-3.5"),
            ("MOSAIC_BEDROCK_MAX_RETRIES", "1"),
        ],
    )
    .await;
    let event = parse(&event_text("search-products", "apigw.json"));

    for _ in 0..3 {
        let (status, v) = f.apigw(&event).await;
        assert_eq!(status, 200, "{v}\n{}", f.logs());
        let (principal, rerank_status, _) = receipt_of(&db, &v).await;
        assert_eq!(
            (principal.as_str(), rerank_status.as_str()),
            (sample_principal().as_str(), "reranked")
        );
        assert!(
            v["results"][0]["signals"]["rerank_score"].is_number(),
            "{v}"
        );
    }
    let secrets = stub.requests().iter().filter(|r| r.is_secret()).count();
    assert_eq!(secrets, 1, "one secret fetch per container");
    let reranks: Vec<StubRequest> = stub
        .requests()
        .into_iter()
        .filter(|r| r.model().is_some())
        .collect();
    assert_eq!(reranks.len(), 3);
    assert!(reranks[0].body["query"]
        .as_str()
        .is_some_and(|q| !q.is_empty()));

    // Bedrock failing: the fused order is served and the receipt says so.
    fail_rerank.store(1, Ordering::SeqCst);
    let (status, v) = f.apigw(&event).await;
    assert_eq!(status, 200, "{v}");
    assert!(v["results"][0]["signals"]["rerank_score"].is_null(), "{v}");
    let (_, rerank_status, warnings) = receipt_of(&db, &v).await;
    assert_ne!(rerank_status, "reranked");
    assert!(warnings.contains("rerank"), "{warnings}");
    assert!(
        !warnings.contains("stub failure detail"),
        "no service message leaks: {warnings}"
    );
    assert!(
        !f.logs().contains("stub/secret/key"),
        "no credentials in logs"
    );
    assert!(!f.logs().contains("\"level\":\"ERROR\""), "{}", f.logs());

    // Access denied (no model access, no Marketplace subscription): still
    // served, and logged as an error that names the fix.
    fail_rerank.store(2, Ordering::SeqCst);
    let (status, v) = f.apigw(&event).await;
    assert_eq!(status, 200, "{v}");
    let (_, rerank_status, _) = receipt_of(&db, &v).await;
    assert_ne!(rerank_status, "reranked");
    let logs = f.logs();
    let line = logs
        .lines()
        .find(|l| l.contains("\"level\":\"ERROR\"") && l.contains("AWS call failed"))
        .unwrap_or_else(|| panic!("no error line:\n{logs}"));
    assert!(
        line.contains("bedrock:InvokeModel") && line.contains("aws-marketplace:Subscribe"),
        "{line}"
    );
    f.assert_alive();
}

#[tokio::test]
async fn in_aws_configuration_a_wrong_embedding_dimension_fails_the_start_up() {
    let db = TestDb::with_sample("lambda_aws_dim").await;
    let stub = secret_stub(runtime_secret(&db)).await;
    // The sample database holds 384-dimensional vectors.
    let mut f = start_as_in_aws(
        "search-products",
        &db,
        &stub,
        &[("MOSAIC_EMBEDDER", "bedrock:titan-v2:1024")],
    )
    .await;
    let (_, body) = f.init_failure().await;
    let message = body["errorMessage"].as_str().unwrap().to_string();
    assert!(
        message.contains("1024") && message.contains("384"),
        "{message}"
    );
}

#[tokio::test]
async fn in_aws_configuration_an_unverifiable_database_is_a_503_not_a_crash() {
    let db = TestDb::with_sample("lambda_aws_tls").await;
    let stub = secret_stub(runtime_secret(&db)).await;
    // No test CA: the local certificate does not verify.
    let mut f = start_as_in_aws("search-products", &db, &stub, &[("MOSAIC_DB_CA_FILE", "")]).await;
    let (status, v) = f
        .apigw(&parse(&event_text("search-products", "apigw.json")))
        .await;
    assert_eq!(status, 503, "{v}");
    assert_eq!(error_of(&v).0, "unavailable");
    assert!(
        f.logs().to_lowercase().contains("certificate"),
        "{}",
        f.logs()
    );
    f.assert_alive();
}

// ------------------------------------------- bounded statements in AWS

const RECEIPTS_LOCK: &str = "LOCK TABLE receipts.search_events IN ACCESS EXCLUSIVE MODE";
const CATALOG_LOCK: &str = "LOCK TABLE catalog.products, catalog.evidence IN ACCESS EXCLUSIVE MODE";

/// The database secret with a TLS-only door in front of the local cluster,
/// as RDS Proxy is when it requires TLS: the functions' connections and
/// their cancel requests must all use verified TLS.
async fn behind_tls_only_door(db: &TestDb) -> (TlsOnlyDoor, AwsStub) {
    let mut secret = runtime_secret(db);
    let door = TlsOnlyDoor::start(format!("127.0.0.1:{}", secret["port"])).await;
    secret["port"] = door.addr.port().into();
    (door, secret_stub(secret).await)
}

/// A function as in AWS with the bounds of `profile`, shareable by the
/// closures of [`locked_then_served`].
async fn bounded_in_aws(
    name: &'static str,
    db: &TestDb,
    stub: &AwsStub,
    profile: &mosaic::RetrievalProfile,
) -> tokio::sync::Mutex<Function> {
    let env = bound_env(profile);
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    tokio::sync::Mutex::new(start_as_in_aws(name, db, stub, &env).await)
}

async fn apigw_of(f: &tokio::sync::Mutex<Function>, event: &Value) -> (u16, Value) {
    f.lock().await.apigw(event).await
}

/// An AgentCore tool call as `(status, body)`: its error's status, or 200.
async fn agentcore_of(f: &tokio::sync::Mutex<Function>, args: &Value, cc: &str) -> (u16, Value) {
    let v = f.lock().await.agentcore(args, Some(cc)).await;
    let status = v["error"]["code"].as_str().map_or(200, status_of);
    (status, v)
}

/// `function`'s API Gateway sample event and AgentCore sample arguments, in
/// the scope of `event_id` and its granted products.
fn sample_calls(function: &str, event_id: &str, granted: &[String]) -> (Value, Value) {
    let call = |file: &str| substitute(&event_text(function, file), event_id, granted);
    (call("apigw.json"), call("agentcore.json"))
}

/// Both event kinds of a function started with `profile`'s bounds, each
/// under `lock` ([`locked_then_served`]); then the function serves on and
/// no 503 was run a second time (a retry is for a lost connection, not for
/// a bound that stopped the operation).
async fn locked_both_ways(
    db: &TestDb,
    stub: &AwsStub,
    function: &'static str,
    lock: &str,
    (bound, profile, budget): &(&str, mosaic::RetrievalProfile, Duration),
    (apigw, args): &(Value, Value),
) {
    let f = bounded_in_aws(function, db, stub, profile).await;
    let cc = client_context(function);
    let what = format!("{function} in AWS over API Gateway, {bound}");
    locked_then_served(db, &what, lock, *budget, || apigw_of(&f, apigw)).await;
    let what = format!("{function} in AWS over AgentCore, {bound}");
    locked_then_served(db, &what, lock, *budget, || agentcore_of(&f, args, &cc)).await;
    let mut f = f.into_inner();
    f.assert_alive();
    assert!(!f.logs().contains("retrying once"), "{}", f.logs());
}

#[tokio::test]
async fn in_aws_configuration_a_locked_receipts_table_makes_a_search_a_503_in_time() {
    let db = TestDb::with_sample("lambda_aws_lock_search").await;
    let (door, stub) = behind_tls_only_door(&db).await;
    let calls = sample_calls("search-products", PLACEHOLDER, &[P1.into(), P2.into()]);
    for bounds in bounded_profiles() {
        locked_both_ways(
            &db,
            &stub,
            "search-products",
            RECEIPTS_LOCK,
            &bounds,
            &calls,
        )
        .await;
    }
    assert_eq!(
        door.refused(),
        0,
        "a connection or cancel request without TLS"
    );
}

#[tokio::test]
async fn in_aws_configuration_a_locked_catalog_makes_every_scoped_operation_a_503_in_time() {
    let db = TestDb::with_sample("lambda_aws_lock_scope").await;
    let (door, stub) = behind_tls_only_door(&db).await;
    let mut search = start_as_in_aws("search-products", &db, &stub, &[]).await;
    let (status, v) = search
        .apigw(&parse(&event_text("search-products", "apigw.json")))
        .await;
    assert_eq!(status, 200, "{v}");
    let (event_id, granted, _) = check_search(&v, 5, 3);
    for bounds in bounded_profiles() {
        for (function, lock) in [
            ("get-product-evidence", CATALOG_LOCK),
            ("compare-products", CATALOG_LOCK),
            // Explanation reads only the receipt.
            ("explain-retrieval", RECEIPTS_LOCK),
        ] {
            let calls = sample_calls(function, &event_id, &granted);
            locked_both_ways(&db, &stub, function, lock, &bounds, &calls).await;
        }
    }
    assert_eq!(
        door.refused(),
        0,
        "a connection or cancel request without TLS"
    );
}

/// The cancel request of an abandoned statement goes over the same verified
/// TLS as the connections: behind a door that refuses plain TCP, with a
/// statement bound of a minute, the statement abandoned at the request
/// deadline is gone from the server at once. Without the cancel it would
/// wait on the lock for the minute.
#[tokio::test]
async fn in_aws_configuration_an_abandoned_statement_is_cancelled_over_tls() {
    let db = TestDb::with_sample("lambda_aws_cancel").await;
    let (door, stub) = behind_tls_only_door(&db).await;
    // The door refuses what does not start with TLS.
    let plain = format!(
        "postgres://mosaic_runtime:mosaic_runtime@127.0.0.1:{}/{}?sslmode=disable",
        door.addr.port(),
        db.name
    );
    assert!(mosaic::db::connect(&plain).await.is_err());
    assert_eq!(door.refused(), 1);

    let [_, (_, profile, _)] = bounded_profiles();
    let f = bounded_in_aws("search-products", &db, &stub, &profile).await;
    let event = parse(&event_text("search-products", "apigw.json"));
    let (status, v) = apigw_of(&f, &event).await;
    assert_eq!(status, 200, "{v}");
    let observer = db.runtime().await;
    let mut locker = db.owner().await;
    let tx = locker.transaction().await.unwrap();
    tx.batch_execute(RECEIPTS_LOCK).await.unwrap();
    let (status, v) = apigw_of(&f, &event).await;
    assert_eq!(status, 503, "{v}");
    // The lock is still held: only the cancel request can have ended it.
    let left = settled(&observer, &db, Duration::from_secs(2)).await;
    assert!(
        left.is_empty(),
        "still running: {left:?}\n{}",
        f.lock().await.logs()
    );
    assert_eq!(
        door.refused(),
        1,
        "a connection or cancel request without TLS"
    );
    let logs = f.lock().await.logs();
    assert!(!logs.contains("cancel request failed"), "{logs}");
    tx.rollback().await.unwrap();
    let (status, v) = apigw_of(&f, &event).await;
    assert_eq!(status, 200, "{v}");
}

// ------------------------------------------------- who may claim a principal

/// The answer to a call that must not be served: 401 `unauthenticated` or
/// the generic 404 — and never anything of another principal.
fn assert_refused(v: &Value, what: &str) {
    let code = error_of(v).0;
    assert!(
        code == "unauthenticated" || *v == generic_refusal(),
        "{what}: must be 401 or the generic 404, got {v}"
    );
}

#[tokio::test]
async fn nobody_can_claim_another_principal_over_agentcore_or_a_direct_invocation() {
    let db = TestDb::with_sample("lambda_spoofing").await;
    let url = db.runtime_url();
    // The most permissive configuration: anonymous calls allowed too.
    let anon = [("MOSAIC_ALLOW_ANONYMOUS", "true")];
    let mut search = Function::start("search-products", &url, &anon).await;

    // The victim searches over API Gateway; the anonymous principal searches
    // by a direct invocation.
    let victim = sample_principal();
    let (status, v) = search
        .apigw(&parse(&event_text("search-products", "apigw.json")))
        .await;
    assert_eq!(status, 200, "{v}");
    let (event_id, granted, _) = check_search(&v, 5, 3);
    assert_eq!(principal_of(&db, &event_id).await, victim.as_str());
    let v = search
        .agentcore(&json!({"query": "espresso machine", "limit": 3}), None)
        .await;
    let (anonymous_event, anonymous_granted, _) = check_search(&v, 3, 3);
    assert_eq!(principal_of(&db, &anonymous_event).await, "anonymous");

    let attacker = Principal::jwt(ISS, "11111111-2222-4333-8444-555555555555").unwrap();
    let anonymous_sub = Principal::jwt(ISS, "anonymous").unwrap();
    let past = now_s() - 1;
    let future = now_s() + 60;

    for function in FUNCTIONS {
        let mut f = Function::start(function, &url, &anon).await;
        let tool = tool_name(&function.replace('-', "_"));
        let args = substitute(&event_text(function, "agentcore.json"), &event_id, &granted);
        let receipts_before = receipts_of(&db, victim.as_str()).await;

        // The control: the interceptor's proof for the victim serves the victim.
        let genuine = gateway_context(
            &tool,
            Some(victim.as_str()),
            Some(&proof_for(&victim, &tool, future)),
        );
        let v = f.agentcore(&args, Some(&genuine)).await;
        assert!(
            v.get("error").is_none(),
            "{function}: the control failed: {v}"
        );

        let mut cases: Vec<(&str, String, Value)> = vec![
            (
                "a client-set principal without the interceptor's proof",
                gateway_context(&tool, Some(victim.as_str()), None),
                args.clone(),
            ),
            (
                "the victim's valid proof replayed after its expiry",
                gateway_context(
                    &tool,
                    Some(victim.as_str()),
                    Some(&proof_for(&victim, &tool, past)),
                ),
                args.clone(),
            ),
            (
                "the attacker's own valid proof under the victim's name",
                gateway_context(
                    &tool,
                    Some(victim.as_str()),
                    Some(&proof_for(&attacker, &tool, future)),
                ),
                args.clone(),
            ),
            (
                "the victim's proof for another tool",
                gateway_context(
                    &tool,
                    Some(victim.as_str()),
                    Some(&proof_for(&victim, "mosaic-products___other_tool", future)),
                ),
                args.clone(),
            ),
            (
                "a proof signed with another key",
                gateway_context(
                    &tool,
                    Some(victim.as_str()),
                    Some(
                        &proof::Key::new("an attacker's guess at the key, 32+ bytes")
                            .unwrap()
                            .sign(&victim, &tool, future),
                    ),
                ),
                args.clone(),
            ),
            (
                "a direct invocation with a hand-written gateway context",
                gateway_context(
                    &tool,
                    Some(victim.as_str()),
                    Some(&format!("v1.{future}.{}", "ab".repeat(32))),
                ),
                args.clone(),
            ),
            (
                "the sample gateway context as written (a placeholder proof)",
                {
                    let text = event_text(function, "agentcore-client-context.json");
                    parse(&text).to_string()
                },
                args.clone(),
            ),
            (
                "no principal at all, although anonymous calls are allowed: behind the interceptor every tool call names one",
                gateway_context(&tool, None, None),
                args.clone(),
            ),
            (
                "a proof whose expiry lies beyond any lifetime the interceptor can be given",
                gateway_context(
                    &tool,
                    Some(victim.as_str()),
                    Some(&proof_for(
                        &victim,
                        &tool,
                        now_s() + proof::MAX_TTL + proof::CLOCK_SKEW + 600,
                    )),
                ),
                args.clone(),
            ),
            (
                "a principal header naming `anonymous`",
                gateway_context(
                    &tool,
                    Some("anonymous"),
                    Some(&proof_for(&victim, &tool, future)),
                ),
                args.clone(),
            ),
        ];
        // API-Gateway-shaped arguments carrying the victim's claims, inside
        // an AgentCore call that names the victim without proof.
        let apigw_shaped = if function == "search-products" {
            parse(&event_text(function, "apigw.json"))
        } else {
            substitute(&event_text(function, "apigw.json"), &event_id, &granted)
        };
        cases.push((
            "API-Gateway-shaped arguments inside an AgentCore call",
            gateway_context(&tool, Some(victim.as_str()), None),
            apigw_shaped.clone(),
        ));
        for (what, cc, args) in &cases {
            let v = f.agentcore(args, Some(cc)).await;
            assert_refused(&v, &format!("{function}: {what}"));
        }
        // The same arguments from an authenticated attacker: arguments, not
        // an event — refused as such, never the victim's data.
        let v = f
            .agentcore(
                &apigw_shaped,
                Some(&context_for(&function.replace('-', "_"), Some(&attacker))),
            )
            .await;
        assert_eq!(status_of(error_of(&v).0), 400, "{function}: {v}");
        // A gateway's context without the tool name, naming the victim with
        // a valid proof: refused, never served as the victim or anyone else.
        let named = json!({"custom": {"bedrockAgentCorePropagatedHeaders": {
            "x-mosaic-principal": victim.as_str(),
            "x-mosaic-principal-proof": proof_for(&victim, &tool, future)}}})
        .to_string();
        let v = f.agentcore(&args, Some(&named)).await;
        assert_eq!(error_of(&v).0, "invalid_argument", "{function}: {v}");
        // API-Gateway-shaped arguments carrying the victim's authorizer
        // claims, in a context with the gateway's keys but a tool name that
        // is null or missing: still a tool call (the gateway passes a
        // client's arguments through as the event), so never served as an
        // API Gateway request from the victim.
        for context in [
            json!({"custom": {"bedrockAgentCoreToolName": null,
                "bedrockAgentCoreGatewayId": "mosaic-gateway-test"}}),
            json!({"custom": {"bedrockAgentCoreGatewayId": "mosaic-gateway-test",
                "bedrockAgentCoreTargetId": "TARGET0001"}}),
        ] {
            let v = f.agentcore(&apigw_shaped, Some(&context.to_string())).await;
            assert_eq!(
                error_of(&v).0,
                "invalid_argument",
                "{function}: {context}: {v}"
            );
        }
        // A `sub` of `anonymous` is a principal like any other, not the
        // anonymous one: the anonymous caller's scope is refused to it.
        if function != "search-products" {
            let anon_args = substitute(
                &event_text(function, "agentcore.json"),
                &anonymous_event,
                &anonymous_granted,
            );
            let v = f.agentcore(&anon_args, None).await;
            assert!(
                v.get("error").is_none(),
                "{function}: anonymous control: {v}"
            );
            let v = f
                .agentcore(
                    &anon_args,
                    Some(&context_for(
                        &function.replace('-', "_"),
                        Some(&anonymous_sub),
                    )),
                )
                .await;
            assert_eq!(
                v,
                generic_refusal(),
                "{function}: sub `anonymous` over AgentCore"
            );
            let mut apigw = substitute(
                &event_text(function, "apigw.json"),
                &anonymous_event,
                &anonymous_granted,
            );
            apigw["requestContext"]["authorizer"]["jwt"]["claims"]["sub"] = json!("anonymous");
            let (status, v) = f.apigw(&apigw).await;
            assert_eq!(
                (status, v),
                (404, generic_refusal()),
                "{function}: sub `anonymous` over API Gateway"
            );
        }
        // An authorizer that vouched for a caller without a subject (a JWT
        // without `sub`, a Lambda authorizer's context) is refused, never
        // served as the anonymous caller although anonymous calls are on.
        let mut no_sub = substitute(&event_text(function, "apigw.json"), &event_id, &granted);
        let claims = &mut no_sub["requestContext"]["authorizer"]["jwt"]["claims"];
        claims.as_object_mut().unwrap().remove("sub");
        let mut lambda_authorizer = no_sub.clone();
        lambda_authorizer["requestContext"]["authorizer"] =
            json!({"lambda": {"user": victim.as_str()}});
        for (what, event) in [("no sub", no_sub), ("lambda authorizer", lambda_authorizer)] {
            let (status, v) = f.apigw(&event).await;
            assert_eq!(status, 401, "{function}: {what}: {v}");
            assert_eq!(
                error_of(&v),
                ("unauthenticated", None),
                "{function}: {what}"
            );
        }
        // No refused search left a receipt in the victim's name.
        if function == "search-products" {
            assert_eq!(
                receipts_of(&db, victim.as_str()).await,
                receipts_before + 1,
                "only the control searched as the victim"
            );
        }
        f.assert_alive();
    }
    search.assert_alive();
}

/// How many receipts a principal has.
async fn receipts_of(db: &TestDb, principal: &str) -> i64 {
    db.owner()
        .await
        .query_one(
            "SELECT count(*) FROM receipts.search_events WHERE principal = $1",
            &[&principal],
        )
        .await
        .unwrap()
        .get(0)
}

/// The identity interceptor's headers in its output.
fn interceptor_headers(out: &Value) -> (String, String) {
    let h = &out["mcp"]["transformedGatewayRequest"]["headers"];
    (
        h[principal::HEADER]
            .as_str()
            .unwrap_or_else(|| panic!("{out}"))
            .to_string(),
        h[principal::PROOF_HEADER]
            .as_str()
            .unwrap_or_else(|| panic!("{out}"))
            .to_string(),
    )
}

/// The test issuer's published keys (`shared/fixtures/jwt`), served over
/// HTTP on loopback as an OpenID issuer serves them: its discovery document
/// at `/.well-known/openid-configuration`, naming the key set at `/jwks`.
struct IssuerStub {
    addr: SocketAddr,
    /// Requests answered, by path.
    requests: Arc<Mutex<Vec<String>>>,
    task: JoinHandle<()>,
}

impl IssuerStub {
    async fn start() -> IssuerStub {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let seen = requests.clone();
        let task = tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                let seen = seen.clone();
                tokio::spawn(async move {
                    let mut head = Vec::new();
                    let mut buf = [0u8; 1024];
                    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                        match stream.read(&mut buf).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => head.extend_from_slice(&buf[..n]),
                        }
                    }
                    let head = String::from_utf8_lossy(&head).to_string();
                    let path = head.split_whitespace().nth(1).unwrap_or("").to_string();
                    seen.lock().unwrap().push(path.clone());
                    let body = match path.as_str() {
                        "/.well-known/openid-configuration" => json!({
                            "issuer": ISS,
                            "jwks_uri": format!("http://{addr}/jwks"),
                        })
                        .to_string(),
                        "/jwks" => JWKS.to_string(),
                        _ => String::new(),
                    };
                    let status = if body.is_empty() {
                        "404 Not Found"
                    } else {
                        "200 OK"
                    };
                    let reply = format!(
                        "HTTP/1.0 {status}\r\ncontent-type: application/json\r\n\
                         content-length: {}\r\n\r\n{body}",
                        body.len()
                    );
                    let _ = stream.write_all(reply.as_bytes()).await;
                });
            }
        });
        IssuerStub {
            addr,
            requests,
            task,
        }
    }

    fn discovery_url(&self) -> String {
        format!("http://{}/.well-known/openid-configuration", self.addr)
    }

    fn requests(&self) -> Vec<String> {
        self.requests.lock().unwrap().clone()
    }
}

impl Drop for IssuerStub {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The test issuer's key set and a token it signed under a key id its set
/// does not hold (`shared/fixtures/jwt`).
const JWKS: &str = include_str!("../shared/fixtures/jwt/jwks.json");
const UNKNOWN_KID_TOKEN: &str = include_str!("../shared/fixtures/jwt/unknown-kid.jwt");

#[tokio::test]
async fn the_identity_interceptor_sets_a_principal_the_functions_accept() {
    let db = TestDb::with_sample("lambda_interceptor").await;
    let url = db.runtime_url();
    let issuer = IssuerStub::start().await;
    let mut interceptor = Function::start(
        "identity-interceptor",
        "",
        &[
            ("MOSAIC_JWT_ISSUER", ISS),
            ("MOSAIC_JWT_AUDIENCE", CLIENT_ID),
            ("MOSAIC_JWT_AUDIENCE_CLAIM", "client_id"),
            ("MOSAIC_JWT_DISCOVERY_URL", &issuer.discovery_url()),
        ],
    )
    .await;
    let mut search = Function::start("search-products", &url, &[]).await;

    for (name, text) in sample_events("identity-interceptor") {
        let input = parse(&text);
        let out = interceptor.response(text.as_bytes(), None).await;
        assert_eq!(out["interceptorOutputVersion"], "1.0", "{name}: {out}");
        let body = &input["mcp"]["gatewayRequest"]["body"];
        match name.as_str() {
            "tools-call.json" | "tools-call-anonymous-sub.json" => {
                let (who, proof) = interceptor_headers(&out);
                let sub = if name == "tools-call.json" {
                    SUB
                } else {
                    "anonymous"
                };
                // The token's principal, not the one the client sent.
                assert_eq!(who, Principal::jwt(ISS, sub).unwrap().as_str(), "{name}");
                let sent = input["mcp"]["gatewayRequest"]["headers"]["X-Mosaic-Principal"].as_str();
                assert_ne!(Some(who.as_str()), sent, "{name}");
                assert_eq!(
                    out["mcp"]["transformedGatewayRequest"]["body"], *body,
                    "{name}: the request goes on unchanged"
                );
                // What the gateway then hands the target: the tool's
                // arguments, the tool name and the propagated headers.
                let tool = body["params"]["name"].as_str().unwrap();
                if tool.ends_with("___search_products") {
                    let cc = gateway_context(tool, Some(&who), Some(&proof));
                    let v = search
                        .agentcore(&body["params"]["arguments"], Some(&cc))
                        .await;
                    let (id, _, _) = check_search(&v, 5, 3);
                    assert_eq!(principal_of(&db, &id).await, who);
                    // The same headers for another tool are refused.
                    let cc = gateway_context(
                        "mosaic-products___search_products",
                        Some(&who),
                        Some(&proof),
                    );
                    let v = search
                        .agentcore(&body["params"]["arguments"], Some(&cc))
                        .await;
                    assert_eq!(error_of(&v).0, "unauthenticated", "{v}");
                }
            }
            // No token, or one whose signature is not the issuer's.
            "tools-call-no-token.json" | "tools-call-forged-signature.json" => {
                let resp = &out["mcp"]["transformedGatewayResponse"];
                assert_eq!(resp["body"]["id"], body["id"], "{out}");
                assert_eq!(resp["body"]["result"]["isError"], true, "{out}");
                let text = resp["body"]["result"]["content"][0]["text"]
                    .as_str()
                    .unwrap();
                assert_eq!(error_of(&parse(text)).0, "unauthenticated");
                assert!(
                    out["mcp"].get("transformedGatewayRequest").is_none(),
                    "{out}"
                );
            }
            "tools-list.json" => {
                let req = &out["mcp"]["transformedGatewayRequest"];
                assert_eq!(req["body"], *body, "{out}");
                assert!(req.get("headers").is_none(), "{out}");
            }
            other => panic!("events/identity-interceptor/{other}: no expectation for this file"),
        }
    }
    // The issuer's keys were fetched once, on the first call, and kept.
    assert_eq!(
        issuer.requests(),
        ["/.well-known/openid-configuration", "/jwks"],
        "{}",
        interceptor.logs()
    );
    // A key id the set lacks is refused; the keys were fetched moments ago,
    // so these calls fetch nothing (at most one fetch per 30 s: a stream of
    // tokens under unknown key ids cannot make the interceptor hammer its
    // issuer; shared/src/jwt.rs tests the fetch when that time has passed).
    let mut unknown = parse(&event_text("identity-interceptor", "tools-call.json"));
    unknown["mcp"]["gatewayRequest"]["headers"]["Authorization"] =
        Value::from(format!("Bearer {}", UNKNOWN_KID_TOKEN.trim()));
    for _ in 0..2 {
        let out = interceptor
            .response(unknown.to_string().as_bytes(), None)
            .await;
        assert_eq!(
            out["mcp"]["transformedGatewayResponse"]["body"]["result"]["isError"], true,
            "{out}"
        );
    }
    assert_eq!(issuer.requests().len(), 2, "{:?}", issuer.requests());
    // Not the interceptor contract: a function error, so the gateway cannot
    // go on to the target without the interceptor's headers.
    match interceptor.invoke(b"{\"hello\": 1}", None).await {
        Outcome::Error(e) => assert_eq!(e["errorType"], "InvalidInterceptorInput", "{e}"),
        other => panic!("{other:?}"),
    }
    assert!(
        interceptor.child.try_wait().unwrap().is_none(),
        "{}",
        interceptor.logs()
    );
    assert!(
        !interceptor.logs().contains("eyJ"),
        "the bearer token is never logged:\n{}",
        interceptor.logs()
    );
    search.assert_alive();

    // Without a key, an issuer whose keys it checks tokens against, or the
    // audience its tokens must be for, the interceptor does not start.
    for (env, named) in [
        (
            [
                ("MOSAIC_PRINCIPAL_PROOF_KEY", ""),
                ("MOSAIC_JWT_ISSUER", ISS),
                ("MOSAIC_JWT_AUDIENCE", CLIENT_ID),
            ],
            "MOSAIC_PRINCIPAL_PROOF_SECRET_ARN",
        ),
        (
            [
                ("MOSAIC_JWT_ISSUER", ""),
                ("MOSAIC_JWT_AUDIENCE", CLIENT_ID),
                ("MOSAIC_JWT_AUDIENCE", CLIENT_ID),
            ],
            "MOSAIC_JWT_ISSUER",
        ),
        (
            [
                ("MOSAIC_JWT_ISSUER", ISS),
                ("MOSAIC_JWT_AUDIENCE", " , "),
                ("MOSAIC_JWT_AUDIENCE", " , "),
            ],
            "MOSAIC_JWT_AUDIENCE",
        ),
    ] {
        let mut refused = Function::start("identity-interceptor", "", &env).await;
        let (_, body) = refused.init_failure().await;
        assert!(
            body["errorMessage"].as_str().unwrap().contains(named),
            "{body}"
        );
    }
}

/// explain-retrieval in the AWS configuration, its principal-proof key in
/// the stub's secret `proof_arn`.
async fn explain_with_proof_secret(
    db: &TestDb,
    stub: &AwsStub,
    proof_arn: &str,
    env: &[(&str, &str)],
) -> Function {
    let mut all = vec![
        ("MOSAIC_PRINCIPAL_PROOF_KEY", ""),
        ("MOSAIC_PRINCIPAL_PROOF_SECRET_ARN", proof_arn),
    ];
    all.extend_from_slice(env);
    start_as_in_aws("explain-retrieval", db, stub, &all).await
}

#[tokio::test]
async fn the_catch_all_route_serves_the_liveness_check_and_no_operation() {
    let db = TestDb::with_sample("lambda_catch_all").await;
    let mut f = Function::start("explain-retrieval", &db.runtime_url(), &[]).await;
    let event = parse(&event_text("explain-retrieval", "apigw.json"));
    // `routeKey` `$default`: the request matched no operation's route.
    let catch_all = |method: &str, path: &str, authorizer: bool| {
        let mut e = event.clone();
        e["routeKey"] = json!("$default");
        e["requestContext"]["routeKey"] = json!("$default");
        e["rawPath"] = json!(path);
        e["requestContext"]["http"]["path"] = json!(path);
        e["requestContext"]["http"]["method"] = json!(method);
        if !authorizer {
            e["requestContext"]
                .as_object_mut()
                .unwrap()
                .remove("authorizer");
        }
        e
    };
    let (status, v) = f.apigw(&catch_all("GET", "/healthz", false)).await;
    assert_eq!((status, &v), (200, &json!({"status": "ok"})), "{v}");
    // An operation's path through it is not_found, with or without a
    // principal: this route has no authorizer, so what it carries is not
    // vouched for.
    for (method, path) in [
        (
            "GET",
            "/api/retrieval/events/00000000-0000-4000-8000-000000000000",
        ),
        ("POST", "/api/search"),
        (
            "GET",
            "/x/api/retrieval/events/00000000-0000-4000-8000-000000000000",
        ),
        ("DELETE", "/nothing/here"),
    ] {
        for authorizer in [false, true] {
            let (status, v) = f.apigw(&catch_all(method, path, authorizer)).await;
            assert_eq!(
                (status, &v),
                (404, &generic_refusal()),
                "{method} {path}: {v}"
            );
        }
    }
    // Through its own route the function serves only its own operation:
    // another operation's path pointed at it is not_found, not served.
    let mut wrong = event.clone();
    wrong["rawPath"] = json!("/api/search");
    wrong["requestContext"]["http"]["path"] = json!("/api/search");
    wrong["requestContext"]["http"]["method"] = json!("POST");
    wrong["body"] = json!(r#"{"query": "kettle"}"#);
    let (status, v) = f.apigw(&wrong).await;
    assert_eq!((status, &v), (404, &generic_refusal()), "{v}");
    let searches: i64 = db
        .owner()
        .await
        .query_one("SELECT count(*) FROM receipts.search_events", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(searches, 0, "no search ran");
    f.assert_alive();
}

#[tokio::test]
async fn a_secrets_manager_outage_at_start_up_leaves_the_http_routes_serving() {
    // Secrets Manager answers 503 for the proof key, then answers it too
    // slowly, then well; the database secret is served all along.
    let db = TestDb::with_sample("lambda_proof_outage").await;
    let secret = runtime_secret(&db);
    let proof_arn = "arn:aws:secretsmanager:us-east-1:123456789012:secret:mosaic/proof-Outage";
    const DOWN: u8 = 0;
    const SLOW: u8 = 1;
    const UP: u8 = 2;
    let state = Arc::new(std::sync::atomic::AtomicU8::new(DOWN));
    let stub = AwsStub::start({
        let state = state.clone();
        move |req| {
            let key = || StubReply::json11(&json!({"ARN": proof_arn, "SecretString": PROOF_KEY}));
            match req.body["SecretId"] == proof_arn {
                true => match state.load(std::sync::atomic::Ordering::SeqCst) {
                    DOWN => StubReply::error(503, "ServiceUnavailableException"),
                    // Within the key read's own attempt timeout (3.3 s):
                    // only the invocation's deadline can cut it.
                    SLOW => key().after(Duration::from_millis(2_500)),
                    _ => key(),
                },
                false => StubReply::json11(
                    &json!({"ARN": req.body["SecretId"], "SecretString": secret.to_string()}),
                ),
            }
        }
    })
    .await;
    // A request deadline of 1.5 s bounds each invocation to about that.
    let mut f = explain_with_proof_secret(
        &db,
        &stub,
        proof_arn,
        &[("MOSAIC_REQUEST_DEADLINE_MS", "1500")],
    )
    .await;
    let args = parse(&event_text("explain-retrieval", "agentcore.json"));
    // The container started; an AgentCore call is a 503 while the key
    // cannot be read, never a call let through.
    let v = f
        .agentcore(&args, Some(&client_context("explain-retrieval")))
        .await;
    assert_eq!(error_of(&v).0, "unavailable", "{v}\n{}", f.logs());
    let bare = gateway_context(&tool_name("explain_retrieval"), None, None);
    let anonymous = f.agentcore(&args, Some(&bare)).await;
    assert_eq!(error_of(&anonymous).0, "unauthenticated", "{anonymous}");
    // The HTTP route needs no key: the authorizer's principal is served (the
    // sample's placeholder scope is the generic refusal).
    let (status, v) = f
        .apigw(&parse(&event_text("explain-retrieval", "apigw.json")))
        .await;
    assert_eq!((status, &v), (404, &generic_refusal()), "{v}");
    // Secrets Manager answers after the invocation's deadline: the call is
    // a 503 within it, not an answer past it.
    state.store(SLOW, std::sync::atomic::Ordering::SeqCst);
    let t = Instant::now();
    let v = f
        .agentcore(&args, Some(&client_context("explain-retrieval")))
        .await;
    assert_eq!(error_of(&v).0, "unavailable", "{v}\n{}", f.logs());
    // It did not wait for Secrets Manager's answer.
    assert!(
        t.elapsed() < Duration::from_millis(2_500),
        "{:?}",
        t.elapsed()
    );
    // Secrets Manager is back: the next call reads the key and is checked.
    state.store(UP, std::sync::atomic::Ordering::SeqCst);
    let v = f
        .agentcore(&args, Some(&client_context("explain-retrieval")))
        .await;
    assert_eq!(v, generic_refusal(), "{v}\n{}", f.logs());
    f.assert_alive();
}

#[tokio::test]
async fn in_aws_configuration_the_proof_key_comes_from_secrets_manager() {
    let db = TestDb::with_sample("lambda_aws_proof").await;
    let secret = runtime_secret(&db);
    let proof_arn = "arn:aws:secretsmanager:us-east-1:123456789012:secret:mosaic/proof-AbCdEf";
    let stub = AwsStub::start(move |req| {
        let text = if req.body["SecretId"] == proof_arn {
            PROOF_KEY.to_string()
        } else {
            secret.to_string()
        };
        StubReply::json11(&json!({"ARN": req.body["SecretId"], "SecretString": text}))
    })
    .await;
    let mut f = explain_with_proof_secret(&db, &stub, proof_arn, &[]).await;
    // The interceptor's proof (same key) is accepted; a refusal for the
    // placeholder scope shows the call got past the principal check.
    let args = parse(&event_text("explain-retrieval", "agentcore.json"));
    let v = f
        .agentcore(&args, Some(&client_context("explain-retrieval")))
        .await;
    assert_eq!(v, generic_refusal(), "{v}\n{}", f.logs());
    let forged = gateway_context(
        &tool_name("explain_retrieval"),
        Some(sample_principal().as_str()),
        Some(&format!("v1.{}.{}", now_s() + 60, "00".repeat(32))),
    );
    let v = f.agentcore(&args, Some(&forged)).await;
    assert_eq!(error_of(&v).0, "unauthenticated", "{v}");
    let fetched: Vec<String> = stub
        .requests()
        .iter()
        .filter(|r| r.is_secret())
        .map(|r| r.body["SecretId"].as_str().unwrap_or("").to_string())
        .collect();
    assert!(fetched.iter().any(|id| id == proof_arn), "{fetched:?}");
    f.assert_alive();
}
