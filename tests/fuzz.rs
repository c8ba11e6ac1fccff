//! A property-based fuzzer over the shared HTTP router (what `mosaic serve`
//! and the API Gateway functions run) and over the Lambda handler's
//! AgentCore Gateway path (tool calls with the gateway's client context and
//! a valid principal proof), in process, against a real database.
//!
//! It generates hostile requests and tool arguments: bodies with control and bidirectional
//! characters, escaped lone surrogates, huge, tiny and fractional numbers,
//! duplicate keys, deep nesting, wrong types, unknown fields and broken
//! JSON, on every route, with percent-encoded path ids (NUL, invalid UTF-8,
//! encoded slashes). Whatever arrives:
//!
//! - the status is 200, 400, 401, 404 or 413: bad input is never a 5xx;
//!   over AgentCore, the function error's code is one of those statuses'
//!   codes, never `unavailable` or `internal`;
//! - a refusal writes no receipt, and a served search writes exactly one.
//!
//! `PROPTEST_CASES` sets the number of requests per transport (default 256).

use mosaic::context::Principal;
use mosaic::http::{self, HttpRequest};
use mosaic::lambda::{Handler, Invocation, Operation, ProofKey, Reply, Settings, TOOL_SEPARATOR};
use mosaic::principal::{self, proof};
use mosaic::RetrievalProfile;
use mosaic_integration_tests::{ctx, TestDb};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use serde_json::{json, Value};

/// Characters a hostile string is made of.
fn hostile_char() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => "[a-z0-9 ]{1,6}",
        1 => Just("\\u0000".to_string()),
        1 => (0u32..0x20).prop_map(|c| format!("\\u{c:04x}")),
        1 => Just("\\u007f".to_string()),
        1 => Just("\u{85}".to_string()),
        1 => prop::sample::select(vec!["\u{202e}", "\u{2066}", "\u{200f}", "\u{61c}"]).prop_map(str::to_string),
        1 => Just("\\ud800".to_string()),
        1 => Just("\\udfff\\ud83d".to_string()),
        1 => Just("\\\"".to_string()),
        1 => Just("\\\\".to_string()),
        1 => Just("-".to_string()),
        1 => Just("' OR 1=1 --".to_string()),
        1 => Just("(a+)+$".to_string()),
        1 => Just("é漢🙂".to_string()),
    ]
}

/// A JSON string literal (escapes included, so it may be invalid JSON
/// such as a lone surrogate, which must then be `invalid_json`).
fn hostile_string() -> impl Strategy<Value = String> {
    prop::collection::vec(hostile_char(), 0..8).prop_map(|parts| format!("\"{}\"", parts.concat()))
}

fn hostile_number() -> impl Strategy<Value = String> {
    prop_oneof![
        (-3i64..60).prop_map(|n| n.to_string()),
        any::<i64>().prop_map(|n| n.to_string()),
        Just("1e400".to_string()),
        Just("-1e400".to_string()),
        Just("1e-400".to_string()),
        Just("123456789012345678901234567890".to_string()),
        Just("-0".to_string()),
        Just("10.5".to_string()),
        Just("2.0".to_string()),
        Just("4.999999999999999999".to_string()),
        Just("NaN".to_string()),
        Just("0x10".to_string()),
    ]
}

/// Any JSON-ish value text, nested a few levels.
fn hostile_value() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        3 => hostile_string(),
        2 => hostile_number(),
        1 => Just("true".to_string()),
        1 => Just("null".to_string()),
        1 => (1usize..3000).prop_map(|d| format!("{}{}", "[".repeat(d), "]".repeat(d))),
        1 => (1usize..300).prop_map(|d| format!("{}1{}", "{\"a\":".repeat(d), "}".repeat(d))),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(|v| format!("[{}]", v.join(","))),
            prop::collection::vec((field_name(), inner), 0..4).prop_map(|kv| {
                let parts: Vec<String> = kv.into_iter().map(|(k, v)| format!("{k}:{v}")).collect();
                format!("{{{}}}", parts.join(","))
            }),
        ]
    })
}

/// A key: mostly the contract's field names, so values reach validation.
fn field_name() -> impl Strategy<Value = String> {
    prop_oneof![
        6 => prop::sample::select(vec![
            "query", "limit", "authorized_limit", "include_diagnostics", "rerank", "session_id",
            "filters", "domain", "category_key", "brand", "availability", "in_stock_only",
            "min_price_cents", "max_price_cents", "min_rating", "attributes", "retrieval_scope_id",
            "product_id", "product_ids", "evidence_query",
        ])
        .prop_map(|k| format!("\"{k}\"")),
        1 => hostile_string(),
    ]
}

/// A request body: an object of contract fields with hostile values
/// (duplicate keys allowed), or something that is not an object at all.
fn hostile_body(valid_id: String, granted: Vec<String>) -> impl Strategy<Value = Vec<u8>> {
    let fields = prop::collection::vec(
        (
            field_name(),
            prop_oneof![
                4 => hostile_value(),
                1 => Just(format!("\"{valid_id}\"")),
                1 => Just(json!(granted).to_string()),
                1 => Just("\"wireless headphones\"".to_string()),
                1 => Just(json!({"attributes": {"c": "a\u{0}"}}).to_string()),
            ],
        ),
        0..6,
    )
    .prop_map(|kv| {
        let parts: Vec<String> = kv.into_iter().map(|(k, v)| format!("{k}:{v}")).collect();
        format!("{{{}}}", parts.join(",")).into_bytes()
    });
    prop_oneof![
        8 => fields,
        1 => hostile_value().prop_map(String::into_bytes),
        1 => prop::collection::vec(any::<u8>(), 0..64),
        1 => (60_000usize..70_000).prop_map(|n| format!("{{\"query\":\"{}\"}}", "a".repeat(n)).into_bytes()),
        1 => Just(b"{\"query\": \"kettle\"".to_vec()),
    ]
}

/// A body the route accepts, with up to two hostile fields added (a
/// repeated key overrides the valid one), so that requests also get past
/// validation and reach the database.
fn near_valid_body(
    route: usize,
    event: String,
    granted: Vec<String>,
) -> impl Strategy<Value = Vec<u8>> {
    let base = match route {
        0 | 1 => json!({"query": "wireless headphones", "limit": 5, "rerank": false}),
        2 => json!({"retrieval_scope_id": event, "evidence_query": "battery life"}),
        3 => json!({"product_ids": [granted[0], granted[1]]}),
        _ => json!({}),
    };
    let base = base.to_string();
    prop::collection::vec((field_name(), hostile_value()), 0..3)
        .prop_map(move |extra| with_fields(&base, extra))
}

/// The JSON object text `base` with raw `key:value` members appended (the
/// values as written: hostile ones need not be valid JSON).
fn with_fields(base: &str, extra: Vec<(String, String)>) -> Vec<u8> {
    let mut text = base.trim_end_matches('}').to_string();
    for (k, v) in extra {
        if !text.ends_with('{') {
            text.push(',');
        }
        text.push_str(&format!("{k}:{v}"));
    }
    text.push('}');
    text.into_bytes()
}

/// A path id: the real one, or hostile bytes percent-encoded.
fn hostile_id(real: String) -> impl Strategy<Value = String> {
    prop_oneof![
        2 => Just(real),
        2 => prop::collection::vec(any::<u8>(), 0..12)
            .prop_map(|b| b.iter().map(|x| format!("%{x:02X}")).collect::<String>()),
        1 => Just("%00".to_string()),
        1 => Just("%E2%80%AE".to_string()),
        1 => Just("a%2Fb".to_string()),
        1 => Just("%zz".to_string()),
        1 => "[A-Za-z0-9._~-]{0,70}",
    ]
}

#[derive(Debug, Clone)]
struct Request {
    method: &'static str,
    path: String,
    body: Vec<u8>,
}

fn hostile_request(event: String, granted: Vec<String>) -> impl Strategy<Value = Request> {
    (0usize..5).prop_flat_map(move |route| {
        let body = prop_oneof![
            hostile_body(event.clone(), granted.clone()),
            near_valid_body(route, event.clone(), granted.clone()),
        ];
        let pid = hostile_id(granted[0].clone());
        let eid = hostile_id(event.clone());
        (Just(route), body, pid, eid)
            .prop_map(|(route, body, pid, eid)| request(route, body, pid, eid))
    })
}

fn request(route: usize, body: Vec<u8>, pid: String, eid: String) -> Request {
    match route {
        0 | 1 => Request {
            method: "POST",
            path: "/api/search".into(),
            body,
        },
        2 => Request {
            method: "POST",
            path: format!("/api/products/{pid}/evidence"),
            body,
        },
        3 => Request {
            method: "POST",
            path: format!("/api/retrieval/events/{eid}/compare"),
            body,
        },
        _ => Request {
            method: "GET",
            path: format!("/api/retrieval/events/{eid}"),
            body: Vec::new(),
        },
    }
}

async fn events(c: &tokio_postgres::Client) -> i64 {
    c.query_one("SELECT count(*) FROM receipts.search_events", &[])
        .await
        .unwrap()
        .get(0)
}

#[test]
fn hostile_requests_are_never_a_5xx_and_refusals_write_no_receipt() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let (db, c, observer, event, granted) = rt.block_on(async {
        let db = TestDb::with_sample("fuzz_http").await;
        let c = ctx(&db, RetrievalProfile::default());
        let principal = Principal("local:fuzz".into());
        let body = json!({"query": "wireless headphones", "limit": 5, "rerank": false}).to_string();
        let resp = http::handle(
            &c,
            &principal,
            HttpRequest {
                method: "POST",
                path: "/api/search",
                query: "",
                body: body.as_bytes(),
                request_id: "fuzz",
            },
        )
        .await;
        assert_eq!(resp.status, 200);
        let v: Value = serde_json::from_slice(&resp.body).unwrap();
        let granted: Vec<String> = v["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["product_id"].as_str().unwrap().to_string())
            .collect();
        let observer = db.owner().await;
        (
            db,
            c,
            observer,
            v["search_event_id"].as_str().unwrap().to_string(),
            granted,
        )
    });
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(256);
    let mut runner = TestRunner::new(Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    });
    let principal = Principal("local:fuzz".into());
    let tally = std::sync::Mutex::new(std::collections::BTreeMap::<(String, u16), u32>::new());
    runner
        .run(&hostile_request(event, granted), |req| {
            let (status, body, before, after) = rt.block_on(async {
                let before = events(&observer).await;
                let resp = http::handle(
                    &c,
                    &principal,
                    HttpRequest {
                        method: req.method,
                        path: &req.path,
                        query: "",
                        body: &req.body,
                        request_id: "fuzz",
                    },
                )
                .await;
                let after = events(&observer).await;
                (resp.status, resp.body, before, after)
            });
            let route = req.path.split('/').nth(2).unwrap_or("").to_string();
            *tally.lock().unwrap().entry((route, status)).or_default() += 1;
            let text = String::from_utf8_lossy(&body);
            prop_assert!(
                [200, 400, 401, 404, 413].contains(&status),
                "{} {} -> {status} {text}",
                req.method,
                req.path
            );
            let searched = status == 200 && req.path == "/api/search";
            prop_assert_eq!(
                after - before,
                i64::from(searched),
                "{} {} -> {} {}",
                req.method,
                req.path,
                status,
                text
            );
            Ok(())
        })
        .unwrap();
    // The generator reaches past validation too: some requests are served.
    let tally = tally.into_inner().unwrap();
    eprintln!("status per route: {tally:?}");
    let served = |route: &str| tally.get(&(route.to_string(), 200)).copied().unwrap_or(0);
    if cases >= 256 {
        assert!(served("search") > 0, "no search was served: {tally:?}");
        assert!(
            served("retrieval") > 0,
            "no scoped call was served: {tally:?}"
        );
    }
    drop(c);
    drop(observer);
    drop(db);
}

// ------------------------------------------------------------- AgentCore

/// The key the handler and the test (playing the identity interceptor)
/// share.
const PROOF_KEY: &str = "mosaic-fuzz-tests-principal-proof-key-00001";
/// The gateway target prefix of the tool names.
const TARGET: &str = "mosaic-products";

/// The caller every AgentCore call names, with a valid proof.
fn agentcore_principal() -> Principal {
    Principal::jwt("https://issuer.example/fuzz", "fuzz-user").unwrap()
}

fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// The gateway's client context for `op`, with the interceptor's proof.
fn gateway_context(op: Operation) -> String {
    let principal = agentcore_principal();
    let tool = format!("{TARGET}{TOOL_SEPARATOR}{}", op.name());
    let proof = proof::Key::new(PROOF_KEY)
        .unwrap()
        .sign(&principal, &tool, unix_now() + 600);
    let mut headers = serde_json::Map::new();
    headers.insert(principal::HEADER.into(), principal.as_str().into());
    headers.insert(principal::PROOF_HEADER.into(), proof.into());
    json!({"custom": {
        "bedrockAgentCoreGatewayId": "mosaic-gateway-fuzz",
        "bedrockAgentCoreTargetId": "FUZZ0001",
        "bedrockAgentCoreMessageVersion": "1.0",
        "bedrockAgentCoreToolName": tool,
        "bedrockAgentCorePropagatedHeaders": headers,
    }})
    .to_string()
}

/// One container's handler per operation, as `mosaic::lambda::run` builds
/// them, on the test database.
fn handlers(db: &TestDb) -> Vec<Handler> {
    let url = db.runtime_url();
    let settings = Settings::from_lookup(|k| match k {
        "MOSAIC_DATABASE_URL" => Some(url.clone()),
        "MOSAIC_EMBEDDER" => Some("hashing".into()),
        "MOSAIC_PRINCIPAL_PROOF_KEY" => Some(PROOF_KEY.into()),
        _ => None,
    })
    .expect("settings");
    Operation::ALL
        .iter()
        .map(|&op| Handler {
            op,
            ctx: ctx(db, settings.profile.clone()),
            settings: settings.clone(),
            proof_key: ProofKey::ready(Some(proof::Key::new(PROOF_KEY).unwrap())),
        })
        .collect()
}

/// Answers one AgentCore invocation: `Ok(output)` or `Err((errorType,
/// envelope))` after checking the function error's shape.
async fn invoke(handler: &Handler, args: &[u8]) -> Result<Value, (String, Value)> {
    let inv = Invocation {
        request_id: "fuzz-agentcore".into(),
        deadline_ms: None,
        client_context: Some(gateway_context(handler.op)),
        event: args.to_vec().into(),
    };
    match handler.answer(&inv).await {
        Reply::Response(v) => Ok(v),
        Reply::Failure {
            error_type,
            error_message,
        } => {
            let envelope: Value = serde_json::from_str(&error_message).unwrap_or_else(|e| {
                panic!("errorMessage is not the envelope ({e}): {error_message}")
            });
            assert_eq!(envelope["error"]["code"], error_type.as_str(), "{envelope}");
            Err((error_type, envelope))
        }
    }
}

/// A flat argument object the operation accepts, with up to two hostile
/// fields added (a repeated key overrides the valid one).
fn near_valid_args(
    op: Operation,
    event: String,
    granted: Vec<String>,
) -> impl Strategy<Value = Vec<u8>> {
    let base = match op {
        Operation::SearchProducts => {
            json!({"query": "wireless headphones", "limit": 5, "rerank": false})
        }
        Operation::GetProductEvidence => json!({
            "retrieval_scope_id": event, "product_id": granted[0], "evidence_query": "battery life"
        }),
        Operation::CompareProducts => {
            json!({"retrieval_scope_id": event, "product_ids": [granted[0], granted[1]]})
        }
        Operation::ExplainRetrieval => json!({"retrieval_scope_id": event}),
    }
    .to_string();
    prop::collection::vec(
        (
            field_name(),
            prop_oneof![
                3 => hostile_value(),
                // Percent-encoded and otherwise hostile ids, as strings.
                1 => hostile_id(granted[0].clone()).prop_map(|id| json!(id).to_string()),
                1 => hostile_id(event.clone()).prop_map(|id| json!(id).to_string()),
            ],
        ),
        0..3,
    )
    .prop_map(move |extra| with_fields(&base, extra))
}

fn hostile_invocation(
    event: String,
    granted: Vec<String>,
) -> impl Strategy<Value = (usize, Vec<u8>)> {
    (0usize..4).prop_flat_map(move |i| {
        let op = Operation::ALL[i];
        let args = prop_oneof![
            hostile_body(event.clone(), granted.clone()),
            near_valid_args(op, event.clone(), granted.clone()),
        ];
        (Just(i), args)
    })
}

/// The codes an AgentCore call may answer with bad arguments: never
/// `unavailable` or `internal`.
const CLIENT_CODES: [&str; 6] = [
    "invalid_json",
    "invalid_argument",
    "unknown_field",
    "payload_too_large",
    "not_found",
    "unauthenticated",
];

#[test]
fn hostile_agentcore_tool_arguments_are_never_a_server_error_and_refusals_write_no_receipt() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let (db, handlers, observer, event, granted) = rt.block_on(async {
        let db = TestDb::with_sample("fuzz_agentcore").await;
        let handlers = handlers(&db);
        let args = json!({"query": "wireless headphones", "limit": 5, "rerank": false}).to_string();
        let out = invoke(&handlers[0], args.as_bytes())
            .await
            .unwrap_or_else(|e| panic!("the seed search failed: {e:?}"));
        let granted: Vec<String> = out["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["product_id"].as_str().unwrap().to_string())
            .collect();
        assert!(granted.len() >= 2, "{out}");
        let observer = db.owner().await;
        let event = out["search_event_id"].as_str().unwrap().to_string();
        (db, handlers, observer, event, granted)
    });
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(256);
    let mut runner = TestRunner::new(Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    });
    let tally = std::sync::Mutex::new(std::collections::BTreeMap::<(&str, String), u32>::new());
    runner
        .run(&hostile_invocation(event, granted), |(i, args)| {
            let handler = &handlers[i];
            let (out, before, after) = rt.block_on(async {
                let before = events(&observer).await;
                let out = invoke(handler, &args).await;
                let after = events(&observer).await;
                (out, before, after)
            });
            let tool = handler.op.name();
            let shown = String::from_utf8_lossy(&args[..args.len().min(300)]).into_owned();
            let code = match &out {
                Ok(_) => "ok".to_string(),
                Err((code, _)) => code.clone(),
            };
            *tally
                .lock()
                .unwrap()
                .entry((tool, code.clone()))
                .or_default() += 1;
            if let Err((code, envelope)) = &out {
                prop_assert!(
                    CLIENT_CODES.contains(&code.as_str()),
                    "{tool} {shown} -> {code} {envelope}"
                );
            }
            let searched = out.is_ok() && handler.op == Operation::SearchProducts;
            prop_assert_eq!(
                after - before,
                i64::from(searched),
                "{} {} -> {}",
                tool,
                shown,
                code
            );
            Ok(())
        })
        .unwrap();
    let tally = tally.into_inner().unwrap();
    eprintln!("code per tool: {tally:?}");
    if cases >= 256 {
        let served = |tool: &str| tally.get(&(tool, "ok".to_string())).copied().unwrap_or(0);
        assert!(
            served("search_products") > 0,
            "no search was served: {tally:?}"
        );
        let scoped: u32 = [
            "get_product_evidence",
            "compare_products",
            "explain_retrieval",
        ]
        .iter()
        .map(|t| served(t))
        .sum();
        assert!(scoped > 0, "no scoped call was served: {tally:?}");
    }
    drop(handlers);
    drop(observer);
    drop(db);
}
