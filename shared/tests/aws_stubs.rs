//! The Bedrock embedders and rerankers and the Secrets Manager cache, through
//! the real AWS SDK clients pointed at a local stub HTTP server.
//!
//! The stub is a few dozen lines of HTTP/1.1 on a tokio `TcpListener`: it
//! records every request (path, headers, JSON body) and answers with
//! whatever the test's handler says, optionally after a delay. Nothing here
//! reaches AWS; the credentials are test values.
//!
//! `cargo test -p mosaic --features aws --test aws_stubs`
#![cfg(feature = "aws")]

use mosaic::aws::bedrock::{self, MAX_IN_FLIGHT};
use mosaic::aws::{
    rds, secrets, BedrockEmbedder, BedrockReranker, CallPolicy, SdkConfig, SecretCache, SecretError,
};
use mosaic::embed::{EmbedError, EmbedKind, Embedder};
use mosaic::rerank::{self, RerankError, Reranker};
use mosaic::{Ctx, RetrievalProfile};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const ACCESS_KEY: &str = "AKIDSTUBEXAMPLE0000";
const SECRET_KEY: &str = "stubSecretKey/DoNotLeak+0123456789abcdef";
/// What the stub says in its error bodies; it must never reach a returned error.
const STUB_MESSAGE: &str = "stub-internal-detail: shard 7 of cluster zeta failed";
const DB_PASSWORD: &str = "db-pa55w0rd-never-shown";

// ---------------------------------------------------------------- the stub

#[derive(Debug, Clone)]
struct Request {
    path: String,
    headers: Vec<(String, String)>,
    body: Value,
}

impl Request {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

struct Reply {
    status: u16,
    headers: Vec<(&'static str, String)>,
    body: String,
    delay: Duration,
}

impl Reply {
    fn json(body: Value) -> Self {
        Self {
            status: 200,
            headers: Vec::new(),
            body: body.to_string(),
            delay: Duration::ZERO,
        }
    }

    /// A restJson1 (Bedrock) error: the type in `x-amzn-ErrorType`.
    fn error(status: u16, error_type: &str) -> Self {
        Self {
            status,
            headers: vec![("x-amzn-errortype", error_type.to_string())],
            body: json!({ "message": STUB_MESSAGE }).to_string(),
            delay: Duration::ZERO,
        }
    }

    fn after(mut self, delay: Duration) -> Self {
        self.delay = delay;
        self
    }
}

type Handler = dyn Fn(&Request, usize) -> Reply + Send + Sync;

#[derive(Clone)]
struct Stub {
    url: String,
    requests: Arc<Mutex<Vec<Request>>>,
    max_in_flight: Arc<AtomicUsize>,
}

impl Stub {
    /// Serves `handler(request, index of the request)` on 127.0.0.1.
    async fn start(handler: impl Fn(&Request, usize) -> Reply + Send + Sync + 'static) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let stub = Stub {
            url,
            requests: Arc::default(),
            max_in_flight: Arc::default(),
        };
        let handler: Arc<Handler> = Arc::new(handler);
        let in_flight = Arc::new(AtomicUsize::new(0));
        let s = stub.clone();
        tokio::spawn(async move {
            while let Ok((conn, _)) = listener.accept().await {
                tokio::spawn(serve(conn, s.clone(), handler.clone(), in_flight.clone()));
            }
        });
        stub
    }

    fn requests(&self) -> Vec<Request> {
        self.requests.lock().unwrap().clone()
    }

    fn count(&self) -> usize {
        self.requests.lock().unwrap().len()
    }
}

/// One keep-alive connection: request after request until the peer leaves.
async fn serve(
    mut conn: TcpStream,
    stub: Stub,
    handler: Arc<Handler>,
    in_flight: Arc<AtomicUsize>,
) {
    let mut buf = Vec::new();
    while let Some(request) = read_request(&mut conn, &mut buf).await {
        let index = {
            let mut all = stub.requests.lock().unwrap();
            all.push(request.clone());
            all.len() - 1
        };
        let now = in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        stub.max_in_flight.fetch_max(now, Ordering::SeqCst);
        let reply = handler(&request, index);
        tokio::time::sleep(reply.delay).await;
        in_flight.fetch_sub(1, Ordering::SeqCst);
        let mut head = format!(
            "HTTP/1.1 {} Stub\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\
             x-amzn-requestid: stub-request-{index}\r\n",
            reply.status,
            reply.body.len()
        );
        for (k, v) in &reply.headers {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        head.push_str("\r\n");
        let sent = async {
            conn.write_all(head.as_bytes()).await?;
            conn.write_all(reply.body.as_bytes()).await?;
            conn.flush().await
        };
        if sent.await.is_err() {
            return;
        }
    }
}

async fn read_request(conn: &mut TcpStream, buf: &mut Vec<u8>) -> Option<Request> {
    let mut chunk = [0u8; 16 * 1024];
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i;
        }
        let n = conn.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let target = lines.next()?.split(' ').nth(1)?.to_string();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let len: usize = headers
        .iter()
        .find(|(k, _)| k == "content-length")
        .map(|(_, v)| v.parse().unwrap())
        .unwrap_or(0);
    if headers
        .iter()
        .any(|(k, v)| k == "expect" && v.eq_ignore_ascii_case("100-continue"))
    {
        conn.write_all(b"HTTP/1.1 100 Continue\r\n\r\n")
            .await
            .ok()?;
    }
    let need = head_end + 4 + len;
    while buf.len() < need {
        let n = conn.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    let body = serde_json::from_slice(&buf[head_end + 4..need]).unwrap_or(Value::Null);
    buf.drain(..need);
    Some(Request {
        path: percent_decode(&target),
        headers,
        body,
    })
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            if let Ok(v) = u8::from_str_radix(&s[i + 1..i + 3], 16) {
                out.push(v);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8(out).unwrap()
}

// ------------------------------------------------------------ the clients

async fn sdk(stub: &Stub) -> SdkConfig {
    aws_config::defaults(aws_config::BehaviorVersion::latest())
        .region(aws_sdk_bedrockruntime::config::Region::new("us-west-2"))
        .credentials_provider(aws_sdk_bedrockruntime::config::Credentials::new(
            ACCESS_KEY, SECRET_KEY, None, None, "stub",
        ))
        .endpoint_url(&stub.url)
        .load()
        .await
}

/// Short deadlines and backoff keep the suite fast.
fn policy(deadline_ms: u64) -> CallPolicy {
    CallPolicy::from_millis(deadline_ms).with_backoff(Duration::from_millis(10))
}

/// A secret cache on the stub, with a 2 s deadline.
async fn secret_cache(stub: &Stub, secret: &str) -> SecretCache {
    SecretCache::new(secrets::client(&sdk(stub).await), secret, policy(2_000))
}

async fn embedder(stub: &Stub, spec: &str, p: CallPolicy) -> BedrockEmbedder {
    BedrockEmbedder::new(bedrock::client(&sdk(stub).await), spec.parse().unwrap(), p)
}

async fn reranker(stub: &Stub, spec: &str, p: CallPolicy) -> BedrockReranker {
    BedrockReranker::new(bedrock::client(&sdk(stub).await), spec.parse().unwrap(), p)
}

fn texts(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

/// A unit vector of `dim` with a 1 at `hot`, sent scaled so that the
/// client's normalisation is visible.
fn one_hot(dim: usize, hot: usize) -> Vec<f32> {
    let mut v = vec![0.0; dim];
    v[hot] = 3.0;
    v
}

fn assert_no_leak(text: &str) {
    for secret in [SECRET_KEY, STUB_MESSAGE, "shard 7", DB_PASSWORD] {
        assert!(
            !text.contains(secret),
            "error text leaks {secret:?}: {text}"
        );
    }
}

fn assert_unit(v: &[f32]) {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    assert!((norm - 1.0).abs() < 1e-5, "norm {norm}");
}

// ------------------------------------------------------------------ tests

#[tokio::test]
async fn titan_v2_embeds_one_text_per_call_in_order_with_bounded_concurrency() {
    let stub = Stub::start(|req, _| {
        let text = req.body["inputText"].as_str().unwrap_or_default();
        let i: usize = text.trim_start_matches("text-").parse().unwrap();
        // Later texts answer sooner, so completion order differs from input order.
        Reply::json(json!({ "embedding": one_hot(256, i), "inputTextTokenCount": 2 }))
            .after(Duration::from_millis(60 - 5 * i as u64))
    })
    .await;
    let e = embedder(&stub, "bedrock:titan-v2:256", policy(2_000)).await;
    assert_eq!(e.dimension(), 256);
    assert_eq!(e.model_id(), "bedrock/amazon.titan-embed-text-v2:0@256");

    let input: Vec<String> = (0..10).map(|i| format!("text-{i}")).collect();
    let vectors = e.embed(&input, EmbedKind::Document).await.unwrap();

    assert_eq!(vectors.len(), 10);
    for (i, v) in vectors.iter().enumerate() {
        assert_eq!(v.len(), 256);
        assert_unit(v);
        assert_eq!(v[i], 1.0, "vector {i} is not the answer for text {i}");
    }
    let requests = stub.requests();
    assert_eq!(requests.len(), 10, "one invocation per text");
    let mut seen: Vec<String> = Vec::new();
    for r in &requests {
        assert_eq!(r.path, "/model/amazon.titan-embed-text-v2:0/invoke");
        assert_eq!(r.header("content-type"), Some("application/json"));
        let auth = r.header("authorization").unwrap_or_default();
        assert!(
            auth.starts_with("AWS4-HMAC-SHA256") && auth.contains(ACCESS_KEY),
            "{auth}"
        );
        assert!(auth.contains("/us-west-2/bedrock/aws4_request"), "{auth}");
        let text = r.body["inputText"].as_str().unwrap().to_string();
        assert_eq!(
            r.body,
            json!({ "inputText": text, "dimensions": 256, "normalize": true })
        );
        seen.push(text);
    }
    seen.sort();
    let mut expected = input.clone();
    expected.sort();
    assert_eq!(seen, expected);
    let peak = stub.max_in_flight.load(Ordering::SeqCst);
    assert!(
        (2..=MAX_IN_FLIGHT).contains(&peak),
        "{peak} calls were in flight at once"
    );
}

#[tokio::test]
async fn titan_v2_is_sent_a_long_text_cut_to_what_it_takes() {
    use mosaic::aws::bedrock::TITAN_V2_MAX_TOKENS;
    let stub = Stub::start(|_, _| Reply::json(json!({ "embedding": one_hot(256, 0) }))).await;
    let e = embedder(&stub, "bedrock:titan-v2:256", policy(2_000)).await;
    // An ASCII letter counts half a token, a digit or punctuation mark a
    // whole one, any other character a token
    // per UTF-8 byte, so a CJK description or a run of emoji is cut far
    // sooner than English, always on a character boundary.
    let ascii = "a".repeat(2 * TITAN_V2_MAX_TOKENS + 5_000);
    let accented = "é".repeat(TITAN_V2_MAX_TOKENS);
    let cjk = "耳机".repeat(6_000);
    let emoji = "🎧".repeat(TITAN_V2_MAX_TOKENS);
    let short = "a short text".to_string();
    let input = [
        ascii.clone(),
        accented.clone(),
        cjk.clone(),
        emoji.clone(),
        short.clone(),
    ];
    e.embed(&input, EmbedKind::Document).await.unwrap();
    let mut sent: Vec<String> = stub
        .requests()
        .iter()
        .map(|r| r.body["inputText"].as_str().unwrap().to_string())
        .collect();
    sent.sort();
    let prefix = |s: &str, chars: usize| s.chars().take(chars).collect::<String>();
    let mut expected = vec![
        prefix(&ascii, 2 * TITAN_V2_MAX_TOKENS),
        prefix(&accented, TITAN_V2_MAX_TOKENS / 2),
        prefix(&cjk, TITAN_V2_MAX_TOKENS / 3),
        prefix(&emoji, TITAN_V2_MAX_TOKENS / 4),
        short,
    ];
    expected.sort();
    assert_eq!(sent, expected);
    // The 12,000-character CJK text stays within the model's 8,192 tokens
    // even at one token a byte.
    let cjk_sent = sent.iter().find(|s| s.starts_with('耳')).unwrap();
    assert!(cjk_sent.len() <= 8_192, "{} bytes", cjk_sent.len());
}

#[tokio::test]
async fn cohere_v3_encodes_queries_and_documents_differently_and_batches_by_96() {
    let stub = Stub::start(|req, _| {
        let n = req.body["texts"].as_array().map_or(0, Vec::len);
        let vectors: Vec<Vec<f32>> = (0..n)
            .map(|i| {
                let mut v = vec![0.0; 1024];
                v[0] = 3.0;
                v[1] = 4.0 + i as f32;
                v
            })
            .collect();
        Reply::json(json!({
            "id": "stub",
            "response_type": "embeddings_floats",
            "embeddings": vectors,
            "texts": req.body["texts"],
        }))
    })
    .await;
    let e = embedder(&stub, "cohere-v3", policy(2_000)).await;
    assert_eq!(e.dimension(), 1024);

    let q = e
        .embed(&texts(&["red kettle"]), EmbedKind::Query)
        .await
        .unwrap();
    assert_eq!(q.len(), 1);
    assert_unit(&q[0]);
    assert!((q[0][0] - 0.6).abs() < 1e-6 && (q[0][1] - 0.8).abs() < 1e-6);

    let mut docs: Vec<String> = (0..100).map(|i| format!("product {i}")).collect();
    docs[5] = "é".repeat(3_000);
    let d = e.embed(&docs, EmbedKind::Document).await.unwrap();
    assert_eq!(d.len(), 100);
    // Position within each batch shows in the second component: order kept.
    assert!(d[1][1] > d[0][1] && d[97][1] > d[96][1] && d[96][1] < d[95][1]);

    let requests = stub.requests();
    assert_eq!(requests.len(), 3, "one query call, two document batches");
    assert!(requests
        .iter()
        .all(|r| r.path == "/model/cohere.embed-english-v3/invoke"));
    assert_eq!(
        requests[0].body,
        json!({ "texts": ["red kettle"], "input_type": "search_query", "truncate": "END" })
    );
    let mut batches: Vec<&Request> = requests[1..].iter().collect();
    batches.sort_by_key(|r| std::cmp::Reverse(r.body["texts"].as_array().unwrap().len()));
    assert_eq!(batches[0].body["texts"].as_array().unwrap().len(), 96);
    assert_eq!(batches[1].body["texts"].as_array().unwrap().len(), 4);
    for b in &batches {
        assert_eq!(b.body["input_type"], "search_document");
        assert_eq!(b.body["truncate"], "END");
    }
    let long = batches[0].body["texts"][5].as_str().unwrap();
    assert_eq!(
        long.chars().count(),
        2_048,
        "v3 texts are cut to 2,048 characters"
    );
}

#[tokio::test]
async fn cohere_v4_asks_for_float_embeddings_at_the_configured_dimension() {
    let stub = Stub::start(|req, _| {
        let n = req.body["texts"].as_array().map_or(0, Vec::len);
        let vectors: Vec<Vec<f32>> = (0..n).map(|i| one_hot(1024, i)).collect();
        Reply::json(json!({ "id": "stub", "embeddings": { "float": vectors } }))
    })
    .await;
    let e = embedder(&stub, "bedrock:cohere-v4:1024", policy(2_000)).await;
    let v = e
        .embed(&texts(&["a", "b"]), EmbedKind::Document)
        .await
        .unwrap();
    assert_eq!((v.len(), v[1][1]), (2, 1.0));
    let r = &stub.requests()[0];
    assert_eq!(r.path, "/model/cohere.embed-v4:0/invoke");
    assert_eq!(
        r.body,
        json!({
            "texts": ["a", "b"],
            "input_type": "search_document",
            "embedding_types": ["float"],
            "output_dimension": 1024,
            "truncate": "RIGHT",
        })
    );
}

#[tokio::test]
async fn cohere_rerank_scores_are_mapped_back_by_index() {
    let stub = Stub::start(|_, _| {
        // Sorted by score, as the model answers: positions are not indices.
        Reply::json(json!({
            "id": "stub",
            "results": [
                { "index": 2, "relevance_score": 0.91 },
                { "index": 0, "relevance_score": 0.52 },
                { "index": 3, "relevance_score": 0.20 },
                { "index": 1, "relevance_score": 0.07 },
            ],
        }))
    })
    .await;
    let r = reranker(&stub, "bedrock:cohere-rerank-3.5", policy(1_500)).await;
    assert_eq!(r.model_id(), "bedrock/cohere.rerank-v3-5:0");
    let docs = texts(&["kettle", "toaster", "red kettle", "mug"]);
    let mut scored = r.rerank_texts("red kettle", &docs).await.unwrap();

    let order = rerank::apply(docs.len(), docs.len(), &[], &scored).order;
    assert_eq!(order, vec![2, 0, 3, 1]);
    scored.sort_by_key(|&(i, _)| i);
    assert_eq!(scored, vec![(0, 0.52), (1, 0.07), (2, 0.91), (3, 0.20)]);

    let req = &stub.requests()[0];
    assert_eq!(req.path, "/model/cohere.rerank-v3-5:0/invoke");
    assert_eq!(
        req.body,
        json!({ "query": "red kettle", "documents": docs, "top_n": 4, "api_version": 2 })
    );
    assert_eq!(r.rerank_texts("q", &[]).await.unwrap(), vec![]);
    assert_eq!(stub.count(), 1, "an empty pool makes no call");
}

#[tokio::test]
async fn amazon_rerank_goes_through_invoke_model_with_query_and_documents() {
    let stub = Stub::start(|_, _| {
        Reply::json(json!({ "results": [
            { "index": 1, "relevance_score": 0.77 },
            { "index": 0, "relevance_score": 0.002 },
        ] }))
    })
    .await;
    let r = reranker(&stub, "amazon-rerank-1.0", policy(1_500)).await;
    let docs = texts(&[
        "Carson City is in Nevada.",
        "Washington, D.C. is the capital.",
    ]);
    let scored = r.rerank_texts("capital of the US", &docs).await.unwrap();
    assert_eq!(scored, vec![(1, 0.77), (0, 0.002)]);
    let req = &stub.requests()[0];
    assert_eq!(req.path, "/model/amazon.rerank-v1:0/invoke");
    assert_eq!(
        req.body,
        json!({ "query": "capital of the US", "documents": docs })
    );
}

#[tokio::test]
async fn a_model_slower_than_the_deadline_times_out_on_time() {
    let stub = Stub::start(|_, _| {
        Reply::json(json!({ "embedding": one_hot(1024, 0) })).after(Duration::from_secs(5))
    })
    .await;
    let deadline = Duration::from_millis(300);
    let e = embedder(&stub, "titan-v2", policy(300)).await;
    let t = Instant::now();
    let err = e
        .embed(&texts(&["slow"]), EmbedKind::Query)
        .await
        .unwrap_err();
    let took = t.elapsed();
    assert!(matches!(err, EmbedError::Timeout(300)), "{err}");
    assert!(
        took >= deadline - Duration::from_millis(20),
        "gave up early: {took:?}"
    );
    assert!(
        took < deadline + Duration::from_millis(150),
        "overran: {took:?}"
    );
    // The first attempt was cut at two thirds of the deadline and retried.
    assert_eq!(stub.count(), 2);

    let r = reranker(&stub, "cohere-rerank-3.5", policy(300)).await;
    let t = Instant::now();
    let err = r.rerank_texts("q", &texts(&["d"])).await.unwrap_err();
    assert!(t.elapsed() < deadline + Duration::from_millis(150));
    assert!(
        matches!(err, RerankError::Unavailable(ref m) if m.contains("timed out after 300 ms")),
        "{err}"
    );
}

#[tokio::test]
async fn server_errors_are_retried_twice_then_reported_without_the_service_message() {
    let stub = Stub::start(|_, _| Reply::error(500, "InternalServerException")).await;
    let e = embedder(&stub, "titan-v2:512", policy(2_000)).await;
    let err = e.embed(&texts(&["x"]), EmbedKind::Query).await.unwrap_err();
    assert_eq!(stub.count(), 3, "first attempt plus two retries");
    let text = err.to_string();
    assert!(matches!(err, EmbedError::Unavailable(_)), "{text}");
    assert!(
        text.contains("HTTP 500") && text.contains("3 attempts"),
        "{text}"
    );
    assert_no_leak(&text);
    assert_no_leak(&format!("{err:?}"));
}

#[tokio::test]
async fn throttling_is_retried_within_the_deadline_and_can_recover() {
    // Throttled twice, then served.
    let stub = Stub::start(|_, i| {
        if i < 2 {
            Reply::error(429, "ThrottlingException")
        } else {
            Reply::json(json!({ "results": [{ "index": 0, "relevance_score": 0.5 }] }))
        }
    })
    .await;
    let r = reranker(&stub, "cohere-rerank-3.5", policy(1_500)).await;
    assert_eq!(
        r.rerank_texts("q", &texts(&["d"])).await.unwrap(),
        vec![(0, 0.5)]
    );
    assert_eq!(stub.count(), 3);

    // Throttled for good: the bounded retries run out.
    let stub = Stub::start(|_, _| Reply::error(429, "ThrottlingException")).await;
    let r = reranker(&stub, "cohere-rerank-3.5", policy(1_500)).await;
    let t = Instant::now();
    let err = r.rerank_texts("q", &texts(&["d"])).await.unwrap_err();
    assert!(
        t.elapsed() < Duration::from_millis(500),
        "{:?}",
        t.elapsed()
    );
    assert_eq!(stub.count(), 3);
    let text = err.to_string();
    assert!(matches!(err, RerankError::Unavailable(_)), "{text}");
    assert!(text.contains("throttled after 3 attempts"), "{text}");
    assert_no_leak(&text);

    // No retries configured: one attempt only.
    let stub = Stub::start(|_, _| Reply::error(429, "ThrottlingException")).await;
    let e = embedder(&stub, "titan-v2", policy(1_500).with_max_retries(0)).await;
    assert!(e.embed(&texts(&["x"]), EmbedKind::Query).await.is_err());
    assert_eq!(stub.count(), 1);
}

#[tokio::test]
async fn client_errors_and_bad_answers_fail_at_once() {
    for (reply, expect) in [
        (
            Reply::error(400, "ValidationException"),
            "request rejected (HTTP 400)",
        ),
        (Reply::error(403, "AccessDeniedException"), "access denied"),
        (Reply::error(404, "ResourceNotFoundException"), "not found"),
        (
            Reply::json(json!({ "vectors": [] })),
            "unexpected response shape",
        ),
    ] {
        let (status, body, headers) = (reply.status, reply.body.clone(), reply.headers.clone());
        let stub = Stub::start(move |_, _| Reply {
            status,
            headers: headers.clone(),
            body: body.clone(),
            delay: Duration::ZERO,
        })
        .await;
        let e = embedder(&stub, "titan-v2", policy(2_000)).await;
        let err = e.embed(&texts(&["x"]), EmbedKind::Query).await.unwrap_err();
        assert_eq!(stub.count(), 1, "{expect}: not retried");
        let text = err.to_string();
        assert!(matches!(err, EmbedError::Failed(_)), "{text}");
        assert!(text.contains(expect), "{text}");
        assert_no_leak(&text);
    }

    // A vector of the wrong length is refused, not stored.
    let stub = Stub::start(|_, _| Reply::json(json!({ "embedding": one_hot(256, 0) }))).await;
    let e = embedder(&stub, "titan-v2:1024", policy(2_000)).await;
    let err = e.embed(&texts(&["x"]), EmbedKind::Query).await.unwrap_err();
    assert!(err.to_string().contains("256-dimensional"), "{err}");
}

#[tokio::test]
async fn dimension_check_fails_start_up_on_a_mismatch() {
    let stub = Stub::start(|_, _| Reply::json(json!({}))).await;
    let e = embedder(&stub, "bedrock:titan-v2:1024", policy(1_000)).await;
    assert!(e.check_dimension(1024).is_ok());
    let msg = e.check_dimension(384).unwrap_err();
    assert!(msg.contains("1024") && msg.contains("vector(384)"), "{msg}");
    assert_eq!(stub.count(), 0, "the check makes no call");
}

// --------------------------------------------------------------- secrets

fn secret_reply(req: &Request) -> Reply {
    let secret = json!({
        "engine": "postgres",
        "username": "mosaic_runtime",
        "password": DB_PASSWORD,
        "port": 5432,
    });
    let mut reply = Reply::json(json!({
        "ARN": req.body["SecretId"],
        "Name": "mosaic/db",
        "SecretString": secret.to_string(),
        "VersionId": "v1",
        "VersionStages": ["AWSCURRENT"],
        "CreatedDate": 1.7e9,
    }))
    .after(Duration::from_millis(30));
    reply
        .headers
        .push(("content-type", "application/x-amz-json-1.1".into()));
    reply
}

#[tokio::test]
async fn the_secret_is_fetched_once_per_container_and_again_after_invalidate() {
    let stub = Stub::start(|req, _| secret_reply(req)).await;
    let arn = "arn:aws:secretsmanager:us-west-2:123456789012:secret:mosaic/db-AbCdEf";
    let cache = Arc::new(secret_cache(&stub, arn).await);

    // Concurrent first callers share one fetch; later callers hit the cache.
    let calls: Vec<_> = (0..16)
        .map(|_| {
            let c = cache.clone();
            tokio::spawn(async move { c.get().await })
        })
        .collect();
    for call in calls {
        let s = call.await.unwrap().unwrap();
        assert_eq!(
            (s.username.as_str(), s.password()),
            ("mosaic_runtime", DB_PASSWORD)
        );
        assert_eq!((s.port, s.host.as_deref()), (Some(5432), None));
    }
    for _ in 0..10 {
        cache.get().await.unwrap();
    }
    assert_eq!(stub.count(), 1);

    let req = &stub.requests()[0];
    assert_eq!(req.path, "/");
    assert_eq!(
        req.header("x-amz-target"),
        Some("secretsmanager.GetSecretValue")
    );
    assert_eq!(req.body, json!({ "SecretId": arn }));

    cache.invalidate().await;
    cache.get().await.unwrap();
    cache.get().await.unwrap();
    assert_eq!(stub.count(), 2, "fetched again after invalidate, once");

    let shown = format!("{:?} {:?}", cache.get().await.unwrap(), cache);
    assert!(
        !shown.contains(DB_PASSWORD) && shown.contains("<redacted>"),
        "{shown}"
    );
}

#[tokio::test]
async fn secret_failures_are_bounded_and_say_nothing_secret() {
    // A missing secret (JSON 1.1: 400 with the type in `__type`): no retry.
    let stub = Stub::start(|_, _| Reply {
        status: 400,
        headers: Vec::new(),
        body: json!({ "__type": "ResourceNotFoundException", "message": STUB_MESSAGE }).to_string(),
        delay: Duration::ZERO,
    })
    .await;
    let cache = secret_cache(&stub, "mosaic/db").await;
    let err = cache.get().await.unwrap_err();
    assert_eq!(stub.count(), 1);
    assert!(
        matches!(err, SecretError::Invalid(ref m) if m.contains("not found")),
        "{err}"
    );
    assert_no_leak(&err.to_string());

    // A failing service: retried twice, then unavailable; nothing cached.
    let stub = Stub::start(|_, _| Reply::error(500, "InternalServiceError")).await;
    let cache = secret_cache(&stub, "mosaic/db").await;
    let err = cache.get().await.unwrap_err();
    assert_eq!(stub.count(), 3);
    assert!(matches!(err, SecretError::Unavailable(_)), "{err}");
    assert_no_leak(&err.to_string());
    assert!(cache.get().await.is_err());
    assert_eq!(stub.count(), 6, "a failure is not cached");

    // A secret that is not RDS format names the field, not the value.
    let stub = Stub::start(|_, _| {
        Reply::json(json!({ "SecretString": json!({ "password": DB_PASSWORD }).to_string() }))
    })
    .await;
    let cache = secret_cache(&stub, "mosaic/db").await;
    let err = cache.get().await.unwrap_err();
    assert!(err.to_string().contains("`username` is missing"), "{err}");
    assert_no_leak(&err.to_string());
}

// ------------------------------------------------------- the RDS connection

/// The local cluster's port (`make test` exports `MOSAIC_PG_PORT`).
fn local_pg_port() -> u16 {
    std::env::var("MOSAIC_PG_PORT")
        .ok()
        .and_then(|p| p.parse().ok())
        .unwrap_or(54329)
}

/// The local cluster's private test CA (`scripts/db.sh` creates it).
fn local_test_ca() -> String {
    std::env::var("MOSAIC_TEST_TLS_CA").unwrap_or_else(|_| {
        concat!(env!("CARGO_MANIFEST_DIR"), "/../.mosaic/pg/tls/ca.crt").to_string()
    })
}

/// A secret in the rotation format naming the local cluster as `localhost`
/// (the name its certificate carries); the n-th fetch gets `passwords[n]`
/// (the last one repeats).
fn local_secret(passwords: &'static [&'static str]) -> impl Fn(&Request, usize) -> Reply {
    move |req, index| {
        let secret = json!({
            "engine": "postgres",
            "username": "mosaic_runtime",
            "password": passwords[index.min(passwords.len() - 1)],
            "host": "localhost",
            "port": local_pg_port(),
            "dbname": "postgres",
        });
        let mut reply = Reply::json(json!({
            "ARN": req.body["SecretId"],
            "Name": "mosaic/db",
            "SecretString": secret.to_string(),
        }));
        reply
            .headers
            .push(("content-type", "application/x-amz-json-1.1".into()));
        reply
    }
}

fn rds_settings(vars: &[(&str, String)]) -> rds::RdsSettings {
    let map: std::collections::HashMap<String, String> = vars
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect();
    rds::RdsSettings::from_lookup(|k| map.get(k).cloned())
        .unwrap()
        .unwrap()
}

/// Connects with `settings` and returns why the connection failed.
async fn refused_connection(settings: &rds::RdsSettings, stub: &Stub) -> String {
    let connector = rds::connector(settings, &sdk(stub).await, policy(2_000))
        .await
        .unwrap();
    let ctx = Ctx::with_manager(connector.into_manager(), 1, RetrievalProfile::default()).unwrap();
    let e = ctx.pool.get().await.map(|_| ()).unwrap_err();
    pool_error_text(&e)
}

fn pool_error_text(e: &deadpool_postgres::PoolError) -> String {
    match e {
        deadpool_postgres::PoolError::Backend(pg) => mosaic::db::describe_connect_error(pg),
        other => other.to_string(),
    }
}

#[tokio::test]
async fn the_rds_connection_is_verified_tls_and_heals_a_rotated_password() {
    // First fetch: a password the database no longer accepts (rotated).
    let stub = Stub::start(local_secret(&["rotated-away", "mosaic_runtime"])).await;
    let settings = rds_settings(&[
        (
            "MOSAIC_DB_SECRET_ARN",
            "arn:aws:secretsmanager:us-west-2:1:secret:db".into(),
        ),
        ("MOSAIC_DB_CA_FILE", local_test_ca()),
    ]);
    let connector = rds::connector(&settings, &sdk(&stub).await, policy(2_000))
        .await
        .unwrap();
    assert_eq!(stub.count(), 1, "fetched once at start-up");

    let ctx = Ctx::with_manager(connector.into_manager(), 3, RetrievalProfile::default()).unwrap();
    let conn = ctx
        .pool
        .get()
        .await
        .unwrap_or_else(|e| panic!("{}", pool_error_text(&e)));
    let row = conn
        .query_one(
            "SELECT s.ssl, current_user::text, current_database()::text
             FROM pg_stat_ssl s WHERE s.pid = pg_backend_pid()",
            &[],
        )
        .await
        .unwrap();
    assert!(row.get::<_, bool>(0), "the session runs over TLS");
    assert_eq!(row.get::<_, String>(1), "mosaic_runtime");
    assert_eq!(row.get::<_, String>(2), "postgres");
    assert_eq!(stub.count(), 2, "refused login: fetched again, once");

    // A login that stays wrong is not fetched again on every attempt.
    let stuck = Stub::start(local_secret(&["wrong-1", "wrong-2", "wrong-3"])).await;
    let refused = rds::connector(&settings, &sdk(&stuck).await, policy(2_000))
        .await
        .unwrap();
    let refused =
        Ctx::with_manager(refused.into_manager(), 1, RetrievalProfile::default()).unwrap();
    for _ in 0..3 {
        assert!(refused.pool.get().await.is_err());
    }
    assert_eq!(
        stuck.count(),
        2,
        "start-up fetch plus one refresh per interval"
    );

    // More connections reuse the refreshed secret.
    let more = futures_util::future::join_all((0..2).map(|_| ctx.pool.get())).await;
    for c in more {
        c.unwrap().query_one("SELECT 1", &[]).await.unwrap();
    }
    assert_eq!(stub.count(), 2);
}

#[tokio::test]
async fn a_secrets_manager_outage_at_start_up_postpones_the_fetch_and_a_missing_secret_fails_it() {
    let settings = rds_settings(&[
        (
            "MOSAIC_DB_SECRET_ARN",
            "arn:aws:secretsmanager:us-west-2:1:secret:db".into(),
        ),
        ("MOSAIC_DB_CA_FILE", local_test_ca()),
    ]);
    // Unavailable for the start-up fetch and its retries, then back.
    let serve = local_secret(&["mosaic_runtime"]);
    let stub = Stub::start(move |req, index| match index {
        0..=2 => Reply::error(503, "ServiceUnavailable"),
        _ => serve(req, index),
    })
    .await;
    let connector = rds::connector(&settings, &sdk(&stub).await, policy(2_000))
        .await
        .expect("an outage does not fail the start-up");
    assert_eq!(stub.count(), 3, "the start-up fetch and its two retries");
    let ctx = Ctx::with_manager(connector.into_manager(), 1, RetrievalProfile::default()).unwrap();
    let conn = ctx
        .pool
        .get()
        .await
        .unwrap_or_else(|e| panic!("{}", pool_error_text(&e)));
    conn.query_one("SELECT 1", &[]).await.unwrap();

    // A secret that does not exist is the operator's to fix: the start-up
    // fails, saying so.
    let missing = Stub::start(|_, _| Reply {
        status: 400,
        headers: Vec::new(),
        body: json!({ "__type": "ResourceNotFoundException", "message": STUB_MESSAGE }).to_string(),
        delay: Duration::ZERO,
    })
    .await;
    let err = rds::connector(&settings, &sdk(&missing).await, policy(2_000))
        .await
        .err()
        .expect("a missing secret fails the start-up");
    assert!(err.contains("not found"), "{err}");
    assert_eq!(missing.count(), 1);
}

#[tokio::test]
async fn the_rds_connection_refuses_a_server_it_cannot_verify() {
    let stub = Stub::start(local_secret(&["mosaic_runtime"])).await;
    let arn = "arn:aws:secretsmanager:us-west-2:1:secret:db".to_string();

    // Production roots only: the local test CA is not among them.
    let settings = rds_settings(&[("MOSAIC_DB_SECRET_ARN", arn.clone())]);
    let text = refused_connection(&settings, &stub).await;
    assert!(text.to_lowercase().contains("certificate"), "{text}");
    assert!(
        !text.contains("mosaic_runtime"),
        "no credentials in errors: {text}"
    );
    assert_eq!(
        stub.count(),
        1,
        "a TLS failure is not a login failure: no refetch"
    );

    // The right CA but an address the certificate does not name.
    let settings = rds_settings(&[
        ("MOSAIC_DB_SECRET_ARN", arn),
        ("MOSAIC_DB_HOST", "127.0.0.1".into()),
        ("MOSAIC_DB_CA_FILE", local_test_ca()),
    ]);
    let text = refused_connection(&settings, &stub).await;
    assert!(text.to_lowercase().contains("certificate"), "{text}");
}
