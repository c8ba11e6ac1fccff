//! Scoped-operation guarantees (evidence, comparison, explanation), against
//! the real PostgreSQL and the sample catalog, on the runtime role.

use mosaic::scope::{compare_products, explain_retrieval, get_product_evidence};
use mosaic::search::{search_json, Shape};
use mosaic::{Ctx, Error, Principal, RetrievalProfile};
use mosaic_integration_tests::{ctx, rerankers, served, TestDb};
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::sync::Arc;
use uuid::Uuid;

fn alice() -> Principal {
    Principal("alice".into())
}

fn bob() -> Principal {
    Principal("bob".into())
}

/// Runs a search as `who`; returns the nested-shape response.
async fn searched(c: &Ctx, who: &Principal, body: Value) -> Value {
    search_json(c, who, &body, Shape::Nested)
        .await
        .expect("search")
}

fn scope_of(r: &Value) -> String {
    r["search_event_id"].as_str().unwrap().to_string()
}

async fn evidence(
    c: &Ctx,
    who: &Principal,
    scope: &str,
    pid: &str,
    q: &str,
) -> Result<Value, Error> {
    get_product_evidence(
        c,
        who,
        &json!({"retrieval_scope_id": scope, "product_id": pid, "evidence_query": q}),
    )
    .await
}

async fn compare(c: &Ctx, who: &Principal, scope: &str, ids: &[&str]) -> Result<Value, Error> {
    compare_products(
        c,
        who,
        &json!({"retrieval_scope_id": scope, "product_ids": ids}),
    )
    .await
}

async fn explain(c: &Ctx, who: &Principal, scope: &str) -> Result<Value, Error> {
    explain_retrieval(c, who, &json!({"retrieval_scope_id": scope})).await
}

/// A refusal's status and its serialised body.
fn refusal(what: &str, r: Result<Value, Error>) -> (u16, String) {
    match r {
        Err(e @ Error::NotFound) => (e.status(), e.body().to_string()),
        other => panic!("{what}: expected the generic refusal, got {other:?}"),
    }
}

/// A 400 naming `field`, with the given code.
fn bad_input(what: &str, r: Result<Value, Error>, code: &str, field: &str) {
    let e = r.expect_err(what);
    assert_eq!(e.status(), 400, "{what}: {e:?}");
    assert_eq!(e.body()["error"]["code"], code, "{what}");
    assert_eq!(e.body()["error"]["field"], field, "{what}");
}

/// Product ids of the pool that were never served, from the explanation.
fn pool_only(explained: &Value) -> Vec<String> {
    explained["pool"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["served_rank"].is_null())
        .map(|c| c["product_id"].as_str().unwrap().to_string())
        .collect()
}

/// An event predating explicit authorization (authorized_limit NULL) that
/// nevertheless marks `products` granted: only the NULL may refuse it.
async fn legacy_event(db: &TestDb, principal: &str, products: &[&str]) -> String {
    let id = Uuid::new_v4();
    let mut owner = db.owner().await;
    // One transaction, as the service writes receipts: the candidates'
    // day (`event_created_at`) is the event's `created_at`.
    let owner = owner.transaction().await.unwrap();
    owner
        .execute(
            "INSERT INTO receipts.search_events (search_event_id, principal, query_text, normalized_query,
                 applied_filters, strategy, pool_size, result_limit, authorized_limit, served_count,
                 rerank_status, models, arms, timings_ms, warnings, profile)
             VALUES ($1, $2, 'legacy', 'legacy', '{}', 'hybrid', $3, 5, NULL, $3, 'skipped_by_request',
                     '{}', '{}', '{}', '[]', '{}')",
            &[&id, &principal, &(products.len() as i32)],
        )
        .await
        .unwrap();
    for (i, product) in products.iter().enumerate() {
        let rank = i as i32 + 1;
        owner
            .execute(
                "INSERT INTO receipts.search_candidates (search_event_id, product_id, pre_rerank_rank,
                     final_rank, served_rank, granted, match_reason, source_uri, source_revision)
                 VALUES ($1, $2, $3, $3, $3, true, 'lexical', 'https://legacy.example', 1)",
                &[&id, product, &rank],
            )
            .await
            .unwrap();
    }
    owner.commit().await.unwrap();
    id.to_string()
}

#[tokio::test]
async fn every_refusal_is_the_same_generic_not_found() {
    let db = TestDb::with_sample("scope_refusal").await;
    let c = ctx(&db, RetrievalProfile::default());
    let r = searched(
        &c,
        &alice(),
        json!({"query": "wireless headphones", "limit": 5, "authorized_limit": 2}),
    )
    .await;
    let scope = scope_of(&r);
    let ids = served(&r);
    let (g1, g2, not_granted) = (ids[0].as_str(), ids[1].as_str(), ids[2].as_str());
    let pool = pool_only(&explain(&c, &alice(), &scope).await.unwrap());
    let legacy = legacy_event(&db, "alice", &[g1, g2]).await;
    let unknown = Uuid::new_v4().to_string();
    let malformed = "not-a-uuid";
    // Sanity: the granted products are usable through this very scope.
    evidence(&c, &alice(), &scope, g1, "battery life")
        .await
        .unwrap();
    compare(&c, &alice(), &scope, &[g1, g2]).await.unwrap();

    let q = "how is the sound?";
    let refusals = vec![
        refusal(
            "evidence: unknown scope",
            evidence(&c, &alice(), &unknown, g1, q).await,
        ),
        refusal(
            "evidence: malformed scope",
            evidence(&c, &alice(), malformed, g1, q).await,
        ),
        refusal(
            "evidence: legacy event",
            evidence(&c, &alice(), &legacy, g1, q).await,
        ),
        refusal(
            "evidence: served, not granted",
            evidence(&c, &alice(), &scope, not_granted, q).await,
        ),
        refusal(
            "evidence: pool only",
            evidence(&c, &alice(), &scope, &pool[0], q).await,
        ),
        refusal(
            "evidence: no such product",
            evidence(&c, &alice(), &scope, "NOPE-404", q).await,
        ),
        refusal(
            "evidence: another principal",
            evidence(&c, &bob(), &scope, g1, q).await,
        ),
        refusal(
            "compare: unknown scope",
            compare(&c, &alice(), &unknown, &[g1, g2]).await,
        ),
        refusal(
            "compare: malformed scope",
            compare(&c, &alice(), malformed, &[g1, g2]).await,
        ),
        refusal(
            "compare: not granted",
            compare(&c, &alice(), &scope, &[g1, not_granted]).await,
        ),
        refusal(
            "compare: no such product",
            compare(&c, &alice(), &scope, &[g1, "NOPE-404"]).await,
        ),
        refusal(
            "compare: another principal",
            compare(&c, &bob(), &scope, &[g1, g2]).await,
        ),
        refusal(
            "explain: unknown scope",
            explain(&c, &alice(), &unknown).await,
        ),
        refusal(
            "explain: malformed scope",
            explain(&c, &alice(), malformed).await,
        ),
        refusal(
            "explain: legacy event",
            explain(&c, &alice(), &legacy).await,
        ),
        refusal(
            "explain: another principal",
            explain(&c, &bob(), &scope).await,
        ),
        refusal(
            "compare: legacy event",
            compare(&c, &alice(), &legacy, &[g1, g2]).await,
        ),
    ];
    let expected = (404, Error::NotFound.body().to_string());
    for (i, r) in refusals.iter().enumerate() {
        assert_eq!(r, &expected, "refusal #{i} differs");
    }
    assert!(!expected.1.contains("alice") && !expected.1.contains(g1));

    // A granted product the catalog no longer holds does not exist: the
    // same refusal from evidence and compare alike.
    db.owner()
        .await
        .execute("DELETE FROM catalog.products WHERE product_id = $1", &[&g2])
        .await
        .unwrap();
    let removed = [
        refusal(
            "evidence: granted, since removed",
            evidence(&c, &alice(), &scope, g2, q).await,
        ),
        refusal(
            "compare: granted, since removed",
            compare(&c, &alice(), &scope, &[g1, g2]).await,
        ),
    ];
    for r in &removed {
        assert_eq!(r, &expected);
    }
    evidence(&c, &alice(), &scope, g1, q).await.unwrap();
}

#[tokio::test]
async fn authorized_limit_grants_exactly_the_first_k_served_ranks() {
    let db = TestDb::with_sample("scope_grant").await;
    let c = ctx(&db, RetrievalProfile::default());
    let q = "what do owners say about it?";

    // k = 0: served, explained, but nothing granted.
    let r0 = searched(
        &c,
        &alice(),
        json!({"query": "stainless steel kettle", "limit": 5, "authorized_limit": 0}),
    )
    .await;
    let (s0, ids0) = (scope_of(&r0), served(&r0));
    for pid in &ids0 {
        refusal("k=0 evidence", evidence(&c, &alice(), &s0, pid, q).await);
    }
    refusal(
        "k=0 compare",
        compare(&c, &alice(), &s0, &[&ids0[0], &ids0[1]]).await,
    );
    let x0 = explain(&c, &alice(), &s0)
        .await
        .expect("k=0 is explainable");
    assert!(x0["pool"]
        .as_array()
        .unwrap()
        .iter()
        .all(|c| c["granted"] == false));

    // k = 3 of 5: ranks 1..3 granted, 4..5 served only, the rest pool only.
    let r = searched(
        &c,
        &alice(),
        json!({"query": "stainless steel kettle", "limit": 5, "authorized_limit": 3}),
    )
    .await;
    let (scope, ids) = (scope_of(&r), served(&r));
    assert_eq!(ids.len(), 5);
    for pid in &ids[..3] {
        let e = evidence(&c, &alice(), &scope, pid, q)
            .await
            .expect("granted");
        assert_eq!(e["product_id"], pid.as_str());
    }
    for pid in &ids[3..] {
        refusal(
            "served but not granted",
            evidence(&c, &alice(), &scope, pid, q).await,
        );
    }
    let explained = explain(&c, &alice(), &scope).await.unwrap();
    let pool = pool_only(&explained);
    assert!(!pool.is_empty());
    for pid in pool.iter().take(5) {
        refusal(
            "seen through explain",
            evidence(&c, &alice(), &scope, pid, q).await,
        );
        refusal(
            "seen through explain",
            compare(&c, &alice(), &scope, &[&ids[0], pid]).await,
        );
    }
    compare(&c, &alice(), &scope, &[&ids[0], &ids[1], &ids[2]])
        .await
        .expect("ranks 1..k compare");
    refusal(
        "rank k+1 compare",
        compare(&c, &alice(), &scope, &[&ids[2], &ids[3]]).await,
    );
    // Explaining granted nothing new.
    refusal(
        "after explain",
        evidence(&c, &alice(), &scope, &ids[3], q).await,
    );
}

#[tokio::test]
async fn compare_validates_its_ids_and_answers_deterministically() {
    let db = TestDb::with_sample("scope_compare").await;
    let c = ctx(&db, RetrievalProfile::default());
    let r = searched(
        &c,
        &alice(),
        json!({"query": "portable and lightweight", "limit": 20, "authorized_limit": 12}),
    )
    .await;
    let scope = scope_of(&r);
    let results = r["results"].as_array().unwrap();
    let key_set = |x: &Value| {
        x["attributes"]
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect::<BTreeSet<_>>()
    };
    // The first result, and the first granted one with other attribute keys.
    let a = &results[0];
    let b = results[..12]
        .iter()
        .find(|x| key_set(x) != key_set(a))
        .expect("two granted products with different attribute keys");
    let (pa, pb) = (
        a["product_id"].as_str().unwrap(),
        b["product_id"].as_str().unwrap(),
    );

    // Validation: 400 naming product_ids.
    let ids: Vec<&str> = results[..6]
        .iter()
        .map(|x| x["product_id"].as_str().unwrap())
        .collect();
    for (what, v) in [
        ("one id", json!([pa])),
        ("six ids", json!(ids)),
        ("duplicates", json!([pa, pa])),
        ("non-strings", json!([pa, 7])),
        ("not an array", json!(pa)),
        ("empty id", json!([pa, ""])),
    ] {
        let args = json!({"retrieval_scope_id": scope, "product_ids": v});
        bad_input(
            what,
            compare_products(&c, &alice(), &args).await,
            "invalid_argument",
            "product_ids",
        );
    }
    let args = json!({"retrieval_scope_id": scope, "product_ids": [pa, pb], "fields": ["x"]});
    bad_input(
        "unknown field",
        compare_products(&c, &alice(), &args).await,
        "unknown_field",
        "fields",
    );
    // A non-granted id among granted ones: refused, without saying which.
    let not_granted = results[15]["product_id"].as_str().unwrap();
    refusal(
        "not granted",
        compare(&c, &alice(), &scope, &[pa, pb, not_granted]).await,
    );
    compare(&c, &alice(), &scope, &ids[..5])
        .await
        .expect("five granted ids");

    // Requested in reverse: answered in served order, identically every time.
    let out = compare(&c, &alice(), &scope, &[pb, pa]).await.unwrap();
    assert_eq!(out, compare(&c, &alice(), &scope, &[pb, pa]).await.unwrap());
    assert_eq!(out, compare(&c, &alice(), &scope, &[pa, pb]).await.unwrap());
    assert_eq!(out["retrieval_scope_id"], scope.as_str());
    let products = out["products"].as_array().unwrap();
    let order: Vec<&str> = products
        .iter()
        .map(|p| p["product_id"].as_str().unwrap())
        .collect();
    assert_eq!(order, vec![pa, pb]);
    for (p, served) in products.iter().zip([a, b]) {
        for f in [
            "title",
            "brand",
            "price_cents",
            "currency",
            "availability",
            "category_key",
            "domain",
        ] {
            assert_eq!(p[f], served[f], "{f}");
        }
        // The same star rating (search serialises the f32's widened value).
        let stars = |v: &Value| v.as_f64().map(|x| (x * 100.0).round());
        assert_eq!(stars(&p["rating"]), stars(&served["rating"]));
        assert_eq!(p["source"], served["source"]);
        assert_eq!(p["receipt"]["served_rank"], served["rank"]);
        assert_eq!(
            p["receipt"]["pre_rerank_rank"],
            served["signals"]["pre_rerank_rank"]
        );
        assert_eq!(
            p["receipt"]["signals"]["rrf_score"],
            served["signals"]["rrf_score"]
        );
        assert_eq!(
            p["receipt"]["signals"]["lexical"],
            served["signals"]["lexical"]
        );
    }

    // The matrix: the sorted union of keys, a value or an explicit null each.
    let union: BTreeSet<String> = key_set(a).union(&key_set(b)).cloned().collect();
    let keys: Vec<String> = serde_json::from_value(out["attributes"]["keys"].clone()).unwrap();
    assert_eq!(keys, union.iter().cloned().collect::<Vec<_>>());
    let rows = out["attributes"]["rows"].as_array().unwrap();
    assert_eq!(rows.len(), keys.len());
    let mut nulls = 0;
    for (row, key) in rows.iter().zip(&keys) {
        assert_eq!(row["key"], key.as_str());
        let values = row["values"].as_object().unwrap();
        assert_eq!(values.len(), 2);
        for (pid, served) in [(pa, a), (pb, b)] {
            let v = &values[pid];
            assert_eq!(
                v,
                served["attributes"].get(key).unwrap_or(&Value::Null),
                "{key}/{pid}"
            );
            nulls += usize::from(v.is_null());
        }
        assert_eq!(row["differs"], values[pa] != values[pb], "{key}");
    }
    assert!(nulls > 0, "different key sets leave explicit nulls");
}

/// A product with a review that mentions comfort and one that does not.
async fn product_with_comfort_review(db: &TestDb) -> (String, String) {
    let row = db
        .owner()
        .await
        .query_one(
            "SELECT p.product_id, p.sku FROM catalog.products p
             WHERE EXISTS (SELECT 1 FROM catalog.evidence e WHERE e.product_id = p.product_id
                           AND e.kind = 'review' AND e.body ILIKE '%comfort%')
               AND EXISTS (SELECT 1 FROM catalog.evidence e WHERE e.product_id = p.product_id
                           AND e.kind = 'review' AND e.body NOT ILIKE '%comfort%')
             ORDER BY p.product_id LIMIT 1",
            &[],
        )
        .await
        .unwrap();
    (row.get(0), row.get(1))
}

#[tokio::test]
async fn evidence_answers_spec_and_review_questions_with_sources() {
    let db = TestDb::with_sample("scope_evidence").await;
    let c = ctx(&db, RetrievalProfile::default());
    let (pid, sku) = product_with_comfort_review(&db).await;
    let r = searched(&c, &alice(), json!({"query": sku, "limit": 3})).await;
    assert_eq!(served(&r)[0], pid, "the SKU is pinned first");
    let scope = scope_of(&r);

    let spec = evidence(
        &c,
        &alice(),
        &scope,
        &pid,
        "what are the specs and dimensions?",
    )
    .await
    .unwrap();
    assert_eq!(spec["intent"], "specification");
    let records = spec["evidence"].as_array().unwrap();
    assert!(records.len() >= 3, "a specification and reviews: {spec}");
    assert_eq!(records[0]["kind"], "specification", "{spec}");
    assert_eq!(records[0]["evidence_id"], format!("{pid}-spec"));
    assert!(records[0]["rating"].is_null());

    // Conversational: a strict AND of owner & say & comfort matches nothing;
    // the OR back-off still finds the review that talks about comfort.
    let rev = evidence(
        &c,
        &alice(),
        &scope,
        &pid,
        "what do owners say about comfort?",
    )
    .await
    .unwrap();
    assert_eq!(rev["intent"], "review");
    let records = rev["evidence"].as_array().unwrap();
    let top = &records[0];
    assert_eq!(top["kind"], "review", "{rev}");
    assert!(
        top["text"]
            .as_str()
            .unwrap()
            .to_lowercase()
            .contains("comfort"),
        "{top}"
    );
    assert!(
        top["snippet"].as_str().unwrap().contains("**comfort**"),
        "{top}"
    );
    assert!(top["rating"].is_number());
    let scores: Vec<f64> = records
        .iter()
        .map(|x| x["score"].as_f64().unwrap())
        .collect();
    assert!(
        scores.windows(2).all(|w| w[0] >= w[1]),
        "ranked: {scores:?}"
    );

    for out in [&spec, &rev] {
        assert_eq!(out["product_id"], pid.as_str());
        for rec in out["evidence"].as_array().unwrap() {
            assert!(
                rec["source_uri"]
                    .as_str()
                    .is_some_and(|u| u.starts_with("https://")),
                "{rec}"
            );
            assert!(
                rec["source_revision"]
                    .as_str()
                    .is_some_and(|v| v.parse::<i64>().is_ok_and(|n| n >= 1)),
                "{rec}"
            );
            assert!(
                rec["updated_at"].is_string() && rec["title"].is_string(),
                "{rec}"
            );
        }
    }

    // limit bounds the records; default 5, at most 20.
    let one = get_product_evidence(
        &c,
        &alice(),
        &json!({"retrieval_scope_id": scope, "product_id": pid, "evidence_query": "comfort", "limit": 1}),
    )
    .await
    .unwrap();
    assert_eq!(one["evidence"].as_array().unwrap().len(), 1);

    // Validation: a 400 naming the field, before anything runs.
    let base = json!({"retrieval_scope_id": scope, "product_id": pid, "evidence_query": "comfort"});
    let with = |k: &str, v: Value| {
        let mut a = base.clone();
        a[k] = v;
        a
    };
    for (what, args, code, field) in [
        (
            "unknown field",
            with("kind", json!("review")),
            "unknown_field",
            "kind",
        ),
        (
            "empty question",
            with("evidence_query", json!("   ")),
            "invalid_argument",
            "evidence_query",
        ),
        (
            "a question of invisible characters only",
            with("evidence_query", json!("\u{200B} \u{200B}")),
            "invalid_argument",
            "evidence_query",
        ),
        (
            "long question",
            with("evidence_query", json!("a".repeat(1001))),
            "invalid_argument",
            "evidence_query",
        ),
        (
            "numeric question",
            with("evidence_query", json!(7)),
            "invalid_argument",
            "evidence_query",
        ),
        (
            "limit 0",
            with("limit", json!(0)),
            "invalid_argument",
            "limit",
        ),
        (
            "limit 21",
            with("limit", json!(21)),
            "invalid_argument",
            "limit",
        ),
        (
            "long product id",
            with("product_id", json!("P".repeat(65))),
            "invalid_argument",
            "product_id",
        ),
        (
            "numeric product id",
            with("product_id", json!(12)),
            "invalid_argument",
            "product_id",
        ),
        (
            "numeric scope",
            with("retrieval_scope_id", json!(12)),
            "invalid_argument",
            "retrieval_scope_id",
        ),
    ] {
        bad_input(
            what,
            get_product_evidence(&c, &alice(), &args).await,
            code,
            field,
        );
    }
    get_product_evidence(
        &c,
        &alice(),
        &with("evidence_query", json!("a".repeat(1000))),
    )
    .await
    .expect("1,000 characters are accepted");

    // Granted but without evidence: an empty answer, not a refusal.
    db.owner()
        .await
        .execute(
            "DELETE FROM catalog.evidence WHERE product_id = $1",
            &[&pid],
        )
        .await
        .unwrap();
    let empty = evidence(&c, &alice(), &scope, &pid, "comfort")
        .await
        .unwrap();
    assert_eq!(empty["evidence"], json!([]));
}

#[tokio::test]
async fn a_scoped_read_sees_one_snapshot() {
    // Explain reads an event, then its pool: both statements must see the
    // same receipts, whatever a purge does between them.
    let db = TestDb::with_sample("scope_snapshot").await;
    let mut c = db.runtime().await;
    let tx = mosaic::db::bounded_transaction(&mut c, 1_000, true)
        .await
        .unwrap();
    let setting = async |name: &str| -> String {
        tx.query_one("SELECT current_setting($1)", &[&name])
            .await
            .unwrap()
            .get(0)
    };
    assert_eq!(setting("transaction_isolation").await, "repeatable read");
    assert_eq!(setting("transaction_read_only").await, "on");
    assert_eq!(setting("statement_timeout").await, "1s");
    tx.commit().await.unwrap();
}

#[tokio::test]
async fn another_principal_cannot_use_the_scope() {
    let db = TestDb::with_sample("scope_principal").await;
    let c = ctx(&db, RetrievalProfile::default());
    let r = searched(
        &c,
        &alice(),
        json!({"query": "ergonomic office chair", "limit": 4}),
    )
    .await;
    let (scope, ids) = (scope_of(&r), served(&r));
    let q = "is it comfortable?";
    evidence(&c, &alice(), &scope, &ids[0], q).await.unwrap();
    compare(&c, &alice(), &scope, &[&ids[0], &ids[1]])
        .await
        .unwrap();
    explain(&c, &alice(), &scope).await.unwrap();
    refusal(
        "bob evidence",
        evidence(&c, &bob(), &scope, &ids[0], q).await,
    );
    refusal(
        "bob compare",
        compare(&c, &bob(), &scope, &[&ids[0], &ids[1]]).await,
    );
    refusal("bob explain", explain(&c, &bob(), &scope).await);
    refusal(
        "anonymous explain",
        explain(&c, &Principal::anonymous(), &scope).await,
    );
}

#[tokio::test]
async fn explain_returns_the_whole_pool_in_both_rank_spaces() {
    let db = TestDb::with_sample("scope_explain").await;
    let c = ctx(&db, RetrievalProfile::default()).with_reranker(Arc::new(rerankers::Reverse));
    let r = searched(
        &c,
        &alice(),
        json!({"query": "lightweight tent for backpacking", "limit": 5, "authorized_limit": 3,
               "session_id": "sess-7"}),
    )
    .await;
    let scope = scope_of(&r);
    let x = explain(&c, &alice(), &scope).await.unwrap();

    assert_eq!(x["search_event_id"], scope.as_str());
    assert_eq!(x["retrieval_scope_id"], scope.as_str());
    assert_eq!(x["query_text"], "lightweight tent for backpacking");
    assert_eq!(x["normalized_query"], r["normalized_query"]);
    assert_eq!(x["strategy"], r["strategy"]);
    assert_eq!(
        (x["limit"].as_i64(), x["authorized_limit"].as_i64()),
        (Some(5), Some(3))
    );
    assert_eq!(x["session_id"], "sess-7");
    assert_eq!(x["rerank_status"], "reranked");
    assert_eq!(x["models"]["reranker"], "test/reverse");
    assert_eq!(x["served_count"], 5);
    assert!(x["created_at"].is_string());
    assert!(x["arms"]["lexical"].is_object() && x["arms"]["semantic"].is_object());
    assert!(x["profile"]["rrf_k"].is_number());
    assert!(x["timings_ms"]["total_before_receipt"].is_number());
    assert!(x["warnings"].is_array() && x["applied_filters"].is_object());
    assert!(x["note"].as_str().unwrap().contains("not comparable"));

    // Every pool member, in pool order.
    let pool = x["pool"].as_array().unwrap();
    assert_eq!(pool.len() as i64, x["pool_size"].as_i64().unwrap());
    assert_eq!(pool.len(), c.profile.pool_size);
    let pre: Vec<i64> = pool
        .iter()
        .map(|m| m["pre_rerank_rank"].as_i64().unwrap())
        .collect();
    assert_eq!(pre, (1..=pool.len() as i64).collect::<Vec<_>>());

    // Served ranks 1..limit, in the order the caller saw them.
    let mut window: Vec<(i64, &str)> = pool
        .iter()
        .filter_map(|m| Some((m["served_rank"].as_i64()?, m["product_id"].as_str()?)))
        .collect();
    window.sort();
    assert_eq!(
        window.iter().map(|w| w.0).collect::<Vec<_>>(),
        vec![1, 2, 3, 4, 5]
    );
    assert_eq!(
        window.iter().map(|w| w.1.to_string()).collect::<Vec<_>>(),
        served(&r)
    );
    // The reranker reordered: the two rank spaces disagree for served members.
    assert!(pool
        .iter()
        .any(|m| m["served_rank"].as_i64().is_some() && m["served_rank"] != m["pre_rerank_rank"]));

    // Pool-only candidates: served_rank null, never granted.
    assert_eq!(pool_only(&x).len(), pool.len() - 5);
    for m in pool {
        let served = m["served_rank"].as_i64();
        assert_eq!(m["granted"], served.is_some_and(|s| s <= 3), "{m}");
        assert!(m["final_rank"].as_i64().unwrap() >= 1);
        assert!(m["match_reason"].is_string() && m["exact_match"].is_boolean());
        assert!(m["source"]["uri"].is_string() && m["source"]["revision"].is_number());
        let signals = &m["signals"];
        assert!(signals["rrf_score"].is_number(), "{m}");
        for arm in ["lexical", "trigram", "semantic"] {
            assert!(
                signals[arm].is_null() || signals[arm]["rank"].is_number(),
                "{m}"
            );
        }
    }
    // Identical on a second read: the receipt is immutable.
    assert_eq!(x, explain(&c, &alice(), &scope).await.unwrap());
}

#[tokio::test]
async fn a_database_failure_is_unavailable_not_a_refusal() {
    let c = Ctx::from_url(
        "postgres://mosaic_runtime:mosaic_runtime@127.0.0.1:1/none",
        1,
        RetrievalProfile::default(),
    )
    .unwrap();
    let scope = Uuid::new_v4().to_string();
    for r in [
        evidence(&c, &alice(), &scope, "P0000001", "battery").await,
        compare(&c, &alice(), &scope, &["P0000001", "P0000002"]).await,
        explain(&c, &alice(), &scope).await,
    ] {
        let e = r.expect_err("no database");
        assert!(matches!(e, Error::Unavailable(_)), "{e:?}");
        assert_eq!(e.status(), 503);
    }
}
