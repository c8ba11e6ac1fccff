//! The JSON of every operation, pinned: each response is compared with the
//! recorded file under `tests/fixtures/golden/`, after the values that differ
//! between runs by design (event ids, timestamps, timings, the connection an
//! arm ran on) are replaced by
//! placeholders. Ids keep their identity: the same id is the same
//! placeholder wherever it appears. Floats compare to within a part in a
//! million (see `alike`); everything else exactly.
//!
//! A deliberate change of a response is recorded with
//! `MOSAIC_GOLDEN=record cargo test -p mosaic-integration-tests --test golden`
//! and reviewed in the diff of the fixture files.

use mosaic::search::{search_json, Shape};
use mosaic::{Principal, RetrievalProfile};
use mosaic_integration_tests::{ctx, http_call, TestDb};
use serde_json::{json, Map, Value};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

fn caller() -> Principal {
    Principal("local:golden".into())
}

/// Replaces what differs between runs; ids become `<id:N>` in order of
/// first appearance.
struct Normaliser {
    ids: HashMap<String, String>,
}

impl Normaliser {
    fn value(&mut self, v: &Value) -> Value {
        match v {
            Value::Object(m) => Value::Object(
                m.iter()
                    .map(|(k, v)| (k.clone(), self.field(k, v)))
                    .collect::<Map<_, _>>(),
            ),
            Value::Array(a) => Value::Array(a.iter().map(|x| self.value(x)).collect()),
            Value::String(s) if uuid::Uuid::parse_str(s).is_ok() => {
                let n = self.ids.len();
                let id = self.ids.entry(s.clone()).or_insert(format!("<id:{n}>"));
                Value::String(id.clone())
            }
            other => other.clone(),
        }
    }

    fn field(&mut self, key: &str, v: &Value) -> Value {
        match (key, v) {
            ("timings_ms", Value::Object(m)) => Value::Object(
                m.keys()
                    .map(|k| (k.clone(), json!("<ms>")))
                    .collect::<Map<_, _>>(),
            ),
            ("ms", Value::Number(_)) => json!("<ms>"),
            // Which connection an arm ran on depends on what the pool had idle.
            (
                "connection" | "walks_connection" | "family_connection" | "half_connection",
                Value::Number(_),
            ) => {
                json!("<connection>")
            }
            (k, Value::String(_)) if k.ends_with("_at") => json!("<time>"),
            _ => self.value(v),
        }
    }
}

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/golden")
        .join(format!("{name}.json"))
}

/// Compares (or, with `MOSAIC_GOLDEN=record`, records) every response.
fn check(responses: &[(&str, u16, Value)]) {
    let mut norm = Normaliser {
        ids: HashMap::new(),
    };
    let record = std::env::var("MOSAIC_GOLDEN").as_deref() == Ok("record");
    let mut differ = Vec::new();
    for (name, status, body) in responses {
        let got = json!({ "status": status, "body": norm.value(body) });
        let text = serde_json::to_string_pretty(&got).unwrap() + "\n";
        let path = fixture(name);
        if record {
            std::fs::write(&path, &text).unwrap();
            continue;
        }
        let want = std::fs::read_to_string(&path).unwrap_or_else(|e| {
            panic!("{}: {e} (record with MOSAIC_GOLDEN=record)", path.display())
        });
        let same = serde_json::from_str::<Value>(&want).is_ok_and(|w| alike(&w, &got));
        if !same {
            let out = path.with_extension("actual.json");
            std::fs::write(&out, &text).unwrap();
            differ.push(format!("{} (got: {})", path.display(), out.display()));
        }
    }
    assert!(
        differ.is_empty(),
        "responses changed:\n{}",
        differ.join("\n")
    );
}

/// The same JSON, floats equal to within a part in a million: pgvector is
/// built for the machine's CPU, and a cosine summed with other vector
/// instructions differs in its eighth digit.
fn alike(want: &Value, got: &Value) -> bool {
    match (want, got) {
        (Value::Object(w), Value::Object(g)) => {
            w.len() == g.len() && w.iter().all(|(k, v)| g.get(k).is_some_and(|x| alike(v, x)))
        }
        (Value::Array(w), Value::Array(g)) => {
            w.len() == g.len() && w.iter().zip(g).all(|(v, x)| alike(v, x))
        }
        (Value::Number(w), Value::Number(g)) if w.is_f64() || g.is_f64() => {
            match (w.as_f64(), g.as_f64()) {
                (Some(a), Some(b)) => (a - b).abs() <= 1e-6 * a.abs().max(1.0),
                _ => false,
            }
        }
        _ => want == got,
    }
}

#[test]
fn floats_differ_only_past_the_sixth_digit() {
    let want = json!({"id": "a", "score": 0.44725194887805375, "rank": 1, "tags": ["x"]});
    let with = |key: &str, v: Value| {
        let mut x = want.clone();
        x[key] = v;
        x
    };
    assert!(alike(&want, &with("score", json!(0.4472519222197658))));
    let changed = [
        with("score", json!(0.4473)),
        with("score", json!("0.44725194887805375")),
        with("id", json!("b")),
        with("rank", json!(2)),
        with("tags", json!([])),
        with("new", json!(1)),
    ];
    for got in changed {
        assert!(!alike(&want, &got), "{got}");
    }
}

fn product_ids(body: &Value) -> Vec<String> {
    body["results"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|r| r["product_id"].as_str().unwrap().to_string())
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test]
async fn every_operations_json_is_unchanged() {
    let db = TestDb::with_sample("golden").await;
    let c = ctx(&db, RetrievalProfile::default())
        .with_reranker(Arc::new(mosaic::rerank::local::LocalReranker::new()));
    let who = caller();
    let post = |path: &'static str, body: Value| {
        let c = &c;
        let who = &who;
        async move { http_call(c, who, "POST", path, body.to_string().as_bytes()).await }
    };

    let mut out: Vec<(&str, u16, Value)> = Vec::new();
    let searches = [
        (
            "search_descriptive",
            json!({"query": "wireless noise cancelling headphones", "limit": 5}),
        ),
        ("search_sku", json!({"query": "PX-EB000000", "limit": 3})),
        (
            "search_typo",
            json!({"query": "voltrx headphnes", "limit": 3, "authorized_limit": 2}),
        ),
        (
            "search_filtered_negated",
            json!({"query": "running shoes -trail", "limit": 4,
                   "filters": {"max_price_cents": 20000, "min_rating": 3.5}}),
        ),
        (
            "search_filters_only",
            json!({"filters": {"brand": "Aurel"}, "limit": 3}),
        ),
        (
            "search_diagnostics",
            json!({"query": "mesh wifi router", "limit": 3, "include_diagnostics": true}),
        ),
        (
            "search_diagnostics_filters_only",
            json!({"filters": {"category_key": "headphones"}, "limit": 2, "include_diagnostics": true}),
        ),
        (
            "search_diagnostics_no_rerank",
            json!({"query": "VXHP-1000S", "limit": 2, "rerank": false, "include_diagnostics": true}),
        ),
    ];
    for (name, body) in searches {
        let (status, resp) = post("/api/search", body).await;
        out.push((name, status, resp));
    }
    let (status, bad) = post(
        "/api/search",
        json!({"query": "headphones", "limit": "many"}),
    )
    .await;
    out.push(("search_bad_input", status, bad));

    let flat = search_json(
        &c,
        &who,
        &json!({"query": "bluetooth speaker", "limit": 3, "max_price_cents": 30000}),
        Shape::Flat,
    )
    .await
    .expect("flat search");
    out.push(("search_flat", 200, flat));

    let first = &out[0].2;
    let scope = first["search_event_id"]
        .as_str()
        .expect("event id")
        .to_string();
    let ids = product_ids(first);
    assert!(
        ids.len() >= 2,
        "the descriptive search serves at least two products"
    );

    let path = format!("/api/products/{}/evidence", ids[0]);
    let body = json!({"retrieval_scope_id": scope, "evidence_query": "battery life"});
    let (status, resp) = http_call(&c, &who, "POST", &path, body.to_string().as_bytes()).await;
    out.push(("evidence", status, resp));

    let path = format!("/api/retrieval/events/{scope}/compare");
    let body = json!({"product_ids": [ids[0], ids[1]]});
    let (status, resp) = http_call(&c, &who, "POST", &path, body.to_string().as_bytes()).await;
    out.push(("compare", status, resp));

    let path = format!("/api/retrieval/events/{scope}");
    let (status, resp) = http_call(&c, &who, "GET", &path, b"").await;
    out.push(("explain", status, resp));

    let stranger = Principal("local:stranger".into());
    let (status, resp) = http_call(&c, &stranger, "GET", &path, b"").await;
    out.push(("explain_other_principal", status, resp));

    check(&out);
}
