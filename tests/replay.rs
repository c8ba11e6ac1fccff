//! Replay guarantees: a recorded search re-run against the same catalog and
//! profile changes nothing; a move names the stage that caused it; a replay
//! stays inside the principal's receipts and is no public route. Against
//! the real PostgreSQL and the sample catalog, on the runtime role, with
//! the hashing embedder and the local reranker.

use mosaic::embed::HashingEmbedder;
use mosaic::http::{handle, HttpRequest};
use mosaic::replay::{replay, replay_sample, Caller, Cause, MoveKind, ProfileChoice, ReplayReport};
use mosaic::rerank::local::LocalReranker;
use mosaic::scope::explain_retrieval;
use mosaic::search::{search_json, Shape};
use mosaic::{Ctx, Error, Principal, RetrievalProfile};
use mosaic_integration_tests::{a_brand, misspelt, TestDb};
use serde_json::{json, Value};
use std::sync::Arc;
use uuid::Uuid;

fn alice() -> Principal {
    Principal("alice".into())
}

fn bob() -> Principal {
    Principal("bob".into())
}

/// The operator's context, as `mosaic replay` makes it: the owner role's
/// URL (an operator reads any principal's receipt; the runtime role reads
/// one only given its principal), the template's hashing embedder, the
/// local reranker. The searches it replays run there too.
fn serving(db: &TestDb, profile: RetrievalProfile) -> Ctx {
    Ctx::from_url(&db.url(), 4, profile)
        .expect("context")
        .with_embedder(Arc::new(HashingEmbedder::new(384)))
        .with_reranker(Arc::new(LocalReranker::new()))
}

/// Runs a search as `who`; returns its search_event_id and served ids.
async fn searched(c: &Ctx, who: &Principal, body: Value) -> (Uuid, Vec<String>) {
    let r = search_json(c, who, &body, Shape::Nested)
        .await
        .expect("search");
    let id = Uuid::parse_str(r["search_event_id"].as_str().unwrap()).unwrap();
    let served = r["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["product_id"].as_str().unwrap().to_string())
        .collect();
    (id, served)
}

async fn replayed(c: &Ctx, event: Uuid, choice: ProfileChoice) -> ReplayReport {
    replay(c, Caller::Operator, event, choice)
        .await
        .expect("replay")
}

async fn explain(c: &Ctx, who: &Principal, event: Uuid) -> Result<Value, Error> {
    explain_retrieval(c, who, &json!({"retrieval_scope_id": event.to_string()})).await
}

#[tokio::test]
async fn replaying_an_unchanged_search_gives_an_empty_diff() {
    let db = TestDb::with_sample("replay_same").await;
    let c = serving(&db, RetrievalProfile::default());
    let requests = [
        json!({"query": "wireless headphones", "limit": 10, "authorized_limit": 3}),
        json!({"query": "insulated bottle", "filters": {"max_price_cents": 3000}, "limit": 20}),
        json!({"query": "headphones -wired", "limit": 5, "rerank": false}),
        json!({"filters": {"category_key": "headphones", "min_rating": 4.2}, "limit": 10}),
    ];
    for body in requests {
        let (event, _) = searched(&c, &alice(), body.clone()).await;
        for choice in [ProfileChoice::Recorded, ProfileChoice::Current] {
            let r = replayed(&c, event, choice).await;
            assert_eq!(r.replayed_event_id, event);
            assert_ne!(r.replay_event_id, event);
            assert!(r.diff.empty, "{body}: {:#?}", r.diff);
            assert!(r.diff.top1_unchanged);
            assert_eq!(r.diff.served_displacement, 0.0);

            // The replay's explanation carries the same (empty) diff.
            let e = explain(&c, &alice(), r.replay_event_id).await.unwrap();
            assert_eq!(e["replay"]["replayed_event_id"], json!(event.to_string()));
            assert_eq!(e["replay"]["profile"], json!(choice.as_str()));
            assert_eq!(e["replay"]["diff"]["empty"], json!(true), "{body}");
        }
    }
}

/// Owner-side catalog change: `product` now costs `cents`.
async fn reprice(db: &TestDb, product: &str, cents: i64) {
    db.owner()
        .await
        .execute(
            "WITH p AS (UPDATE catalog.products SET price_cents = $2, revision = revision + 1
                        WHERE product_id = $1 RETURNING product_id)
             SELECT search.refresh_projection(ARRAY(SELECT product_id FROM p))",
            &[&product, &cents],
        )
        .await
        .expect("reprice");
}

#[tokio::test]
async fn a_product_priced_past_the_filter_leaves_for_eligibility() {
    let db = TestDb::with_sample("replay_price").await;
    let c = serving(&db, RetrievalProfile::default());
    let body = json!({"query": "headphones", "filters": {"max_price_cents": 15000}, "limit": 10});
    let (event, served) = searched(&c, &alice(), body).await;
    let first = served[0].clone();
    reprice(&db, &first, 15_001).await;

    let r = replayed(&c, event, ProfileChoice::Recorded).await;
    assert!(!r.diff.empty);
    assert!(!r.diff.top1_unchanged);
    let m = r
        .diff
        .moves
        .iter()
        .find(|m| m.product_id == first)
        .expect("the repriced product moved");
    assert_eq!(m.change, MoveKind::LeftPool);
    assert_eq!(m.cause, Cause::Eligibility);
    assert_eq!(m.before.unwrap().served_rank, Some(1));
    assert!(m.after.is_none());
    // It is the only product that left the pool for eligibility; products
    // that only shifted up into its place moved for the same cause.
    let left: Vec<&str> = r
        .diff
        .moves
        .iter()
        .filter(|m| m.change == MoveKind::LeftPool && m.cause == Cause::Eligibility)
        .map(|m| m.product_id.as_str())
        .collect();
    assert_eq!(left, vec![first.as_str()]);
    assert!(
        r.diff
            .moves
            .iter()
            .any(|m| m.change == MoveKind::Moved && m.cause == Cause::Eligibility),
        "{:#?}",
        r.diff.moves
    );
    assert!(r
        .diff
        .changes
        .iter()
        .all(|c| !c.field.starts_with("profile.")));

    // The explanation of the replay tells the same.
    let e = explain(&c, &alice(), r.replay_event_id).await.unwrap();
    assert_eq!(e["replay"], serde_json::to_value(&r).unwrap());
}

#[tokio::test]
async fn after_a_profile_change_the_moves_are_put_down_to_fusion() {
    let db = TestDb::with_sample("replay_profile").await;
    let recorded = serving(&db, RetrievalProfile::default());
    let body = json!({"query": "wireless headphones", "limit": 20, "rerank": false});
    let (event, _) = searched(&recorded, &alice(), body).await;

    // A larger pool: the same arms, more fused candidates.
    let larger = serving(
        &db,
        RetrievalProfile {
            pool_size: 80,
            ..Default::default()
        },
    );
    let r = replayed(&larger, event, ProfileChoice::Current).await;
    let pool_size: Vec<_> = r
        .diff
        .changes
        .iter()
        .filter(|c| c.field == "profile.pool_size")
        .collect();
    assert_eq!(pool_size.len(), 1, "{:?}", r.diff.changes);
    assert_eq!(
        (pool_size[0].before.clone(), pool_size[0].after.clone()),
        (json!(50), json!(80))
    );
    assert!(!r.diff.moves.is_empty());
    for m in &r.diff.moves {
        assert_eq!(m.change, MoveKind::EnteredPool, "{m:?}");
        assert_eq!(m.cause, Cause::Fusion, "{m:?}");
    }
    // The recorded profile leaves the pool as it was.
    assert!(
        replayed(&larger, event, ProfileChoice::Recorded)
            .await
            .diff
            .empty
    );

    // Another fusion constant reorders the same arm ranks.
    let sharper = serving(
        &db,
        RetrievalProfile {
            rrf_k: 1.0,
            ..Default::default()
        },
    );
    let r = replayed(&sharper, event, ProfileChoice::Current).await;
    assert!(
        r.diff.moves.iter().any(|m| m.change == MoveKind::Moved),
        "{:#?}",
        r.diff.moves
    );
    for m in &r.diff.moves {
        assert_eq!(m.cause, Cause::Fusion, "{m:?}");
        assert!(m.arm_ranks.is_empty(), "{m:?}");
    }
}

/// The body of the generic refusal.
fn refusal(r: Result<impl std::fmt::Debug, Error>) -> String {
    match r {
        Err(e @ Error::NotFound) => e.body().to_string(),
        other => panic!("expected the generic refusal, got {other:?}"),
    }
}

async fn route(c: &Ctx, who: &Principal, method: &str, path: &str) -> (u16, Vec<u8>) {
    let req = HttpRequest {
        method,
        path,
        query: "",
        body: b"{}",
        request_id: "test",
    };
    let resp = handle(c, who, req).await;
    (resp.status, resp.body)
}

#[tokio::test]
async fn a_correction_that_changed_is_listed_in_the_replay_diff() {
    let db = TestDb::with_sample("replay_correction").await;
    // A brand of letters only, misspelt by one dropped letter.
    let (_, brand, _) = a_brand(&db).await;
    let typo = misspelt(&brand);
    let recorded = serving(&db, RetrievalProfile::default());
    let body = json!({"query": format!("{typo} headphones"), "limit": 10, "rerank": false});
    let (event, _) = searched(&recorded, &alice(), body).await;

    let uncorrected = serving(
        &db,
        RetrievalProfile {
            query_correction: 0,
            ..Default::default()
        },
    );
    let r = replayed(&uncorrected, event, ProfileChoice::Current).await;
    let field = |name: &str| r.diff.changes.iter().find(|c| c.field == name);
    let corrections = field("query_understanding.corrections").expect("corrections changed");
    assert_eq!(corrections.before[0]["to"], json!(brand), "{corrections:?}");
    assert_eq!(corrections.after, json!([]));
    let corrected = field("query_understanding.corrected_query").expect("the query changed");
    assert_eq!(corrected.after, Value::Null);
    assert!(field("profile.query_correction").is_some());
    // Replaying with the recorded profile corrects the same way again.
    let same = replayed(&uncorrected, event, ProfileChoice::Recorded).await;
    assert!(
        !same
            .diff
            .changes
            .iter()
            .any(|c| c.field.starts_with("query_understanding")),
        "{:?}",
        same.diff.changes
    );
}

#[tokio::test]
async fn replaying_another_principals_event_is_the_generic_404() {
    let db = TestDb::with_sample("replay_scope").await;
    let c = serving(&db, RetrievalProfile::default());
    let (event, _) = searched(&c, &alice(), json!({"query": "water bottle", "limit": 5})).await;
    let unknown = refusal(
        replay(
            &c,
            Caller::Principal(&bob()),
            Uuid::new_v4(),
            ProfileChoice::Current,
        )
        .await,
    );
    let theirs =
        refusal(replay(&c, Caller::Principal(&bob()), event, ProfileChoice::Current).await);
    assert_eq!(theirs, unknown);
    // Their own is replayed, as them.
    let own = replay(
        &c,
        Caller::Principal(&alice()),
        event,
        ProfileChoice::Current,
    )
    .await
    .unwrap();
    assert!(own.diff.empty);

    // The API has no replay route: the same 404 for anyone, byte for byte.
    let (status, missing) = route(
        &c,
        &bob(),
        "GET",
        &format!("/api/retrieval/events/{}", Uuid::new_v4()),
    )
    .await;
    assert_eq!(status, 404);
    for who in [alice(), bob()] {
        for method in ["POST", "GET"] {
            let path = format!("/api/retrieval/events/{event}/replay");
            assert_eq!(route(&c, &who, method, &path).await, (404, missing.clone()));
        }
    }

    // An operator's replay is bound to the recorded principal: another
    // principal's explanation of it is the generic 404.
    let r = replayed(&c, event, ProfileChoice::Recorded).await;
    assert_eq!(
        refusal(explain(&c, &bob(), r.replay_event_id).await),
        unknown
    );
    assert!(explain(&c, &alice(), r.replay_event_id).await.unwrap()["replay"].is_object());
}

#[tokio::test]
async fn a_replay_whose_replayed_event_is_gone_does_not_mention_it() {
    let db = TestDb::with_sample("replay_gone").await;
    let c = serving(&db, RetrievalProfile::default());
    let (event, _) = searched(&c, &alice(), json!({"query": "trail running shoes"})).await;
    let r = replayed(&c, event, ProfileChoice::Current).await;
    db.owner()
        .await
        .batch_execute(&format!(
            "DELETE FROM receipts.search_candidates WHERE search_event_id = '{event}';
             DELETE FROM receipts.search_events WHERE search_event_id = '{event}';"
        ))
        .await
        .unwrap();
    let e = explain(&c, &alice(), r.replay_event_id).await.unwrap();
    assert!(e.get("replay").is_none(), "{e}");
    assert!(!e.to_string().contains(&event.to_string()));
    assert!(matches!(
        replay(&c, Caller::Operator, event, ProfileChoice::Current).await,
        Err(Error::NotFound)
    ));
}

#[tokio::test]
async fn a_sample_of_unchanged_searches_summarises_as_unchanged() {
    let db = TestDb::with_sample("replay_sample").await;
    let c = serving(&db, RetrievalProfile::default());
    let since = chrono_now(&db).await;
    for q in ["wireless headphones", "insulated bottle", "VXHP-1000S"] {
        searched(&c, &alice(), json!({"query": q})).await;
    }
    searched(&c, &bob(), json!({"query": "rain jacket", "limit": 3})).await;
    // An evaluation variant's search records its variant and is not
    // sampled: replaying it through the serving pipeline would report
    // moves that no served search made.
    let lexical_only = mosaic::search::Variant {
        arms: [true, false, false],
        weights: None,
        rerank: false,
    };
    let req = mosaic::search::SearchRequest::from_json(
        &json!({"query": "rain jacket"}),
        mosaic::search::Shape::Nested,
        &c.profile,
    )
    .unwrap();
    let eval = mosaic::search::search_variant(&c, &alice(), req, &lexical_only)
        .await
        .unwrap();
    let profile: Value = db
        .owner()
        .await
        .query_one(
            "SELECT profile FROM receipts.search_events WHERE search_event_id = $1",
            &[&eval.search_event_id],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(
        profile["evaluation_variant"]["arms"],
        json!({"lexical": true, "trigram": false, "semantic": false})
    );
    // Named by id, it is refused, not replayed.
    let refused = replay(
        &c,
        Caller::Operator,
        eval.search_event_id,
        ProfileChoice::Recorded,
    )
    .await
    .unwrap_err();
    assert!(
        refused.to_string().contains("evaluation variant"),
        "{refused}"
    );
    let s = replay_sample(&c, 10, since, ProfileChoice::Recorded)
        .await
        .unwrap();
    assert_eq!(s.replayed, 4, "{s:#?}");
    assert_eq!(s.unchanged, 4);
    assert_eq!(s.top1_unchanged_share, 1.0);
    assert_eq!(s.mean_served_displacement, 0.0);
    assert!(s.left_window_by_cause.is_empty() && s.failed.is_empty());
    // Replays are not sampled again.
    let again = replay_sample(&c, 10, since, ProfileChoice::Recorded)
        .await
        .unwrap();
    assert_eq!(again.replayed, 4);
}

/// The database's clock, so that the sample window holds this test's searches.
async fn chrono_now(db: &TestDb) -> chrono::DateTime<chrono::Utc> {
    db.owner()
        .await
        .query_one("SELECT now()", &[])
        .await
        .unwrap()
        .get(0)
}
