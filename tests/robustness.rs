//! Robustness guarantees, through the shared HTTP router (what `mosaic serve`
//! and the API Gateway functions run):
//!
//! - no bad input becomes a 5xx: control characters anywhere (path ids
//!   included) and too many negated words are 400s that name the field and
//!   write nothing;
//! - every statement is bounded: with a table locked under an operation, the
//!   answer is 503 within the budget, no statement is left running on the
//!   server, and the next request is served at once;
//! - receipts are kept for a set time: a purge drops the expired days, and a
//!   scoped call on a purged event gets the generic 404.

use mosaic::context::Principal;
use mosaic::{Ctx, RetrievalProfile};
use mosaic_integration_tests::locks::{bounded_profiles, locked_then_served};
use mosaic_integration_tests::{ctx, http_call, TestDb};
use serde_json::{json, Value};
use tokio_postgres::Client;

fn alice() -> Principal {
    Principal("local:alice".into())
}

async fn call(ctx: &Ctx, method: &str, path: &str, body: &[u8]) -> (u16, Value) {
    http_call(ctx, &alice(), method, path, body).await
}

async fn post(ctx: &Ctx, path: &str, body: &Value) -> (u16, Value) {
    call(ctx, "POST", path, body.to_string().as_bytes()).await
}

async fn events(c: &Client) -> i64 {
    c.query_one("SELECT count(*) FROM receipts.search_events", &[])
        .await
        .unwrap()
        .get(0)
}

/// A search with granted results: (event id, granted product ids).
async fn searched(ctx: &Ctx) -> (String, Vec<String>) {
    let (status, body) = post(
        ctx,
        "/api/search",
        &json!({"query": "wireless headphones", "limit": 5, "rerank": false}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let id = body["search_event_id"].as_str().unwrap().to_string();
    let granted = body["results"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["granted"] == true)
        .map(|r| r["product_id"].as_str().unwrap().to_string())
        .collect::<Vec<_>>();
    assert!(granted.len() >= 2, "{body}");
    (id, granted)
}

fn assert_invalid(status: u16, body: &Value, field: &str, what: &str) {
    assert_eq!(status, 400, "{what}: {body}");
    assert_eq!(body["error"]["code"], "invalid_argument", "{what}: {body}");
    assert_eq!(body["error"]["field"], field, "{what}: {body}");
}

#[tokio::test]
async fn control_characters_in_any_string_are_400s_that_name_the_field_and_write_nothing() {
    let db = TestDb::with_sample("robust_ctrl").await;
    let c = ctx(&db, RetrievalProfile::default());
    let observer = db.owner().await;
    let (event, granted) = searched(&c).await;
    let before = events(&observer).await;

    // The two inputs that used to reach PostgreSQL and come back as 503.
    let (s, b) = post(
        &c,
        "/api/search",
        &json!({"query": "kettle", "filters": {"attributes": {"c": "a\u{0}"}}}),
    )
    .await;
    assert_invalid(s, &b, "filters.attributes.c", "NUL attribute value");
    let (s, b) = post(
        &c,
        "/api/products/%00/evidence",
        &json!({"retrieval_scope_id": event, "evidence_query": "battery life"}),
    )
    .await;
    assert_invalid(s, &b, "product_id", "NUL product id in the path");

    let search_cases = [
        (json!({"query": "kettle\u{0}"}), "query"),
        (json!({"query": "kettle\u{7}"}), "query"),
        (
            json!({"query": "kettle", "session_id": "s\u{0}1"}),
            "session_id",
        ),
        (
            json!({"query": "kettle", "session_id": "s\n1"}),
            "session_id",
        ),
        (
            json!({"query": "kettle", "session_id": "s\u{202e}1"}),
            "session_id",
        ),
        (
            json!({"query": "kettle", "filters": {"attributes": {"c\u{0}": "a"}}}),
            "filters.attributes",
        ),
        (
            json!({"query": "kettle", "filters": {"brand": "Acme\u{0}"}}),
            "filters.brand",
        ),
        (
            json!({"query": "kettle", "filters": {"domain": "home\u{1b}"}}),
            "filters.domain",
        ),
        (
            json!({"query": "kettle", "filters": {"category_key": "k\u{85}"}}),
            "filters.category_key",
        ),
        (
            json!({"query": "kettle", "filters": {"availability": ["in_stock\u{0}"]}}),
            "filters.availability",
        ),
    ];
    for (body, field) in &search_cases {
        let (s, b) = post(&c, "/api/search", body).await;
        assert_invalid(s, &b, field, &body.to_string());
    }

    let pid = &granted[0];
    let evidence = format!("/api/products/{pid}/evidence");
    let compare = format!("/api/retrieval/events/{event}/compare");
    let scoped_cases = [
        (
            evidence.clone(),
            json!({"retrieval_scope_id": event, "evidence_query": "battery\u{0} life"}),
            "evidence_query",
        ),
        (
            evidence.clone(),
            json!({"retrieval_scope_id": format!("{event}\u{0}"), "evidence_query": "battery"}),
            "retrieval_scope_id",
        ),
        (
            "/api/products/P%0A1/evidence".to_string(),
            json!({"retrieval_scope_id": event, "evidence_query": "battery"}),
            "product_id",
        ),
        (
            compare.clone(),
            json!({"product_ids": [granted[0], format!("{}\u{0}", granted[1])]}),
            "product_ids",
        ),
        (
            "/api/retrieval/events/%00/compare".to_string(),
            json!({"product_ids": [granted[0], granted[1]]}),
            "retrieval_scope_id",
        ),
    ];
    for (path, body, field) in &scoped_cases {
        let (s, b) = post(&c, path, body).await;
        assert_invalid(s, &b, field, &format!("{path} {body}"));
    }
    let (s, b) = call(&c, "GET", &format!("/api/retrieval/events/{event}%00"), b"").await;
    assert_invalid(s, &b, "retrieval_scope_id", "NUL in the explained id");

    // Tabs and line breaks in free text are whitespace, not refusals.
    let (s, b) = post(
        &c,
        "/api/search",
        &json!({"query": "wireless\theadphones\n"}),
    )
    .await;
    assert_eq!(s, 200, "{b}");
    assert_eq!(
        events(&observer).await,
        before + 1,
        "a refused request wrote a receipt"
    );
}

#[tokio::test]
async fn a_query_with_more_negated_words_than_the_profile_allows_is_a_400() {
    let db = TestDb::with_sample("robust_neg").await;
    let c = ctx(&db, RetrievalProfile::default());
    let observer = db.owner().await;
    let before = events(&observer).await;
    let many: Vec<String> = (0..300).map(|i| format!("-w{i}")).collect();
    let (s, b) = post(
        &c,
        "/api/search",
        &json!({"query": format!("headphones {}", many.join(" "))}),
    )
    .await;
    assert_invalid(s, &b, "query", "300 negated words");
    let limit = RetrievalProfile::default().max_negated_terms;
    let over: Vec<String> = (0..=limit).map(|i| format!("-w{i}")).collect();
    let (s, b) = post(
        &c,
        "/api/search",
        &json!({"query": format!("headphones {}", over.join(" "))}),
    )
    .await;
    assert_invalid(s, &b, "query", "one negated word too many");
    assert_eq!(events(&observer).await, before);
    let at: Vec<String> = (0..limit).map(|i| format!("-w{i}")).collect();
    let (s, b) = post(
        &c,
        "/api/search",
        &json!({"query": format!("headphones {}", at.join(" ")), "rerank": false}),
    )
    .await;
    assert_eq!(s, 200, "at the limit: {b}");
}

#[tokio::test]
async fn a_locked_receipts_table_makes_a_search_a_503_in_time_and_leaves_nothing_running() {
    let db = TestDb::with_sample("robust_lock_search").await;
    for (bound, profile, budget) in bounded_profiles() {
        // One connection: the next request must get the very connection
        // the abandoned statement ran on.
        let c = mosaic::Ctx::from_url(&db.runtime_url(), 1, profile)
            .unwrap()
            .with_embedder(std::sync::Arc::new(mosaic::embed::HashingEmbedder::new(
                384,
            )));
        let observer = db.owner().await;
        let before = events(&observer).await;
        let body = json!({"query": "espresso machine", "rerank": false});
        locked_then_served(
            &db,
            &format!("search, {bound}"),
            "LOCK TABLE receipts.search_events IN ACCESS EXCLUSIVE MODE",
            budget,
            || post(&c, "/api/search", &body),
        )
        .await;
        assert_eq!(events(&observer).await, before + 1, "{bound}: receipts");
    }
}

#[tokio::test]
async fn a_locked_catalog_makes_every_scoped_operation_a_503_in_time_and_leaves_nothing_running() {
    let db = TestDb::with_sample("robust_lock_scope").await;
    let setup = ctx(&db, RetrievalProfile::default());
    let (event, granted) = searched(&setup).await;
    let catalog = "LOCK TABLE catalog.products, catalog.evidence IN ACCESS EXCLUSIVE MODE";
    let receipts = "LOCK TABLE receipts.search_events IN ACCESS EXCLUSIVE MODE";
    for (bound, profile, budget) in bounded_profiles() {
        let c = mosaic::Ctx::from_url(&db.runtime_url(), 1, profile).unwrap();
        let evidence = format!("/api/products/{}/evidence", granted[0]);
        let evidence_body = json!({"retrieval_scope_id": event, "evidence_query": "battery life"});
        locked_then_served(&db, &format!("evidence, {bound}"), catalog, budget, || {
            post(&c, &evidence, &evidence_body)
        })
        .await;
        let compare = format!("/api/retrieval/events/{event}/compare");
        let compare_body = json!({"product_ids": [granted[0], granted[1]]});
        locked_then_served(&db, &format!("compare, {bound}"), catalog, budget, || {
            post(&c, &compare, &compare_body)
        })
        .await;
        // Explanation reads only the receipt.
        let explain = format!("/api/retrieval/events/{event}");
        locked_then_served(&db, &format!("explain, {bound}"), receipts, budget, || {
            call(&c, "GET", &explain, b"")
        })
        .await;
    }
}

/// Copies event `id` (and its candidates) as a new event created `days_ago`
/// days ago, as the service would have written it then.
async fn aged_copy(owner: &mut Client, id: &str, days_ago: i32) -> String {
    let new_id = uuid::Uuid::new_v4();
    let old: uuid::Uuid = id.parse().unwrap();
    let tx = owner.transaction().await.unwrap();
    tx.execute(
        "INSERT INTO receipts.search_events
         SELECT $2, principal, session_id, now() - make_interval(days => $3), query_text, normalized_query,
                applied_filters, strategy, semantic_route, eligible_estimate, pool_size, result_limit,
                authorized_limit, served_count, rerank_status, models, arms, timings_ms, warnings, profile
           FROM receipts.search_events WHERE search_event_id = $1",
        &[&old, &new_id, &days_ago],
    )
    .await
    .unwrap();
    tx.execute(
        "INSERT INTO receipts.search_candidates (search_event_id, event_created_at, product_id, pre_rerank_rank,
             lexical_rank, lexical_score, trigram_rank, trigram_score, semantic_rank, semantic_score, rrf_score,
             rerank_score, final_rank, served_rank, granted, exact_match, match_reason, source_uri, source_revision)
         SELECT $2, now() - make_interval(days => $3), product_id, pre_rerank_rank, lexical_rank, lexical_score,
                trigram_rank, trigram_score, semantic_rank, semantic_score, rrf_score, rerank_score, final_rank,
                served_rank, granted, exact_match, match_reason, source_uri, source_revision
           FROM receipts.search_candidates WHERE search_event_id = $1",
        &[&old, &new_id, &days_ago],
    )
    .await
    .unwrap();
    tx.commit().await.unwrap();
    new_id.to_string()
}

#[tokio::test]
async fn a_purge_drops_expired_receipts_and_their_scopes_become_the_generic_404() {
    let db = TestDb::with_sample("robust_purge").await;
    let c = ctx(&db, RetrievalProfile::default());
    let (recent, granted) = searched(&c).await;
    let mut owner = db.owner().await;
    // One expired day with a partition of its own, one without (its rows sit
    // in the default partition), and one day still inside the period.
    owner
        .batch_execute(
            "SELECT receipts.ensure_day_partitions(((now() AT TIME ZONE 'UTC')::date - 40),
                                                   ((now() AT TIME ZONE 'UTC')::date - 40))",
        )
        .await
        .unwrap();
    let partitioned = aged_copy(&mut owner, &recent, 40).await;
    let defaulted = aged_copy(&mut owner, &recent, 45).await;
    let kept = aged_copy(&mut owner, &recent, 20).await;
    let in_default: i64 = owner
        .query_one(
            "SELECT count(*) FROM receipts.search_events_default WHERE search_event_id = $1",
            &[&defaulted.parse::<uuid::Uuid>().unwrap()],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(in_default, 1);
    for id in [&partitioned, &defaulted, &kept] {
        let (s, b) = call(&c, "GET", &format!("/api/retrieval/events/{id}"), b"").await;
        assert_eq!(s, 200, "before the purge: {b}");
    }

    // The runtime role can neither purge nor delete.
    let rt = db.runtime().await;
    for sql in [
        "SELECT * FROM receipts.purge(1)",
        "DELETE FROM receipts.search_events",
        "DELETE FROM receipts.search_candidates",
        "TRUNCATE receipts.search_events_default",
    ] {
        let e = rt.batch_execute(sql).await.unwrap_err();
        let code = e.code().map(|c| c.code().to_string());
        assert!(
            matches!(code.as_deref(), Some("42501")),
            "{sql}: {e} ({code:?})"
        );
    }

    let report = mosaic::receipt::purge::purge(&owner, 30).await.unwrap();
    assert_eq!(report.dropped_days, 1, "{report:?}");
    assert_eq!(report.deleted_events, 1, "{report:?}");
    assert!(report.deleted_candidates >= 2, "{report:?}");

    let (_, unknown) = call(
        &c,
        "GET",
        &format!("/api/retrieval/events/{}", uuid::Uuid::new_v4()),
        b"",
    )
    .await;
    for id in [&partitioned, &defaulted] {
        let (s, b) = call(&c, "GET", &format!("/api/retrieval/events/{id}"), b"").await;
        assert_eq!((s, &b), (404, &unknown), "purged event {id}");
        let (s, b) = post(
            &c,
            &format!("/api/retrieval/events/{id}/compare"),
            &json!({"product_ids": [granted[0], granted[1]]}),
        )
        .await;
        assert_eq!((s, &b), (404, &unknown), "purged event {id}");
    }
    for id in [&kept, &recent] {
        let (s, b) = call(&c, "GET", &format!("/api/retrieval/events/{id}"), b"").await;
        assert_eq!(s, 200, "kept event: {b}");
    }
    // Purging again finds nothing more to do; searches still write receipts.
    let again = mosaic::receipt::purge::purge(&owner, 30).await.unwrap();
    assert_eq!(
        (again.dropped_days, again.deleted_events, again.created_days),
        (0, 0, 0)
    );
    searched(&c).await;
}

#[tokio::test]
async fn partitioning_keeps_the_receipts_written_before_it() {
    let db = TestDb::empty("robust_part").await;
    let mut c = db.owner().await;
    let opts = mosaic::db::MigrateOptions::default();
    // The schema as it was before receipts were partitioned, with a receipt.
    for m in mosaic::db::MIGRATIONS.iter().filter(|m| m.version < 12) {
        let sql = m
            .sql
            .replace("{{EMBEDDING_DIM}}", &opts.embedding_dim.to_string())
            .replace("{{RUNTIME_ROLE}}", &opts.runtime_role);
        c.batch_execute(&sql).await.unwrap();
    }
    c.batch_execute(
        "INSERT INTO receipts.search_events (search_event_id, principal, applied_filters, strategy, pool_size,
             result_limit, authorized_limit, served_count, rerank_status, models, arms, timings_ms, warnings,
             profile, created_at)
         VALUES ('00000000-0000-4000-8000-000000000001', 'anonymous', '{}', 'hybrid', 1, 10, 10, 1, 'skipped',
                 '{}', '{}', '{}', '[]', '{}', now() - interval '3 days');
         INSERT INTO receipts.search_candidates (search_event_id, product_id, pre_rerank_rank, final_rank,
             served_rank, granted, match_reason, source_uri, source_revision)
         VALUES ('00000000-0000-4000-8000-000000000001', 'P1', 1, 1, 1, true, 'lexical', 'https://x', 1);",
    )
    .await
    .unwrap();
    // Every migration again (the earlier ones are idempotent), 0012 included.
    mosaic::db::migrate(&mut c, &opts).await.unwrap();
    let row = c
        .query_one(
            "SELECT e.tableoid::regclass::text, c.tableoid::regclass::text, c.event_created_at = e.created_at
               FROM receipts.search_events e JOIN receipts.search_candidates c USING (search_event_id)",
            &[],
        )
        .await
        .unwrap();
    let (events_part, candidates_part, same_day): (String, String, bool) =
        (row.get(0), row.get(1), row.get(2));
    assert!(
        events_part.starts_with("receipts.search_events_p"),
        "{events_part}"
    );
    assert!(
        candidates_part.starts_with("receipts.search_candidates_p"),
        "{candidates_part}"
    );
    assert!(same_day);
    let kind: String = c
        .query_one(
            "SELECT relkind::text FROM pg_class WHERE oid = 'receipts.search_candidates'::regclass",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(kind, "p");
}
