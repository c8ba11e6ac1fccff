//! search_products guarantees, against the real PostgreSQL and the sample
//! catalog (5,000 products, hashing-embedder vectors).

use mosaic::search::arms::{self, ArmMode, Eligibility, LexicalMode, Verdict};
use mosaic::search::fusion::Arm;
use mosaic::search::{search, Filters, RerankStatus, SearchRequest, SearchResponse, Shape};
use mosaic::{Ctx, Error, Principal, RetrievalProfile};
use mosaic_devtools::eval::CatalogRow;
use mosaic_integration_tests::{ctx, domain_count, embedders, rerankers, texts, TestDb};
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use serde_json::{json, Map, Value};
use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_postgres::Client;

async fn run(ctx: &Ctx, body: Value) -> Result<SearchResponse, Error> {
    let req = SearchRequest::from_json(&body, Shape::Nested, &ctx.profile)?;
    search(ctx, &Principal::anonymous(), req).await
}

async fn events(c: &Client) -> i64 {
    c.query_one("SELECT count(*) FROM receipts.search_events", &[])
        .await
        .unwrap()
        .get(0)
}

/// The filter semantics, checked on catalog rows by the evaluation's
/// independent check (Rust, not the SQL predicate).
fn satisfies(r: &CatalogRow, f: &Filters) -> bool {
    let filters = match serde_json::to_value(f).unwrap() {
        Value::Object(m) => m,
        _ => Map::new(),
    };
    mosaic_devtools::eval::satisfies(r, &filters).expect("well-typed filters")
}

fn random_filters(rng: &mut impl Rng, brands: &[String], attrs: &[(String, Value)]) -> Filters {
    let mut f = Filters::default();
    let categories = [
        "headphones",
        "laptops",
        "tents",
        "kettles",
        "office_chairs",
        "mice",
        "blenders",
        "backpacks",
    ];
    let domains = ["electronics", "home_kitchen", "outdoor", "office"];
    if rng.gen_bool(0.3) {
        f.domain = Some(domains.choose(rng).unwrap().to_string());
    }
    if rng.gen_bool(0.3) {
        f.category_key = Some(categories.choose(rng).unwrap().to_string());
    }
    if rng.gen_bool(0.2) {
        let b = brands.choose(rng).unwrap();
        f.brand = Some(if rng.gen_bool(0.5) {
            b.to_uppercase()
        } else {
            b.clone()
        });
    }
    if rng.gen_bool(0.2) {
        let all = [
            "in_stock",
            "low_stock",
            "backorder",
            "preorder",
            "out_of_stock",
            "discontinued",
        ];
        let n = rng.gen_range(1..=3);
        f.availability = Some(all.choose_multiple(rng, n).map(|s| s.to_string()).collect());
    }
    f.in_stock_only = rng.gen_bool(0.3);
    if rng.gen_bool(0.3) {
        f.min_price_cents = Some(rng.gen_range(0..50_000));
    }
    if rng.gen_bool(0.3) {
        f.max_price_cents = Some(f.min_price_cents.unwrap_or(0) + rng.gen_range(1_000..200_000));
    }
    if rng.gen_bool(0.3) {
        f.min_rating = Some(rng.gen_range(25..=48) as f32 / 10.0);
    }
    if rng.gen_bool(0.25) {
        let (k, v) = attrs.choose(rng).unwrap();
        f.attributes = Some(Map::from_iter([(k.clone(), v.clone())]));
    }
    f
}

#[tokio::test]
async fn a_filter_never_admits_an_ineligible_candidate_in_any_arm_and_arms_fill_when_they_can() {
    let db = TestDb::with_sample("prop").await;
    let mut c = db.runtime().await;
    let profile = RetrievalProfile::default();
    let rows = mosaic_devtools::eval::load_catalog(&ctx(&db, RetrievalProfile::default()))
        .await
        .unwrap();
    let brands: Vec<String> = {
        let mut b: Vec<String> = rows
            .values()
            .map(|r| r.brand.clone())
            .collect::<HashSet<_>>()
            .into_iter()
            .collect();
        b.sort();
        b
    };
    let attrs: Vec<(String, Value)> = c
        .query(
            "SELECT k, v FROM (SELECT DISTINCT k, v FROM catalog.products, jsonb_each(attributes) AS a(k, v)
                               WHERE jsonb_typeof(v) IN ('boolean', 'string')) d
             ORDER BY k, v::text LIMIT 60",
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    let queries = [
        "wireless headphones",
        "stainless steel",
        "warm sleeping bag for winter nights",
        "ergonomic lumbar",
        "kshp 1040",
    ];
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(2026);
    let mut checked = [0usize; 3];
    for round in 0..200 {
        let filters = random_filters(&mut rng, &brands, &attrs);
        let q = queries[round % queries.len()];
        let elig = Eligibility::new(&filters);
        let tx = c.transaction().await.unwrap();
        arms::apply_settings(&tx, &profile).await.unwrap();
        let lexical = arms::lexical(&tx, &elig, q, &profile).await.unwrap();
        let trigram = arms::trigram(&tx, &elig, q, (false, None), &profile)
            .await
            .unwrap();
        let vector = pgvector::Vector::from(mosaic::embed::HashingEmbedder::new(384).embed_one(q));
        let semantic = arms::semantic(&tx, &elig, q, &vector, &profile)
            .await
            .unwrap();

        // Independent expectations: every matching row, filtered in Rust.
        // The matches of the step that served: the query as written, or
        // the relaxed step the mode names (which holds every stricter
        // step's matches).
        let lex_matches = match lexical.mode {
            Some(ArmMode::Lexical(LexicalMode::Strict)) => {
                texts(
                    &tx,
                    "SELECT product_id FROM search.product_projection
                     WHERE document @@ websearch_to_tsquery('english', $1)",
                    &[&q],
                )
                .await
            }
            Some(ArmMode::Lexical(mode)) => {
                let positive = arms::lexical_terms(q).positive;
                // Unfiltered: the step as the catalog's counts make it,
                // every term spelled out.
                let unfiltered = Eligibility::new(&Filters::default());
                let budget = profile.lexical_scan_budget;
                let relax = arms::Relaxation::of(&tx, &positive, budget, &unfiltered)
                    .await
                    .unwrap();
                let step = relax.tsquery(mode).expect("the mode names a step");
                texts(
                    &tx,
                    "SELECT product_id FROM search.product_projection WHERE document @@ $1::text::tsquery",
                    &[&step],
                )
                .await
            }
            other => panic!("the lexical arm names its mode, not {other:?}"),
        };
        // The trigram cascade's verdict is about the threshold that served.
        let served = match trigram.mode {
            Some(ArmMode::Trigram(threshold)) => threshold.to_string(),
            other => panic!("the trigram arm names its threshold, not {other:?}"),
        };
        tx.execute(
            "SELECT set_config('pg_trgm.word_similarity_threshold', $1, true)",
            &[&served],
        )
        .await
        .unwrap();
        let tri_matches = texts(
            &tx,
            "SELECT product_id FROM search.product_projection WHERE $1 <% identity_text",
            &[&q.to_lowercase()],
        )
        .await;
        tx.commit().await.unwrap();
        let eligible = |ids: &mut dyn Iterator<Item = &String>| {
            ids.filter(|id| satisfies(&rows[*id], &filters)).count() as i64
        };
        let all_eligible = eligible(&mut rows.keys());

        for (i, (name, arm, matching)) in [
            ("lexical", &lexical, eligible(&mut lex_matches.iter())),
            ("trigram", &trigram, eligible(&mut tri_matches.iter())),
            ("semantic", &semantic, all_eligible),
        ]
        .into_iter()
        .enumerate()
        {
            for (id, _) in &arm.candidates {
                assert!(
                    satisfies(&rows[id], &filters),
                    "{name} admitted {id} against {filters:?}"
                );
            }
            if arm.verdict != Verdict::BudgetCut {
                assert_eq!(
                    arm.returned as i64,
                    arm.limit.min(matching),
                    "{name} returned {} for {q:?} with {filters:?}, {matching} eligible matches",
                    arm.returned
                );
                let expected = if matching >= arm.limit {
                    Verdict::Full
                } else {
                    Verdict::Exhausted
                };
                assert_eq!(arm.verdict, expected, "{name} verdict");
            }
            checked[i] += arm.candidates.len();
        }
    }
    assert!(
        checked.iter().all(|n| *n > 1_000),
        "too few candidates checked: {checked:?}"
    );
}

#[tokio::test]
async fn the_semantic_arm_fills_its_limit_on_every_route() {
    let db = TestDb::with_sample("semantic").await;
    let owner = db.owner().await;
    // A ~1% filter: one category and one brand.
    let row = owner
        .query_one(
            "SELECT category_key, brand, count(*) FROM catalog.products GROUP BY 1, 2 ORDER BY count(*) DESC LIMIT 1",
            &[],
        )
        .await
        .unwrap();
    let (cat, brand, n): (String, String, i64) = (row.get(0), row.get(1), row.get(2));
    assert!(
        (30..=100).contains(&n),
        "{n} products in the selective slice"
    );

    // With a semantic limit below the slice, the exact route must fill it.
    let small = RetrievalProfile {
        semantic_limit: 25,
        ..Default::default()
    };
    let c = ctx(&db, small);
    let r = run(
        &c,
        json!({"query": "comfortable and reliable", "include_diagnostics": true,
                           "filters": {"category_key": cat, "brand": brand}}),
    )
    .await
    .unwrap();
    let d = r.diagnostics.unwrap();
    assert_eq!(d.semantic_route.as_deref(), Some("exact"));
    assert_eq!(d.arms[Arm::Semantic].returned, 25);
    assert_eq!(d.arms[Arm::Semantic].verdict, Verdict::Full);

    let c = ctx(&db, RetrievalProfile::default());
    // ~37%: a broad domain filter, HNSW route with iterative scans.
    let r = run(
        &c,
        json!({"query": "wireless headphones", "include_diagnostics": true,
                           "filters": {"domain": "electronics"}}),
    )
    .await
    .unwrap();
    let d = r.diagnostics.unwrap();
    assert_eq!(d.semantic_route.as_deref(), Some("hnsw"));
    assert_eq!(d.arms[Arm::Semantic].returned, 150);

    // Anti-correlated: a headphone query restricted to the outdoor domain.
    let r = run(
        &c,
        json!({"query": "noise cancelling over-ear headphones", "include_diagnostics": true,
                           "filters": {"domain": "outdoor"}}),
    )
    .await
    .unwrap();
    let d = r.diagnostics.unwrap();
    assert!(
        d.semantic_route.as_deref().unwrap().starts_with("hnsw"),
        "{:?}",
        d.semantic_route
    );
    assert_eq!(d.arms[Arm::Semantic].returned, 150);

    // A scan budget too small to fill the limit: whichever plan the
    // planner picks, the arm returns everything it should, and says how.
    let tight = RetrievalProfile {
        hnsw_max_scan_tuples: 150,
        hnsw_ef_search: 10,
        semantic_exact_threshold: 0,
        ..Default::default()
    };
    let c = ctx(&db, tight);
    for filters in [
        json!({"domain": "outdoor"}),
        json!({"min_rating": 4.6}),
        json!({"in_stock_only": true}),
    ] {
        let r = run(
            &c,
            json!({"query": "noise cancelling over-ear headphones", "include_diagnostics": true,
                               "filters": filters}),
        )
        .await
        .unwrap();
        let d = r.diagnostics.unwrap();
        let route = d.semantic_route.clone().unwrap();
        assert!(
            route == "hnsw" || route == "hnsw_underfilled_then_exact",
            "{route}"
        );
        assert_eq!(d.arms[Arm::Semantic].returned, 150, "{filters}: {route}");
        // The receipt records the route and the eligible estimate.
        let rt = db.owner().await;
        let row = rt
            .query_one(
                "SELECT semantic_route, eligible_estimate FROM receipts.search_events WHERE search_event_id = $1",
                &[&r.search_event_id],
            )
            .await
            .unwrap();
        assert_eq!(row.get::<_, Option<String>>(0), Some(route));
        assert_eq!(row.get::<_, Option<i64>>(1), Some(1));
    }
}

async fn identifier(db: &TestDb, id: &str) -> (String, String) {
    let r = db
        .owner()
        .await
        .query_one(
            "SELECT sku, model FROM catalog.products WHERE product_id = $1",
            &[&id],
        )
        .await
        .unwrap();
    (r.get(0), r.get(1))
}

#[tokio::test]
async fn the_receipt_names_the_models_whose_output_the_search_used() {
    let db = TestDb::with_sample("models_used").await;
    let reranked =
        ctx(&db, RetrievalProfile::default()).with_reranker(Arc::new(rerankers::Reverse));
    let failing = ctx(&db, RetrievalProfile::default()).with_reranker(Arc::new(rerankers::Failing));
    let models = |r: &SearchResponse| r.diagnostics.as_ref().unwrap().models.clone();
    let hashing = {
        use mosaic::embed::Embedder;
        mosaic::embed::HashingEmbedder::new(384)
            .model_id()
            .to_string()
    };
    for (c, body, embedding, reranker) in [
        (
            &reranked,
            json!({"query": "espresso machine"}),
            json!(hashing),
            json!("test/reverse"),
        ),
        (
            &reranked,
            json!({"query": "espresso machine", "rerank": false}),
            json!(hashing),
            Value::Null,
        ),
        (
            &reranked,
            json!({"filters": {"domain": "home_kitchen"}}),
            Value::Null,
            Value::Null,
        ),
        (
            &failing,
            json!({"query": "espresso machine"}),
            json!(hashing),
            Value::Null,
        ),
    ] {
        let mut body = body;
        body["include_diagnostics"] = json!(true);
        let r = run(c, body.clone()).await.unwrap();
        let expected = json!({"embedding": embedding, "reranker": reranker});
        assert_eq!(models(&r), expected, "{body}");
        // The receipt records the same.
        let recorded: Value = db
            .owner()
            .await
            .query_one(
                "SELECT models FROM receipts.search_events WHERE search_event_id = $1",
                &[&r.search_event_id],
            )
            .await
            .unwrap()
            .get(0);
        assert_eq!(recorded, expected, "{body}");
    }
}

#[tokio::test]
async fn exact_sku_and_model_stay_first_whatever_the_reranker_says() {
    let db = TestDb::with_sample("exact").await;
    let c = ctx(&db, RetrievalProfile::default()).with_reranker(Arc::new(rerankers::Reverse));
    let (sku, model) = identifier(&db, "P0000123").await;
    for q in [
        sku.clone(),
        sku.to_lowercase().replace('-', " "),
        model.clone(),
        model.to_lowercase().replace(['-', ' '], ""),
    ] {
        let r = run(&c, json!({"query": q, "include_diagnostics": true}))
            .await
            .unwrap();
        assert_eq!(r.strategy.as_str(), "exact_identifier", "{q}");
        assert_eq!(r.results[0].product_id, "P0000123", "{q}");
        assert!(r.results[0].exact_match);
        assert_eq!(r.results[0].match_reason, "exact_identifier");
        assert_eq!(
            r.diagnostics.as_ref().unwrap().rerank_status,
            RerankStatus::Reranked
        );
        // The reverse reranker really reordered the rest.
        assert!(
            r.results[1].signals.pre_rerank_rank > 2,
            "{q}: rest not reranked"
        );
    }
    // An identifier excluded by a filter is not pinned.
    let r = run(
        &c,
        json!({"query": sku, "filters": {"min_price_cents": 999_999_999}}),
    )
    .await
    .unwrap();
    assert_eq!(r.strategy.as_str(), "hybrid");
    assert!(r.results.iter().all(|x| x.product_id != "P0000123"));
}

#[tokio::test]
async fn a_rogue_reranker_cannot_add_or_duplicate_candidates() {
    let db = TestDb::with_sample("rogue").await;
    let plain = ctx(&db, RetrievalProfile::default());
    let rogue = ctx(&db, RetrievalProfile::default()).with_reranker(Arc::new(rerankers::Rogue));
    let body = json!({"query": "stainless steel kettle", "limit": 50, "include_diagnostics": true});
    let a = run(&plain, body.clone()).await.unwrap();
    let b = run(&rogue, body).await.unwrap();
    let ids = |r: &SearchResponse| {
        r.results
            .iter()
            .map(|x| x.product_id.clone())
            .collect::<Vec<_>>()
    };
    let (mut ia, mut ib) = (ids(&a), ids(&b));
    assert_eq!(
        ib.len(),
        ib.iter().collect::<HashSet<_>>().len(),
        "duplicates served"
    );
    ia.sort();
    ib.sort();
    assert_eq!(ia, ib, "the reranker changed the set, not just the order");
    let d = b.diagnostics.unwrap();
    assert_eq!(d.rerank_status, RerankStatus::Reranked);
    assert!(d.warnings.iter().any(|w| w.contains("ignored")));
}

#[tokio::test]
async fn a_query_vector_the_column_cannot_take_skips_the_semantic_arm() {
    let db = TestDb::with_sample("embed_broken").await;
    let mut nan = vec![0.0f32; 384];
    nan[0] = f32::NAN;
    let mut infinite = vec![0.0f32; 384];
    infinite[7] = f32::INFINITY;
    for (name, embedder) in [
        (
            "too short",
            embedders::Fixed {
                dimension: 384,
                vector: vec![0.1; 383],
            },
        ),
        (
            "declared and given 512",
            embedders::Fixed {
                dimension: 512,
                vector: vec![0.1; 512],
            },
        ),
        (
            "a NaN",
            embedders::Fixed {
                dimension: 384,
                vector: nan.clone(),
            },
        ),
        (
            "an infinity",
            embedders::Fixed {
                dimension: 384,
                vector: infinite.clone(),
            },
        ),
    ] {
        let c = ctx(&db, RetrievalProfile::default()).with_embedder(Arc::new(embedder));
        let r = run(
            &c,
            json!({"query": "stainless steel kettle", "include_diagnostics": true}),
        )
        .await
        .unwrap_or_else(|e| panic!("{name}: {e:?}"));
        let d = r.diagnostics.as_ref().unwrap();
        assert!(
            d.warnings
                .iter()
                .any(|w| w.starts_with("semantic arm skipped")),
            "{name}: {:?}",
            d.warnings
        );
        assert_eq!(d.arms[Arm::Semantic].returned, 0, "{name}");
        assert!(!r.results.is_empty(), "{name}: the text arms still serve");
    }
}

#[tokio::test]
async fn a_reranker_that_scores_few_or_none_says_so_in_the_receipt() {
    let db = TestDb::with_sample("rerank_partial").await;
    let body = json!({"query": "stainless steel kettle", "limit": 20, "include_diagnostics": true});
    let plain = ctx(&db, RetrievalProfile::default());
    let fused = run(
        &plain,
        json!({"query": "stainless steel kettle", "limit": 20,
                                    "rerank": false, "include_diagnostics": true}),
    )
    .await
    .unwrap();
    let ids = |r: &SearchResponse| {
        r.results
            .iter()
            .map(|x| x.product_id.clone())
            .collect::<Vec<_>>()
    };
    let warned = |r: &SearchResponse, text: &str| {
        r.diagnostics
            .as_ref()
            .unwrap()
            .warnings
            .iter()
            .any(|w| w.contains(text))
    };

    // Nothing scored (one entry, not a number): the fused order, a fallback.
    let none = ctx(&db, RetrievalProfile::default()).with_reranker(Arc::new(rerankers::Partial(0)));
    let r = run(&none, body.clone()).await.unwrap();
    let d = r.diagnostics.as_ref().unwrap();
    assert_eq!(d.rerank_status, RerankStatus::FallbackFused);
    assert!(warned(&r, "scored none of the"), "{:?}", d.warnings);
    assert!(warned(&r, "non-finite"), "{:?}", d.warnings);
    assert_eq!(ids(&r), ids(&fused));
    assert!(r.results.iter().all(|x| x.signals.rerank_score.is_none()));

    // Three scored: reranked, the others after them in fused order.
    let few = ctx(&db, RetrievalProfile::default()).with_reranker(Arc::new(rerankers::Partial(3)));
    let r = run(&few, body).await.unwrap();
    let d = r.diagnostics.as_ref().unwrap();
    assert_eq!(d.rerank_status, RerankStatus::Reranked);
    assert!(warned(&r, "scored 3 of the"), "{:?}", d.warnings);
    let (served, fused) = (ids(&r), ids(&fused));
    assert_eq!(
        served[..3],
        [fused[2].clone(), fused[1].clone(), fused[0].clone()]
    );
    assert_eq!(served[3..], fused[3..]);
}

#[tokio::test]
async fn a_slow_or_failing_reranker_keeps_the_fused_order_within_the_deadline() {
    let db = TestDb::with_sample("deadline").await;
    let profile = RetrievalProfile {
        rerank_deadline_ms: 300,
        ..Default::default()
    };
    let plain = ctx(&db, RetrievalProfile { ..profile.clone() });
    let body = json!({"query": "lightweight tent for backpacking", "rerank": false, "include_diagnostics": true});
    let fused = run(&plain, body).await.unwrap();
    let body = json!({"query": "lightweight tent for backpacking", "include_diagnostics": true});
    for reranker in [
        Arc::new(rerankers::Slow(Duration::from_secs(5))) as Arc<dyn mosaic::rerank::Reranker>,
        Arc::new(rerankers::Failing),
    ] {
        let c = ctx(&db, profile.clone()).with_reranker(reranker);
        let t = Instant::now();
        let r = run(&c, body.clone()).await.unwrap();
        let elapsed = t.elapsed();
        let d = r.diagnostics.as_ref().unwrap();
        assert_eq!(d.rerank_status, RerankStatus::FallbackFused);
        assert!(
            d.warnings
                .iter()
                .any(|w| w.contains("fused order was kept")),
            "{:?}",
            d.warnings
        );
        let order = |r: &SearchResponse| {
            r.results
                .iter()
                .map(|x| x.product_id.clone())
                .collect::<Vec<_>>()
        };
        assert_eq!(order(&r), order(&fused));
        assert!(
            elapsed
                < Duration::from_millis(300 + 200)
                    + Duration::from_millis(d.timings_ms["arms"] as u64),
            "{elapsed:?}"
        );
    }
}

#[tokio::test]
async fn every_pool_member_has_a_receipt_and_a_failed_receipt_serves_nothing() {
    let db = TestDb::with_sample("receipt").await;
    let c = ctx(&db, RetrievalProfile::default());
    // The receipt tables are the owner's to read.
    let rt = db.owner().await;
    let r = run(
        &c,
        json!({"query": "espresso machine", "limit": 7, "authorized_limit": 3, "session_id": "s-1",
                           "include_diagnostics": true}),
    )
    .await
    .unwrap();
    let pool = r.diagnostics.as_ref().unwrap().pool_size as i64;
    assert_eq!(pool, 50);
    let row = rt
        .query_one(
            "SELECT count(*), count(served_rank), count(*) FILTER (WHERE granted),
                    min(pre_rerank_rank), max(pre_rerank_rank), max(served_rank)
             FROM receipts.search_candidates WHERE search_event_id = $1",
            &[&r.search_event_id],
        )
        .await
        .unwrap();
    assert_eq!(row.get::<_, i64>(0), pool);
    assert_eq!(row.get::<_, i64>(1), 7);
    assert_eq!(row.get::<_, i64>(2), 3);
    assert_eq!(
        (row.get::<_, Option<i32>>(3), row.get::<_, Option<i32>>(4)),
        (Some(1), Some(50))
    );
    assert_eq!(row.get::<_, Option<i32>>(5), Some(7));
    let granted: Vec<bool> = r.results.iter().map(|x| x.granted).collect();
    assert_eq!(granted, vec![true, true, true, false, false, false, false]);
    let ev = rt
        .query_one(
            "SELECT principal, session_id, query_text, result_limit, authorized_limit, strategy, (profile->>'rrf_k')::float8::text, timings_ms ? 'arms'
             FROM receipts.search_events WHERE search_event_id = $1",
            &[&r.search_event_id],
        )
        .await
        .unwrap();
    assert_eq!(ev.get::<_, String>(0), "anonymous");
    assert_eq!(ev.get::<_, Option<String>>(1).as_deref(), Some("s-1"));
    assert_eq!(
        ev.get::<_, Option<String>>(2).as_deref(),
        Some("espresso machine")
    );
    assert_eq!(
        (ev.get::<_, i32>(3), ev.get::<_, Option<i32>>(4)),
        (7, Some(3))
    );
    assert_eq!(ev.get::<_, Option<String>>(6).as_deref(), Some("60"));
    assert!(ev.get::<_, bool>(7));

    // Make the pool's write fail: the event's insert succeeds, the
    // candidates' insert fails, the transaction rolls back.
    db.owner()
        .await
        .batch_execute(
            "CREATE FUNCTION receipts.refuse_candidates() RETURNS trigger LANGUAGE plpgsql
                 AS $$BEGIN RAISE EXCEPTION 'candidates refused by the test'; END$$;
             CREATE TRIGGER refuse_candidates AFTER INSERT ON receipts.search_candidates
                 FOR EACH STATEMENT EXECUTE FUNCTION receipts.refuse_candidates()",
        )
        .await
        .unwrap();
    let c = ctx(&db, RetrievalProfile::default());
    let before = events(&rt).await;
    let err = run(&c, json!({"query": "espresso machine"}))
        .await
        .unwrap_err();
    assert_eq!(err.status(), 503);
    assert_eq!(err.body()["error"]["code"], "unavailable");
    assert!(
        !err.body().to_string().contains("refused"),
        "internals leaked: {}",
        err.body()
    );
    assert_eq!(events(&rt).await, before, "an event row was left behind");
}

#[tokio::test]
async fn bad_input_gets_a_stable_400_and_writes_nothing() {
    let db = TestDb::with_sample("badinput").await;
    let c = ctx(&db, RetrievalProfile::default());
    let rt = db.owner().await;
    let long = "x".repeat(1_001);
    let cases: Vec<(Value, &str, Option<&str>)> = vec![
        (json!([1, 2]), "invalid_json", None),
        (json!("query"), "invalid_json", None),
        (json!({}), "invalid_argument", Some("query")),
        (json!({"query": "   "}), "invalid_argument", Some("query")),
        (json!({"query": 42}), "invalid_argument", Some("query")),
        (json!({"query": long}), "invalid_argument", Some("query")),
        (
            json!({"query": "x", "limit": 0}),
            "invalid_argument",
            Some("limit"),
        ),
        (
            json!({"query": "x", "limit": 51}),
            "invalid_argument",
            Some("limit"),
        ),
        (
            json!({"query": "x", "limit": "10"}),
            "invalid_argument",
            Some("limit"),
        ),
        (
            json!({"query": "x", "limit": 2.5}),
            "invalid_argument",
            Some("limit"),
        ),
        (
            json!({"query": "x", "limit": 5, "authorized_limit": 6}),
            "invalid_argument",
            Some("authorized_limit"),
        ),
        (
            json!({"query": "x", "authorized_limit": -1}),
            "invalid_argument",
            Some("authorized_limit"),
        ),
        (
            json!({"query": "x", "rerank": "yes"}),
            "invalid_argument",
            Some("rerank"),
        ),
        (
            json!({"query": "x", "include_diagnostics": 1}),
            "invalid_argument",
            Some("include_diagnostics"),
        ),
        (
            json!({"query": "x", "colour": "red"}),
            "unknown_field",
            Some("colour"),
        ),
        (
            json!({"query": "x", "filters": {"colour": "red"}}),
            "unknown_field",
            Some("filters.colour"),
        ),
        (
            json!({"query": "x", "filters": []}),
            "invalid_argument",
            Some("filters"),
        ),
        (
            json!({"query": "x", "filters": {"min_price_cents": -1}}),
            "invalid_argument",
            Some("filters.min_price_cents"),
        ),
        (
            json!({"query": "x", "filters": {"min_price_cents": 500, "max_price_cents": 100}}),
            "invalid_argument",
            Some("filters.max_price_cents"),
        ),
        (
            json!({"query": "x", "filters": {"min_rating": 6}}),
            "invalid_argument",
            Some("filters.min_rating"),
        ),
        (
            json!({"query": "x", "filters": {"availability": "sometimes"}}),
            "invalid_argument",
            Some("filters.availability"),
        ),
        (
            json!({"query": "x", "filters": {"in_stock_only": "true"}}),
            "invalid_argument",
            Some("filters.in_stock_only"),
        ),
        (
            json!({"query": "x", "filters": {"attributes": {"size": {"nested": 1}}}}),
            "invalid_argument",
            Some("filters.attributes"),
        ),
        (
            json!({"query": "x", "filters": {"attributes": {"tags": ["a"]}}}),
            "invalid_argument",
            Some("filters.attributes"),
        ),
        (
            json!({"query": "x", "filters": {"attributes": "size=L"}}),
            "invalid_argument",
            Some("filters.attributes"),
        ),
        (
            json!({"query": "x", "session_id": 7}),
            "invalid_argument",
            Some("session_id"),
        ),
        (
            json!({"query": "x\u{0000}y"}),
            "invalid_argument",
            Some("query"),
        ),
    ];
    assert!(cases.len() >= 20);
    for (body, code, field) in &cases {
        let err = run(&c, body.clone()).await.expect_err(&body.to_string());
        assert_eq!(err.status(), 400, "{body}");
        let env = err.body();
        assert_eq!(env["error"]["code"], *code, "{body}: {env}");
        assert_eq!(env["error"]["field"].as_str(), *field, "{body}: {env}");
        assert!(env["error"]["message"]
            .as_str()
            .is_some_and(|m| !m.is_empty()));
    }
    assert_eq!(events(&rt).await, 0, "bad input wrote an event");
}

#[tokio::test]
async fn metadata_only_results_carry_null_scores_and_a_filter_reason() {
    let db = TestDb::with_sample("metadata").await;
    let c = ctx(&db, RetrievalProfile::default()).with_reranker(Arc::new(rerankers::Reverse));
    let body = json!({"filters": {"category_key": "kettles", "in_stock_only": true}, "limit": 20, "include_diagnostics": true});
    let r = run(&c, body.clone()).await.unwrap();
    assert_eq!(r.strategy.as_str(), "metadata_only");
    assert_eq!(r.results.len(), 20);
    for x in &r.results {
        assert_eq!(x.score, None);
        assert_eq!(x.match_reason, "filter");
        assert_eq!(x.category_key, "kettles");
    }
    let json = serde_json::to_value(&r).unwrap();
    assert!(json["results"][0]["score"].is_null());
    assert_eq!(
        r.diagnostics.as_ref().unwrap().rerank_status,
        RerankStatus::SkippedMetadataOnly
    );
    // Deterministic: the same request gives the same order.
    let again = run(&c, body).await.unwrap();
    let ids = |r: &SearchResponse| {
        r.results
            .iter()
            .map(|x| x.product_id.clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(ids(&r), ids(&again));
}

#[tokio::test]
async fn a_filters_only_search_walks_its_order_index_and_serves_that_order() {
    // Migration 0010: with a broad filter the statement walks the index in
    // the served order and stops at the pool's size, instead of sorting
    // every eligible row.
    let db = TestDb::with_sample("metadata_order").await;
    let rt = db.runtime().await;
    let filters = Filters {
        in_stock_only: true,
        ..Default::default()
    };
    let elig = Eligibility::new(&filters);
    let pool = RetrievalProfile::default().pool_size as i64;
    let plan = texts(
        &rt,
        &format!("EXPLAIN {}", arms::METADATA_ONLY_SQL),
        &elig.params(&[&pool]),
    )
    .await
    .join("\n");
    assert!(plan.contains("projection_metadata_order_idx"), "{plan}");
    assert!(!plan.contains("Sort"), "{plan}");

    // The order, computed here from every eligible row: rating best first
    // (unrated last), then price, then product id.
    let mut rows: Vec<(String, Option<f32>, i64)> = rt
        .query(
            "SELECT product_id, rating, price_cents FROM search.product_projection WHERE in_stock",
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2)))
        .collect();
    rows.sort_by(|a, b| {
        let rating = match (a.1, b.1) {
            (Some(x), Some(y)) => y.total_cmp(&x),
            (Some(_), None) => std::cmp::Ordering::Less,
            (None, Some(_)) => std::cmp::Ordering::Greater,
            (None, None) => std::cmp::Ordering::Equal,
        };
        rating.then(a.2.cmp(&b.2)).then_with(|| a.0.cmp(&b.0))
    });
    let c = ctx(&db, RetrievalProfile::default());
    let r = run(&c, json!({"filters": {"in_stock_only": true}, "limit": 20}))
        .await
        .unwrap();
    assert_eq!(r.strategy.as_str(), "metadata_only");
    let served: Vec<&str> = r.results.iter().map(|x| x.product_id.as_str()).collect();
    let expected: Vec<&str> = rows.iter().take(20).map(|x| x.0.as_str()).collect();
    assert_eq!(served, expected);
}

#[tokio::test]
async fn the_back_off_ranks_products_holding_more_of_the_query_first() {
    let db = TestDb::with_sample("backoff_order").await;
    let mut c = db.runtime().await;
    let tx = c.transaction().await.unwrap();
    let q = "stainless steel zzyzxnotaword";
    let holds = |id: String, tsq: &'static str| {
        let tx = &tx;
        async move {
            tx.query_one(
                "SELECT document @@ to_tsquery('english', $2) FROM search.product_projection
                 WHERE product_id = $1",
                &[&id, &tsq],
            )
            .await
            .unwrap()
            .get::<_, bool>(0)
        }
    };
    // With the first page filled by the products holding both words (92 of
    // the sample catalog's, without "insulated"), the back-off stops there.
    let profile = RetrievalProfile::default();
    let elig = Eligibility::with_query(&Filters::default(), Some("x -insulated"));
    let first = arms::lexical(&tx, &elig, q, &profile).await.unwrap();
    assert_eq!(
        first.mode,
        Some(ArmMode::Lexical(LexicalMode::Backoff {
            required: 2,
            of: 2
        }))
    );
    for (id, _) in &first.candidates {
        assert!(holds(id.clone(), "stainless & steel").await, "{id}");
    }
    // Asked for more than they fill, it goes on to either word, and every
    // product holding both still ranks before any holding one.
    let wide = RetrievalProfile {
        lexical_enough: 120,
        ..RetrievalProfile::default()
    };
    let more = arms::lexical(&tx, &elig, q, &wide).await.unwrap();
    assert_eq!(
        more.mode,
        Some(ArmMode::Lexical(LexicalMode::Backoff {
            required: 1,
            of: 2
        }))
    );
    assert!(more.returned > first.returned);
    let mut both = Vec::new();
    for (id, _) in &more.candidates {
        assert!(holds(id.clone(), "stainless | steel").await, "{id}");
        both.push(holds(id.clone(), "stainless & steel").await);
    }
    assert_eq!(both.iter().filter(|b| **b).count(), first.returned);
    assert!(
        both.windows(2).all(|w| w[0] || !w[1]),
        "a product holding both words ranks after one holding one: {both:?}"
    );
}

#[tokio::test]
async fn a_code_stays_in_the_back_off_and_a_variant_word_alone_never_serves() {
    let db = TestDb::with_sample("backoff_code").await;
    let mut c = db.runtime().await;
    let tx = c.transaction().await.unwrap();
    // A product-line code of a "Pro" model, asked for as a "Plus".
    let code: String = tx
        .query_one(
            "SELECT substring(identity_text from '([a-z]{4}-[0-9]{4}) pro ')
             FROM search.product_projection
             WHERE identity_text ~ '[a-z]{4}-[0-9]{4} pro '
             ORDER BY product_id LIMIT 1",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    let q = format!("{code} Plus");
    let holders = texts(
        &tx,
        "SELECT product_id FROM search.product_projection
         WHERE document @@ plainto_tsquery('english', $1) ORDER BY product_id",
        &[&code],
    )
    .await;
    assert!(!holders.is_empty());
    let count = |sql: &'static str, p: i64| {
        let tx = &tx;
        async move { tx.query_one(sql, &[&p]).await.unwrap().get::<_, i64>(0) }
    };
    let cheapest: i64 = tx
        .query_one(
            "SELECT min(price_cents) FROM search.product_projection
             WHERE document @@ plainto_tsquery('english', $1)",
            &[&code],
        )
        .await
        .unwrap()
        .get(0);
    let says_plus = "SELECT count(*) FROM search.product_projection
                     WHERE document @@ plainto_tsquery('english', 'plus') AND price_cents < $1";
    let plus_anywhere = count(says_plus, i64::MAX).await;
    let plus_eligible = count(says_plus, cheapest).await;
    assert!(
        plus_eligible > 10,
        "{plus_eligible} eligible products say plus"
    );
    // A scan budget "plus" exceeds: it is a variant word here.
    let profile = RetrievalProfile {
        lexical_scan_budget: plus_anywhere,
        ..RetrievalProfile::default()
    };
    let lexical = |filters: Filters, q: String, profile: RetrievalProfile| {
        let tx = &tx;
        async move {
            let elig = Eligibility::with_query(&filters, Some(&q));
            arms::lexical(tx, &elig, &q, &profile).await.unwrap()
        }
    };
    let mode = |m: &Option<ArmMode>| m.map(|m| m.to_string()).unwrap_or_default();
    // No product holds both words: the code's products, and only them.
    let any = lexical(Filters::default(), q.clone(), profile.clone()).await;
    assert_eq!(mode(&any.mode), "backoff_code_only", "{q}");
    let mut got: Vec<String> = any.candidates.iter().map(|(id, _)| id.clone()).collect();
    got.sort();
    assert_eq!(got, holders, "{q}");
    // Priced out of reach, the code's products leave nothing, though
    // eligible products say "plus".
    let cheap = Filters {
        max_price_cents: Some(cheapest - 1),
        ..Filters::default()
    };
    let none = lexical(cheap.clone(), q.clone(), profile.clone()).await;
    assert_eq!(mode(&none.mode), "backoff_code_only", "{q}");
    assert_eq!(none.returned, 0, "{:?}", none.candidates);
    // A word the arm can rank all of still serves after the code.
    let roomy = RetrievalProfile {
        lexical_scan_budget: plus_anywhere + 1,
        ..RetrievalProfile::default()
    };
    let after = lexical(cheap.clone(), q.clone(), roomy).await;
    assert_eq!(mode(&after.mode), "backoff_any_term", "{q}");
    let limit = RetrievalProfile::default().lexical_limit;
    assert_eq!(after.returned as i64, plus_eligible.min(limit));
    // A code no product holds is no anchor: the back-off goes on to any
    // word, as for any query.
    let unknown = lexical(cheap, "ZZZQ-9999 Plus".to_string(), profile).await;
    assert_eq!(mode(&unknown.mode), "backoff_any_term");
    assert!(unknown.returned > 10, "{}", unknown.returned);
}

#[tokio::test]
async fn a_relaxed_step_matches_exactly_the_documents_holding_k_of_the_terms() {
    let db = TestDb::with_sample("backoff_k_of_n").await;
    let c = db.runtime().await;
    // Words from every field, one of them hyphenated (several lexemes).
    let q = "compact quiet wireless stainless steel desk lamp sit-stand";
    let budget = RetrievalProfile::default().lexical_scan_budget;
    let unfiltered = Eligibility::new(&Filters::default());
    let relax = arms::Relaxation::of(&c, &arms::lexical_terms(q).positive, budget, &unfiltered)
        .await
        .unwrap();
    let terms = &relax.present;
    assert_eq!(terms.len(), 8, "{terms:?}");
    let mut sizes = Vec::new();
    for k in 1..=terms.len() {
        let step = arms::at_least(terms, k);
        let by_step = texts(
            &c,
            "SELECT product_id FROM search.product_projection
             WHERE document @@ $1::text::tsquery ORDER BY product_id",
            &[&step],
        )
        .await;
        let by_count = texts(
            &c,
            "SELECT product_id FROM search.product_projection pp
             WHERE (SELECT count(*) FROM unnest($1::text[]) AS t (q)
                    WHERE pp.document @@ t.q::tsquery) >= $2
             ORDER BY product_id",
            &[terms, &(k as i64)],
        )
        .await;
        assert_eq!(by_step, by_count, "at least {k} of {terms:?}");
        sizes.push(by_step.len());
    }
    // From thousands holding any one term down to none holding all.
    assert!(
        sizes[0] > 1_000 && sizes.windows(2).all(|w| w[0] >= w[1]),
        "{sizes:?}"
    );
    assert!(sizes.iter().filter(|n| **n > 0).count() >= 3, "{sizes:?}");
}

/// A relaxed step ranks its matches against the disjunction of the terms
/// they hold a lexeme of (`sql/lexical_relaxed.sql`): a domain's products
/// seldom hold another domain's words, and each term ts_rank_cd is given
/// costs it time whether a document holds it or not. The scores must stay
/// those of the disjunction of every term the catalog holds.
#[tokio::test]
async fn the_back_off_scores_its_matches_as_against_every_term_the_catalog_holds() {
    let db = TestDb::with_sample("backoff_ranking").await;
    let c = db.runtime().await;
    let profile = RetrievalProfile::default();
    // Words of the outdoor domain beside words every domain holds, and a
    // hyphenated word whose parts the office domain holds apart.
    let queries = [
        "Water Bottle keeping drinks icy cold all day",
        "sit-stand desk water bottle for cold drinks",
        "insulated bottle that keeps water cold on a long day",
    ];
    let mut shapes = vec![Filters::default()];
    for domain in ["electronics", "office", "home_kitchen", "outdoor"] {
        shapes.push(Filters {
            domain: Some(domain.into()),
            ..Default::default()
        });
    }
    shapes.push(Filters {
        domain: Some("electronics".into()),
        max_price_cents: Some(20_000),
        ..Default::default()
    });
    let (mut served, mut unheld) = (0, 0);
    for filters in &shapes {
        let elig = Eligibility::new(filters);
        for q in queries {
            let arm = arms::lexical(&c, &elig, q, &profile).await.unwrap();
            if arm.mode == Some(ArmMode::Lexical(LexicalMode::Strict)) {
                continue;
            }
            let budget = profile.lexical_scan_budget;
            let relax = arms::Relaxation::of(&c, &arms::lexical_terms(q).positive, budget, &elig)
                .await
                .unwrap();
            let every = arms::at_least(&relax.present, 1);
            let ids: Vec<String> = arm.candidates.iter().map(|(id, _)| id.clone()).collect();
            let expected: std::collections::HashMap<String, f64> = c
                .query(
                    "SELECT product_id, ts_rank_cd(document, $1::text::tsquery, 32)::float8
                     FROM search.product_projection WHERE product_id = ANY ($2)",
                    &[&every, &ids],
                )
                .await
                .unwrap()
                .iter()
                .map(|r| (r.get(0), r.get(1)))
                .collect();
            assert!(!arm.candidates.is_empty(), "{q} {filters:?}");
            for (id, score) in &arm.candidates {
                assert_eq!(Some(score), expected.get(id), "{id} for {q:?} {filters:?}");
            }
            served += 1;
            // The terms the filter's domain holds none of: left out of
            // the ranking query.
            for term in &relax.present {
                let holders: i64 = c
                    .query_one(
                        "SELECT count(*) FROM search.product_projection
                         WHERE document @@ $1::text::tsquery AND ($2::text IS NULL OR domain = $2)",
                        &[term, &filters.domain],
                    )
                    .await
                    .unwrap()
                    .get(0);
                unheld += usize::from(holders == 0);
            }
        }
    }
    assert!(served >= 10, "only {served} relaxed steps served");
    assert!(unheld >= 6, "only {unheld} terms the domain lacks");
}

/// A lexical step that any one of the query's terms satisfies (the
/// back-off's last steps) ranks by cover density at most
/// `lexical_rank_budget` of its matches: past it, the best of them by
/// `ts_rank`, the lower product id first among equals, and the arm says
/// how many it chose among. The strict query and the steps that need more
/// of the query rank every match, and so does every step at 0. One
/// product's description repeats its words: cover density counts each
/// repeat, `ts_rank` less and less, so it ranks first among all the
/// matches and outside the best by `ts_rank`.
#[tokio::test]
async fn an_any_term_step_past_the_ranking_budget_ranks_the_best_of_its_matches_by_ts_rank() {
    let db = TestDb::with_sample("rank_budget").await;
    let owner = db.owner().await;
    let repeated: String = owner
        .query_one(
            "SELECT product_id FROM search.product_projection
             WHERE NOT document @@ to_tsquery('english', 'bottle | keyboard | water')
             ORDER BY product_id LIMIT 1",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    owner
        .execute(
            "UPDATE catalog.products SET description = repeat('water bottle ', 20)
             WHERE product_id = $1",
            &[&repeated],
        )
        .await
        .unwrap();
    owner
        .execute("SELECT search.refresh_products(ARRAY[$1])", &[&repeated])
        .await
        .unwrap();
    let c = db.runtime().await;
    let bounded = RetrievalProfile {
        lexical_limit: 20,
        lexical_rank_budget: 40,
        ..Default::default()
    };
    bounded.validate().unwrap();
    let every = RetrievalProfile {
        lexical_rank_budget: 0,
        ..bounded.clone()
    };
    // The step's matches, the best `pre` of them by ts_rank (all when
    // `pre` is NULL), ranked by ts_rank_cd against `rank`; and how many
    // matched.
    let expected = |step: String, rank: String, pre: Option<i64>| {
        let c = &c;
        async move {
            let rows = c
                .query(
                    "WITH m AS (
                         SELECT product_id, document FROM search.product_projection
                         WHERE document @@ $1::text::tsquery),
                     pre AS (
                         SELECT * FROM m
                         ORDER BY ts_rank(document, $2::text::tsquery) DESC, product_id
                         LIMIT $3)
                     SELECT product_id, ts_rank_cd(document, $2::text::tsquery, 32)::float8,
                            (SELECT count(*) FROM m)
                     FROM pre ORDER BY 2 DESC, 1 LIMIT 20",
                    &[&step, &rank, &pre],
                )
                .await
                .unwrap();
            let matched: i64 = rows.first().map_or(0, |r| r.get(2));
            let ranked: Vec<(String, f64)> = rows.iter().map(|r| (r.get(0), r.get(1))).collect();
            (ranked, matched)
        }
    };
    let elig = Eligibility::new(&Filters::default());
    let holds = |ranked: &[(String, f64)]| ranked.iter().any(|(id, _)| *id == repeated);

    // The strict query: every match ranked, the repeated product first.
    let strict: String = c
        .query_one(
            "SELECT websearch_to_tsquery('english', 'water bottle')::text",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    let (want, matched) = expected(strict.clone(), strict, None).await;
    assert!(matched > 40, "{matched}");
    assert_eq!(want[0].0, repeated);
    let got = arms::lexical(&c, &elig, "water bottle", &bounded)
        .await
        .unwrap();
    assert_eq!(got.mode, Some(ArmMode::Lexical(LexicalMode::Strict)));
    assert_eq!((got.candidates, got.prescored_matches), (want, None));

    // A step that needs both words the catalog holds (a third it lacks):
    // every match ranked.
    let q = "water bottle zzqxv";
    let relax = arms::Relaxation::of(&c, &arms::lexical_terms(q).positive, 2_000, &elig)
        .await
        .unwrap();
    let (mode, step) = relax.steps()[0].clone();
    assert_eq!(mode, LexicalMode::Backoff { required: 2, of: 2 });
    let (want, matched) = expected(step, arms::at_least(&relax.present, 1), None).await;
    assert!(matched > 40 && holds(&want), "{matched}");
    let got = arms::lexical(&c, &elig, q, &bounded).await.unwrap();
    assert_eq!(got.mode, Some(ArmMode::Lexical(mode)));
    assert_eq!((got.candidates, got.prescored_matches), (want, None));

    // Two words no product holds together: the any-term step, within the
    // budget when it is set, every match at 0.
    let q = "bottle keyboard zzqxv";
    let relax = arms::Relaxation::of(&c, &arms::lexical_terms(q).positive, 2_000, &elig)
        .await
        .unwrap();
    let steps = relax.steps();
    let rank = arms::at_least(&relax.present, 1);
    let (first, _) = expected(steps[0].1.clone(), rank.clone(), None).await;
    assert!(first.is_empty(), "{first:?}");
    let (mode, step) = steps[1].clone();
    assert_eq!(mode, LexicalMode::Backoff { required: 1, of: 2 });
    let (want, matched) = expected(step.clone(), rank.clone(), Some(40)).await;
    let (want_every, _) = expected(step, rank, None).await;
    assert!(matched > 40, "{matched}");
    assert!(
        !holds(&want) && want_every[0].0 == repeated,
        "{want_every:?}"
    );
    let got = arms::lexical(&c, &elig, q, &bounded).await.unwrap();
    assert_eq!(got.mode, Some(ArmMode::Lexical(mode)));
    assert_eq!(
        (got.candidates, got.prescored_matches),
        (want, Some(matched))
    );
    let got = arms::lexical(&c, &elig, q, &every).await.unwrap();
    assert_eq!((got.candidates, got.prescored_matches), (want_every, None));
}

/// A sequential scan may start where the last scan of its table stopped
/// (the server does so for tables larger than a quarter of
/// `shared_buffers`, which a test catalog never is), and a scan budget
/// would then keep other matches on every run: the arms' transactions turn
/// that off, and only for themselves.
#[tokio::test]
async fn the_arms_scan_from_the_first_block_and_leave_the_session_as_it_was() {
    let db = TestDb::with_sample("seqscan_start").await;
    let mut c = db.runtime().await;
    // PostgreSQL's own default for the session, whatever the server sets.
    c.batch_execute("SET synchronize_seqscans = on")
        .await
        .unwrap();
    let profile = RetrievalProfile::default();
    let tx = c.transaction().await.unwrap();
    arms::apply_settings(&tx, &profile).await.unwrap();
    // A back-off step as a sequential scan under its budget, as the
    // planner writes it for terms most documents hold at scale.
    tx.batch_execute("SET LOCAL enable_bitmapscan = off")
        .await
        .unwrap();
    let lexical = arms::lexical(
        &tx,
        &Eligibility::new(&Filters::default()),
        "zzzq wireless",
        &profile,
    )
    .await
    .unwrap();
    assert!(!lexical.candidates.is_empty());
    assert_eq!(seqscan_sync(&tx).await, "off");
    tx.commit().await.unwrap();
    assert_eq!(
        seqscan_sync(&c).await,
        "on",
        "SET LOCAL ends with the transaction"
    );
}

async fn seqscan_sync<C: tokio_postgres::GenericClient>(c: &C) -> String {
    c.query_one("SELECT current_setting('synchronize_seqscans')", &[])
        .await
        .unwrap()
        .get(0)
}

#[tokio::test]
async fn a_negated_term_stays_excluded_in_the_back_off_and_in_every_arm() {
    let db = TestDb::with_sample("negation").await;
    let mut c = db.runtime().await;
    let profile = RetrievalProfile::default();
    let q = "wireless headphones zzyzxnotaword -bluetooth";
    let tx = c.transaction().await.unwrap();
    let elig = Eligibility::with_query(&Filters::default(), Some(q));
    let lexical = arms::lexical(&tx, &elig, "wireless headphones zzyzxnotaword", &profile)
        .await
        .unwrap();
    // The word no product holds drops out of the back-off's steps.
    assert!(
        matches!(
            lexical.mode,
            Some(ArmMode::Lexical(LexicalMode::Backoff { of: 2, .. }))
        ),
        "{:?}",
        lexical.mode
    );
    assert!(
        lexical.returned > 10,
        "the back-off found too little: {}",
        lexical.returned
    );
    let mentions = |ids: Vec<String>| {
        let tx = &tx;
        async move {
            tx.query_one(
                "SELECT count(*) FROM search.product_projection
                 WHERE product_id = ANY ($1) AND document @@ to_tsquery('english', 'bluetooth')",
                &[&ids],
            )
            .await
            .unwrap()
            .get::<_, i64>(0)
        }
    };
    let ids: Vec<String> = lexical
        .candidates
        .iter()
        .map(|(id, _)| id.clone())
        .collect();
    assert_eq!(
        mentions(ids).await,
        0,
        "a negated term came back in the back-off"
    );
    // The strict query excludes it too.
    let strict_q = "headphones -bluetooth";
    let strict = arms::lexical(
        &tx,
        &Eligibility::with_query(&Filters::default(), Some(strict_q)),
        strict_q,
        &profile,
    )
    .await
    .unwrap();
    assert_eq!(strict.mode, Some(ArmMode::Lexical(LexicalMode::Strict)));
    assert!(strict.returned > 0);
    // Without the negation, plenty of candidates mention it: the test can fail.
    let plain = arms::lexical(
        &tx,
        &Eligibility::new(&Filters::default()),
        "wireless headphones bluetooth",
        &profile,
    )
    .await
    .unwrap();
    let plain_ids: Vec<String> = plain.candidates.iter().map(|(id, _)| id.clone()).collect();
    assert!(mentions(plain_ids).await > 0);
    tx.commit().await.unwrap();

    // Through the whole pipeline: no pool member of any arm mentions it.
    let ctx = ctx(&db, profile);
    let r = run(&ctx, json!({"query": "over-ear headphones -bluetooth", "limit": 50, "include_diagnostics": true}))
        .await
        .unwrap();
    let d = r.diagnostics.as_ref().unwrap();
    assert!(d.arms[Arm::Semantic].returned > 0 && d.arms[Arm::Lexical].returned > 0);
    let rt = db.owner().await;
    let leaked: i64 = rt
        .query_one(
            "SELECT count(*) FROM receipts.search_candidates c JOIN search.product_projection p USING (product_id)
             WHERE c.search_event_id = $1 AND p.document @@ to_tsquery('english', 'bluetooth')",
            &[&r.search_event_id],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(leaked, 0, "a negated term reached the pool");

    // How many of an event's pool members hold `word` as a whole word.
    let pool_with = |id: uuid::Uuid, word: &'static str| {
        let rt = &rt;
        async move {
            rt.query_one(
                "SELECT count(*) FROM receipts.search_candidates c JOIN search.product_projection p USING (product_id)
                 WHERE c.search_event_id = $1 AND p.embedding_text ~* ('\\m' || $2 || '\\M')",
                &[&id, &word],
            )
            .await
            .unwrap()
            .get::<_, i64>(0)
        }
    };

    // A negated stop word or inflected word means exactly that word: it
    // neither vanishes ("down" is an English stop word) nor widens by
    // stemming ("lined" must not exclude every product "line").
    for (query, word) in [
        ("sleeping bag -down", "down"),
        ("dotted journal -lined", "lined"),
    ] {
        let r = run(&ctx, json!({"query": query, "limit": 20}))
            .await
            .unwrap();
        assert!(!r.results.is_empty(), "{query}: everything was excluded");
        assert_eq!(
            pool_with(r.search_event_id, word).await,
            0,
            "{query}: a product with the word {word:?} reached the pool"
        );
    }

    // Several negated words exclude a product that holds any one of them,
    // each as a whole word: "-wire" leaves "wired" alone, "-wired" does not.
    for (query, wired_left) in [
        ("over-ear headphones -bluetooth -wire -v2.1", true),
        ("over-ear headphones -v2.1 -wired -bluetooth", false),
    ] {
        let r = run(&ctx, json!({"query": query, "limit": 20}))
            .await
            .unwrap();
        assert!(!r.results.is_empty(), "{query}: everything was excluded");
        let id = r.search_event_id;
        assert_eq!(pool_with(id, "bluetooth").await, 0, "{query}");
        assert_eq!(pool_with(id, "wired").await > 0, wired_left, "{query}");
    }
}

/// `query`'s search (50 results, with diagnostics), its semantic route,
/// eligible estimate and semantic arm.
async fn semantic_of(
    ctx: &Ctx,
    query: &str,
) -> (SearchResponse, Option<String>, Option<i64>, arms::ArmResult) {
    let r = run(
        ctx,
        json!({"query": query, "include_diagnostics": true, "limit": 50}),
    )
    .await
    .unwrap();
    let d = r.diagnostics.clone().unwrap();
    let arm = d.arms[Arm::Semantic].clone();
    (r, d.semantic_route, d.eligible_estimate, arm)
}

#[tokio::test]
async fn a_negated_word_most_products_hold_sends_the_semantic_arm_exact_without_a_count() {
    let db = TestDb::with_sample("negation_bound").await;
    let owner = db.owner().await;
    let held = |word: &'static str| {
        let owner = &owner;
        async move {
            owner
                .query_one(
                    "SELECT products::bigint FROM search.vocabulary WHERE word = $1",
                    &[&word],
                )
                .await
                .unwrap()
                .get::<_, i64>(0)
        }
    };
    let catalog: i64 = owner
        .query_one("SELECT products FROM search.catalog_stats", &[])
        .await
        .unwrap()
        .get(0);
    let (everywhere, most, some) = (held("pick").await, held("true").await, held("plus").await);
    assert_eq!(everywhere, catalog, "every product holds \"pick\"");
    let threshold = RetrievalProfile::default().semantic_exact_threshold;
    assert!(
        catalog - most > threshold && catalog - some > threshold,
        "the default threshold must count with either word"
    );
    // A word every product holds: nothing can be eligible, and the arm
    // says so without testing any row's text for it.
    let c = ctx(&db, RetrievalProfile::default());
    let (r, route, estimate, arm) = semantic_of(&c, "portable speaker -pick").await;
    assert_eq!(route.as_deref(), Some("exact"));
    assert_eq!(
        (estimate, arm.held_by_a_negated_word),
        (Some(0), Some(everywhere))
    );
    assert_eq!(arm.returned, 0);
    assert!(r.results.is_empty());

    // A word held by fewer: the arm counts, as without negated words.
    let (_, route, estimate, arm) = semantic_of(&c, "portable speaker -plus").await;
    assert_eq!(route.as_deref(), Some("hnsw"));
    assert_eq!(
        (estimate, arm.held_by_a_negated_word),
        (Some(threshold + 1), None)
    );

    // Under a threshold the vocabulary's estimate falls within, the arm
    // scores exactly every product without the word, nearest first. (The
    // estimate is below the truth here: the vocabulary also counts the
    // word in products' aliases, which the negation does not read.)
    let wide = RetrievalProfile {
        semantic_exact_threshold: catalog - most + 1,
        ..Default::default()
    };
    let c = ctx(&db, wide.clone());
    let q = "portable speaker -True";
    let (r, route, estimate, arm) = semantic_of(&c, q).await;
    assert_eq!(route.as_deref(), Some("exact"));
    assert_eq!(
        (estimate, arm.held_by_a_negated_word),
        (Some(catalog - most), Some(most))
    );
    let elig = Eligibility::with_query(&Filters::default(), Some(q));
    let eligible: i64 = owner
        .query_one(arms::ELIGIBILITY_SQL, &elig.params(&[]))
        .await
        .unwrap()
        .get(0);
    assert!(eligible > 0, "nothing left to score");
    assert_eq!(arm.returned as i64, eligible.min(wide.semantic_limit));
    let leaked: i64 = owner
        .query_one(
            "SELECT count(*) FROM receipts.search_candidates c JOIN search.product_projection p USING (product_id)
             WHERE c.search_event_id = $1 AND p.embedding_text ~* '\\mtrue\\M'",
            &[&r.search_event_id],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(
        leaked, 0,
        "a product holding the negated word reached the pool"
    );

    // A negated code is no vocabulary word: the arm counts.
    let (_, _, _, arm) = semantic_of(&c, "portable speaker -v2").await;
    assert_eq!(arm.held_by_a_negated_word, None);
}

/// The names of the per-domain partial HNSW indexes.
async fn domain_indexes(c: &Client) -> Vec<String> {
    texts(
        c,
        "SELECT c.relname::text FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
         WHERE i.indrelid = 'search.product_projection'::regclass
           AND c.relname LIKE 'projection\\_embedding\\_hnsw\\_d\\_%' ORDER BY 1",
        &[],
    )
    .await
}

/// Makes `tx` plan with indexes only (no sequential or bitmap scan), so
/// that an ORDER BY of vector distance walks a graph, and returns a
/// catalog vector to walk toward.
async fn walks_by_index(tx: &tokio_postgres::Transaction<'_>) -> pgvector::Vector {
    tx.batch_execute("SET LOCAL enable_seqscan = off; SET LOCAL enable_bitmapscan = off")
        .await
        .unwrap();
    tx.query_one(
        "SELECT embedding FROM search.product_projection WHERE embedding IS NOT NULL LIMIT 1",
        &[],
    )
    .await
    .unwrap()
    .get(0)
}

#[tokio::test]
async fn each_domain_gets_its_own_hnsw_graph_and_a_domain_filter_walks_it() {
    let db = TestDb::with_sample("domain_hnsw").await;
    let mut c = db.owner().await;
    let domains = texts(
        &c,
        "SELECT DISTINCT domain FROM search.product_projection ORDER BY 1",
        &[],
    )
    .await;
    assert!(domains.len() >= 2, "{domains:?}");
    assert_eq!(domain_indexes(&c).await.len(), domains.len());

    // Every graph, the whole catalog's and each domain's, is built with the
    // same parameters (migration 0009).
    let options = texts(
        &c,
        "SELECT c.relname || ' ' || array_to_string(c.reloptions, ',')
         FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am a ON a.oid = c.relam
         WHERE i.indrelid = 'search.product_projection'::regclass AND a.amname = 'hnsw' ORDER BY 1",
        &[],
    )
    .await;
    assert_eq!(options.len(), domains.len() + 1, "{options:?}");
    for o in &options {
        assert!(o.ends_with(" m=16,ef_construction=200"), "{o}");
    }

    // With the domain bound as a parameter (as the arm binds it), the plan
    // walks a partial graph, not the whole-catalog one.
    let tx = c.transaction().await.unwrap();
    let v = walks_by_index(&tx).await;
    let plan = texts(
        &tx,
        "EXPLAIN SELECT product_id FROM search.product_projection
         WHERE embedding IS NOT NULL AND ($1::text IS NULL OR domain = $1)
         ORDER BY embedding <=> $2 LIMIT 150",
        &[&domains[0], &v],
    )
    .await
    .join("\n");
    assert!(plan.contains("projection_embedding_hnsw_d_"), "{plan}");
    tx.rollback().await.unwrap();

    // A domain that disappears loses its index.
    c.execute(
        "DELETE FROM search.product_projection WHERE domain = $1",
        &[&domains[0]],
    )
    .await
    .unwrap();
    c.execute("SELECT search.refresh_domain_indexes()", &[])
        .await
        .unwrap();
    assert_eq!(domain_indexes(&c).await.len(), domains.len() - 1);
}

/// The names of the price ceilings' partial HNSW indexes.
async fn price_indexes(c: &Client) -> Vec<String> {
    texts(
        c,
        "SELECT c.relname::text FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
         WHERE i.indrelid = 'search.product_projection'::regclass
           AND c.relname LIKE 'projection\\_embedding\\_hnsw\\_p\\_%' ORDER BY 1",
        &[],
    )
    .await
}

/// A price rounded up to two significant figures, as a ceiling is.
fn two_figures_up(cents: i64) -> i64 {
    if cents < 100 {
        return cents;
    }
    let unit = 10i64.pow(cents.to_string().len() as u32 - 2);
    (cents + unit - 1) / unit * unit
}

/// Runs `search.refresh_price_indexes` from `min_products` (`None`: its
/// default) and returns how many price graphs the catalog has.
async fn refresh_price_graphs(c: &Client, min_products: Option<i64>) -> i32 {
    let row = match min_products {
        Some(n) => {
            c.query_one("SELECT search.refresh_price_indexes($1)", &[&n])
                .await
        }
        None => {
            c.query_one("SELECT search.refresh_price_indexes()", &[])
                .await
        }
    };
    row.unwrap().get(0)
}

#[tokio::test]
async fn the_cheaper_half_of_the_catalog_gets_a_graph_and_a_maximum_price_under_it_walks_it() {
    let db = TestDb::with_sample("price_hnsw").await;
    let mut c = db.owner().await;
    // The sample catalog is below the size from which the graph is kept.
    assert_eq!(price_indexes(&c).await, Vec::<String>::new());
    assert_eq!(refresh_price_graphs(&c, Some(0)).await, 1);

    // The median (percentile_disc: the first price whose share of the
    // catalog, counted from the cheapest, reaches half), rounded up.
    let mut prices: Vec<i64> = c
        .query("SELECT price_cents FROM search.product_projection", &[])
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    prices.sort_unstable();
    let ceiling = two_figures_up(prices[prices.len().div_ceil(2) - 1]);
    let name = format!("projection_embedding_hnsw_p_{ceiling}");
    assert_eq!(price_indexes(&c).await, vec![name.clone()]);
    assert_eq!(
        texts(
            &c,
            "SELECT pg_get_expr(i.indpred, i.indrelid) FROM pg_index i
             JOIN pg_class c ON c.oid = i.indexrelid WHERE c.relname = $1",
            &[&name],
        )
        .await,
        vec![format!("(price_cents <= ({ceiling})::bigint)")]
    );

    // With the maximum bound as a parameter (as the arm binds it), the plan
    // walks the cheaper half's graph at or under the ceiling, and the whole
    // catalog's above it.
    let tx = c.transaction().await.unwrap();
    let v = walks_by_index(&tx).await;
    let mut walked = Vec::new();
    for max in [ceiling, ceiling + 1] {
        let plan = texts(
            &tx,
            "EXPLAIN SELECT product_id FROM search.product_projection
             WHERE embedding IS NOT NULL AND ($1::bigint IS NULL OR price_cents <= $1)
             ORDER BY embedding <=> $2 LIMIT 150",
            &[&max, &v],
        )
        .await
        .join("\n");
        walked.push(plan);
    }
    assert!(walked[0].contains(&format!("{name} on")), "{}", walked[0]);
    assert!(
        walked[1].contains("projection_embedding_hnsw_idx on"),
        "{}",
        walked[1]
    );
    tx.rollback().await.unwrap();

    // The graph stays while the median lies between two thirds of its
    // ceiling and the ceiling (a refresh that replaced it would hold back
    // searches while the old index is dropped); past that it follows.
    for (scale, kept) in [((4, 5), true), ((1, 2), false)] {
        c.execute(
            "UPDATE search.product_projection SET price_cents = price_cents * $1 / $2",
            &[&(scale.0 as i64), &(scale.1 as i64)],
        )
        .await
        .unwrap();
        assert_eq!(refresh_price_graphs(&c, Some(0)).await, 1);
        let median: i64 = c
            .query_one(
                "SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY price_cents)
                 FROM search.product_projection",
                &[],
            )
            .await
            .unwrap()
            .get(0);
        let now = match kept {
            true => name.clone(),
            false => format!("projection_embedding_hnsw_p_{}", two_figures_up(median)),
        };
        assert!(kept || now != name);
        assert_eq!(price_indexes(&c).await, vec![now], "median {median}");
    }

    // At the default size again, the graph goes.
    assert_eq!(refresh_price_graphs(&c, None).await, 0);
    assert_eq!(price_indexes(&c).await, Vec::<String>::new());
}

/// How many lexemes and how many vocabulary words fail `off`, a condition
/// on their statistics row `s` against `t`: what `holders` (aggregates over
/// each term's holders `pp`) computes from the projection itself. A term
/// missing from its table fails.
async fn terms_off(c: &Client, holders: &str, off: &str) -> (i64, i64) {
    let lexemes = format!(
        "SELECT count(*) FROM (
             SELECT u.lexeme, {holders}
             FROM search.product_projection pp CROSS JOIN LATERAL unnest(pp.document) u
             GROUP BY u.lexeme) t
         LEFT JOIN search.lexeme_stats s ON s.lexeme = t.lexeme
         WHERE s.lexeme IS NULL OR {off}"
    );
    let words = format!(
        "SELECT count(*) FROM (
             SELECT w.word, {holders}
             FROM search.product_projection pp
             CROSS JOIN LATERAL search.vocabulary_words(pp.identity_text, pp.embedding_text) AS w (word)
             GROUP BY w.word) t
         LEFT JOIN search.vocabulary s ON s.word = t.word
         WHERE s.word IS NULL OR {off}"
    );
    let count = |sql: String| async move {
        c.query_one(&sql, &[])
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e}"))
            .get::<_, i64>(0)
    };
    (count(lexemes).await, count(words).await)
}

/// How many lexemes and how many vocabulary words have price bounds that
/// miss a holder's price (`exact`: that are not exactly the lowest and
/// highest price of their holders), counted from the projection itself.
async fn price_bounds_off(c: &Client, exact: bool) -> (i64, i64) {
    let off = match exact {
        true => {
            "s.min_price_cents IS DISTINCT FROM t.lo OR s.max_price_cents IS DISTINCT FROM t.hi"
        }
        false => "NOT (s.min_price_cents <= t.lo AND s.max_price_cents >= t.hi)",
    };
    let holders = "min(pp.price_cents) AS lo, max(pp.price_cents) AS hi";
    terms_off(c, holders, off).await
}

/// Sets product `id`'s catalog row with `update` ($1 the id, $2 `value`)
/// and refreshes its projection by difference, as an import of it does, in
/// one transaction.
async fn import_change(
    c: &mut Client,
    id: &str,
    update: &str,
    value: &(dyn tokio_postgres::types::ToSql + Sync),
) {
    let tx = c.transaction().await.unwrap();
    tx.execute(update, &[&id, value]).await.unwrap();
    mosaic::catalog::load::refresh_projection(&tx, Some(&[id.to_string()]))
        .await
        .unwrap();
    tx.commit().await.unwrap();
}

/// Refreshes the whole projection and what is derived from it, as a load
/// does.
async fn refresh_everything(c: &mut Client) {
    let tx = c.transaction().await.unwrap();
    mosaic::catalog::load::refresh_projection(&tx, None)
        .await
        .unwrap();
    tx.commit().await.unwrap();
}

#[tokio::test]
async fn each_words_price_bounds_hold_every_holder_through_imports() {
    let db = TestDb::with_sample("term_price_bounds").await;
    let mut c = db.owner().await;
    // A full refresh (the load) makes them exact.
    assert_eq!(price_bounds_off(&c, true).await, (0, 0));

    let id: String = c
        .query_one(
            "SELECT product_id FROM catalog.products ORDER BY product_id LIMIT 1",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    let its_lexemes_bounds = "SELECT min(s.min_price_cents), max(s.max_price_cents)
         FROM search.product_projection pp CROSS JOIN LATERAL unnest(pp.document) u
         JOIN search.lexeme_stats s ON s.lexeme = u.lexeme WHERE pp.product_id = $1";
    // An import by difference: the product made cheaper than any, then
    // dearer than any.
    for price in [1i64, 1_000_000_000] {
        let update = "UPDATE catalog.products SET price_cents = $2 WHERE product_id = $1";
        import_change(&mut c, &id, update, &price).await;
        assert_eq!(price_bounds_off(&c, false).await, (0, 0), "at {price}");
    }
    // Bounds only widen by difference: no product costs 1 cent any more,
    // and the product's lexemes still reach down to it.
    let (lo, hi): (i64, i64) = {
        let r = c.query_one(its_lexemes_bounds, &[&id]).await.unwrap();
        (r.get(0), r.get(1))
    };
    assert_eq!((lo, hi), (1, 1_000_000_000));
    assert!(price_bounds_off(&c, true).await != (0, 0));

    // A full refresh makes them exact again.
    refresh_everything(&mut c).await;
    assert_eq!(price_bounds_off(&c, true).await, (0, 0));
}

/// The plan of `sql` with `params`, run (EXPLAIN ANALYZE), one line per row.
async fn analyzed<C: tokio_postgres::GenericClient>(
    c: &C,
    sql: &str,
    params: &[arms::Typed<'_>],
) -> Vec<String> {
    c.query_typed(&format!("EXPLAIN (ANALYZE, COSTS OFF) {sql}"), params)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
        .iter()
        .map(|r| r.get(0))
        .collect()
}

/// Asserts that the analyzed `plan` scans the projection somewhere and
/// never runs any of those scans.
fn assert_reads_no_product(plan: &[String]) {
    let scans: Vec<&String> = plan
        .iter()
        .filter(|l| l.contains("on product_projection"))
        .collect();
    assert!(!scans.is_empty(), "{plan:#?}");
    assert!(
        scans.iter().all(|l| l.contains("never executed")),
        "{plan:#?}"
    );
}

/// Asserts that neither the lexical arm's strict step nor the trigram
/// arm's perfect step runs a scan of the projection for `query` under
/// `elig` (in a transaction that is rolled back).
async fn assert_first_steps_read_no_product(
    c: &mut Client,
    query: &str,
    elig: &Eligibility,
    profile: &RetrievalProfile,
) {
    let query = query.to_string();
    let tx = c.transaction().await.unwrap();
    let (budget, limit) = (profile.lexical_scan_budget, profile.lexical_limit);
    let strict = analyzed(
        &tx,
        arms::LEXICAL_SQL,
        &elig.typed(&[
            (&query, tokio_postgres::types::Type::TEXT),
            (&budget, tokio_postgres::types::Type::INT8),
            (&limit, tokio_postgres::types::Type::INT8),
        ]),
    )
    .await;
    tx.execute("SET LOCAL pg_trgm.word_similarity_threshold = 1", &[])
        .await
        .unwrap();
    let perfect = analyzed(
        &tx,
        arms::TRIGRAM_SQL,
        &elig.typed(&[
            (&query, tokio_postgres::types::Type::TEXT),
            (
                &profile.trigram_scan_budget,
                tokio_postgres::types::Type::INT8,
            ),
            (&query, tokio_postgres::types::Type::TEXT),
        ]),
    )
    .await;
    tx.rollback().await.unwrap();
    for plan in [&strict, &perfect] {
        assert_reads_no_product(plan);
    }
}

/// What the text arms return for each of `queries` (the trigram arm with
/// the words taken as spelled as the catalog spells them, and not), in one
/// transaction that is rolled back; `forget`: with every price bound of the
/// catalog's words and every domain set unknown first.
async fn text_arms(
    c: &mut Client,
    queries: &[String],
    elig: &Eligibility,
    profile: &RetrievalProfile,
    forget: bool,
) -> Vec<String> {
    let tx = c.transaction().await.unwrap();
    if forget {
        tx.batch_execute(
            "UPDATE search.lexeme_stats
                 SET min_price_cents = NULL, max_price_cents = NULL, domains = NULL;
             UPDATE search.vocabulary
                 SET min_price_cents = NULL, max_price_cents = NULL, domains = NULL",
        )
        .await
        .unwrap();
    }
    arms::apply_settings(&tx, profile).await.unwrap();
    let mut out = Vec::new();
    for q in queries {
        let lexical = arms::lexical(&tx, elig, q, profile).await.unwrap();
        out.push(format!(
            "{q}: lexical {:?} {:?} {:?}",
            lexical.mode, lexical.verdict, lexical.candidates
        ));
        for spelled in [true, false] {
            let trigram = arms::trigram(&tx, elig, q, (spelled, None), profile)
                .await
                .unwrap();
            out.push(format!(
                "{q} {spelled}: trigram {:?} {:?} {:?}",
                trigram.mode, trigram.verdict, trigram.candidates
            ));
        }
    }
    tx.rollback().await.unwrap();
    out
}

#[tokio::test]
async fn a_word_no_eligible_product_holds_is_never_looked_up_and_changes_no_arm() {
    let db = TestDb::with_sample("price_gate").await;
    let mut c = db.owner().await;
    // The word whose cheapest holder is the dearest (a lexeme spelled as
    // the word), and a maximum price just under that holder's.
    let r = c
        .query_one(
            "SELECT v.word, s.min_price_cents FROM search.lexeme_stats s
             JOIN search.vocabulary v ON v.word = s.lexeme
             WHERE s.docs >= 20 AND tsvector_to_array(to_tsvector('english', v.word)) = ARRAY[s.lexeme]
             ORDER BY s.min_price_cents DESC, v.word LIMIT 1",
            &[],
        )
        .await
        .unwrap();
    let (word, cheapest): (String, i64) = (r.get(0), r.get(1));
    let max = cheapest - 1;
    // Words held beside it by products the filter admits.
    let others = texts(
        &c,
        "SELECT v.word FROM search.vocabulary v JOIN search.lexeme_stats s ON s.lexeme = v.word
         WHERE v.min_price_cents <= $1 AND s.docs BETWEEN 20 AND 500 AND v.word <> $2
           AND tsvector_to_array(to_tsvector('english', v.word)) = ARRAY[s.lexeme]
         ORDER BY s.docs DESC, v.word LIMIT 3",
        &[&max, &word],
    )
    .await;
    assert_eq!(others.len(), 3, "{others:?}");
    let other = others[0].clone();
    // A product line's code none of whose holders the filter admits either
    // (a query naming a code relaxes its other words around it): a line
    // whose letters no product under the maximum holds.
    let code: String = c
        .query_one(
            "SELECT lower(p.model) FROM catalog.products p
             JOIN search.lexeme_stats s ON s.lexeme = lower(split_part(p.model, '-', 1))
             WHERE p.model ~ '^[A-Za-z]+-[0-9]+$' AND s.min_price_cents > $1
             ORDER BY p.product_id LIMIT 1",
            &[&max],
        )
        .await
        .unwrap()
        .get(0);
    let filters = Filters {
        max_price_cents: Some(max),
        ..Filters::default()
    };
    let elig = Eligibility::new(&filters);
    let profile = RetrievalProfile::default();

    // Neither text arm's statement reads the projection for the word alone.
    assert_first_steps_read_no_product(&mut c, &word, &elig, &profile).await;

    // The arms find exactly what they find with the bounds unknown (NULL:
    // no step skipped), the word alone and beside a word cheaper products
    // hold (its relaxed steps), spelled as the catalog spells them or not.
    let queries = [
        word.clone(),
        format!("{word} {other}"),
        format!("{other} {word}"),
        format!("{code} {word} {}", others.join(" ")),
    ];
    let with_bounds = text_arms(&mut c, &queries, &elig, &profile, false).await;
    let without = text_arms(&mut c, &queries, &elig, &profile, true).await;
    assert_eq!(with_bounds, without);
    // And the relaxed steps did serve: the pair finds the other word's holders.
    assert!(
        with_bounds
            .iter()
            .any(|l| l.contains(": lexical Some(Lexical(Backoff")),
        "{with_bounds:#?}"
    );
}

/// How many lexemes and how many vocabulary words have domains that miss
/// a holder's domain (`exact`: that are not exactly their holders'
/// domains), counted from the projection.
async fn term_domains_off(c: &Client, exact: bool) -> (i64, i64) {
    let off = match exact {
        true => "s.domains IS DISTINCT FROM t.domains",
        false => "NOT (s.domains @> t.domains)",
    };
    let holders = "array_agg(DISTINCT pp.domain ORDER BY pp.domain) AS domains";
    terms_off(c, holders, off).await
}

#[tokio::test]
async fn each_terms_domains_hold_every_holders_domain_through_imports() {
    let db = TestDb::with_sample("term_domains").await;
    let mut c = db.owner().await;
    // A full refresh (the load) makes them exact.
    assert_eq!(term_domains_off(&c, true).await, (0, 0));

    // An import by difference moves a product to another domain: its
    // lexemes now reach that domain too, and still the one it left.
    let r = c
        .query_one(
            "SELECT p.product_id, p.domain,
                    (SELECT min(o.domain) FROM catalog.products o WHERE o.domain <> p.domain)
             FROM catalog.products p ORDER BY p.product_id LIMIT 1",
            &[],
        )
        .await
        .unwrap();
    let (id, from, to): (String, String, String) = (r.get(0), r.get(1), r.get(2));
    let update = "UPDATE catalog.products SET domain = $2 WHERE product_id = $1";
    import_change(&mut c, &id, update, &to).await;
    assert_eq!(term_domains_off(&c, false).await, (0, 0));
    let missing = |sql: &'static str| {
        let (c, id, from, to) = (&c, &id, &from, &to);
        async move {
            c.query_one(sql, &[id, from, to])
                .await
                .unwrap()
                .get::<_, i64>(0)
        }
    };
    let lexemes = missing(
        "SELECT count(*) FROM search.product_projection pp
         CROSS JOIN LATERAL unnest(pp.document) u
         JOIN search.lexeme_stats s ON s.lexeme = u.lexeme
         WHERE pp.product_id = $1 AND NOT s.domains @> ARRAY[$2, $3]",
    );
    let words = missing(
        "SELECT count(*) FROM search.product_projection pp
         CROSS JOIN LATERAL search.vocabulary_words(pp.identity_text, pp.embedding_text) AS w (word)
         JOIN search.vocabulary s ON s.word = w.word
         WHERE pp.product_id = $1 AND NOT s.domains @> ARRAY[$2, $3]",
    );
    assert_eq!((lexemes.await, words.await), (0, 0));
    // Some lexeme only that product held in its old domain keeps it: the
    // sets only widen by difference.
    assert!(term_domains_off(&c, true).await.0 > 0);

    // A full refresh makes them exact again.
    refresh_everything(&mut c).await;
    assert_eq!(term_domains_off(&c, true).await, (0, 0));
}

#[tokio::test]
async fn a_word_no_product_of_the_filters_domain_holds_is_never_looked_up_and_changes_no_text_arm()
{
    let db = TestDb::with_sample("domain_gate").await;
    let mut c = db.owner().await;
    let domain = first_domain(&c).await;
    // Words spelled as their one lexeme, held only outside the domain (as
    // lexemes and as vocabulary words), and words held in it.
    let words = |inside: bool| {
        let (c, domain) = (&c, domain.clone());
        async move {
            texts(
                c,
                "SELECT s.lexeme FROM search.lexeme_stats s
                 JOIN search.vocabulary v ON v.word = s.lexeme
                 WHERE s.docs BETWEEN 20 AND 500
                   AND $2 = ($1 = ANY (s.domains)) AND $2 = ($1 = ANY (v.domains))
                   AND tsvector_to_array(to_tsvector('english', s.lexeme)) = ARRAY[s.lexeme]
                 ORDER BY s.docs DESC, s.lexeme LIMIT 3",
                &[&domain, &inside],
            )
            .await
        }
    };
    let (outside, inside) = (words(false).await, words(true).await);
    assert_eq!(
        (outside.len(), inside.len()),
        (3, 3),
        "{outside:?} {inside:?}"
    );
    let filters = Filters {
        domain: Some(domain.clone()),
        ..Filters::default()
    };
    let elig = Eligibility::new(&filters);
    let profile = RetrievalProfile::default();

    // The words held only elsewhere stand in every step; the others are
    // their own tsquery, as without the filter.
    let mut terms = outside.clone();
    terms.extend(inside.iter().cloned());
    let budget = profile.lexical_scan_budget;
    let relax = arms::Relaxation::of(&c, &terms, budget, &elig)
        .await
        .unwrap();
    let unfiltered =
        arms::Relaxation::of(&c, &terms, budget, &Eligibility::new(&Filters::default()))
            .await
            .unwrap();
    let stand_ins: Vec<&String> = relax
        .present
        .iter()
        .filter(|t| t.contains(arms::NO_ELIGIBLE_HOLDER))
        .collect();
    assert_eq!(stand_ins.len(), 3, "{:?}", relax.present);
    assert_eq!(relax.present[3..], unfiltered.present[3..]);
    assert_eq!(
        relax.steps().iter().map(|(m, _)| *m).collect::<Vec<_>>(),
        unfiltered
            .steps()
            .iter()
            .map(|(m, _)| *m)
            .collect::<Vec<_>>()
    );

    // The lexical arm's strict step and the trigram arm's perfect step for
    // a query that holds a word held elsewhere only read nothing.
    let query = format!("{} {}", inside[0], outside[0]);
    assert_first_steps_read_no_product(&mut c, &query, &elig, &profile).await;

    // The text arms find exactly what they find with the domains unknown
    // (NULL: nothing stands in or is skipped), for the words held elsewhere
    // alone, beside the domain's words, and mixed, spelled as the catalog
    // spells them or not.
    let queries = [
        outside.join(" "),
        format!("{} {}", outside.join(" "), inside[0]),
        format!("{} {} {}", inside[1], outside[0], inside[2]),
        format!("{} {}", inside.join(" "), outside.join(" ")),
    ];
    let known = text_arms(&mut c, &queries, &elig, &profile, false).await;
    let unknown = text_arms(&mut c, &queries, &elig, &profile, true).await;
    assert_eq!(known, unknown);
    // The relaxed steps served: the domain's words found their holders.
    assert!(
        known
            .iter()
            .any(|l| l.contains(": lexical Some(Lexical(Backoff") && !l.contains("[]")),
        "{known:#?}"
    );
}

/// The served results with their scores, for comparing two runs.
fn served(resp: &SearchResponse) -> Vec<(String, Option<f64>, i32)> {
    resp.results
        .iter()
        .map(|r| (r.product_id.clone(), r.score, r.signals.pre_rerank_rank))
        .collect()
}

/// `body` searched in each context, in order.
async fn run_in([a, b, c]: [&Ctx; 3], body: &Value) -> [SearchResponse; 3] {
    [
        run(a, body.clone()).await.unwrap(),
        run(b, body.clone()).await.unwrap(),
        run(c, body.clone()).await.unwrap(),
    ]
}

/// The semantic arm as the receipt of search `id` records it.
async fn stored_semantic(owner: &Client, id: uuid::Uuid) -> Value {
    owner
        .query_one(
            "SELECT arms->'semantic' FROM receipts.search_events WHERE search_event_id = $1",
            &[&id],
        )
        .await
        .unwrap()
        .get(0)
}

/// The domain of the catalog's first product (by id).
async fn first_domain(c: &Client) -> String {
    c.query_one(
        "SELECT domain FROM search.product_projection ORDER BY product_id LIMIT 1",
        &[],
    )
    .await
    .unwrap()
    .get(0)
}

/// Searches that every lane setting must answer alike: unfiltered, a price
/// filter, a typo under a stock filter.
fn lane_bodies() -> Vec<Value> {
    vec![
        json!({"query": "wireless headphones", "include_diagnostics": true}),
        json!({"query": "quiet dishwasher", "filters": {"max_price_cents": 60000},
               "include_diagnostics": true}),
        json!({"query": "runing shoes", "filters": {"in_stock_only": true},
               "include_diagnostics": true, "limit": 20}),
    ]
}

#[tokio::test]
async fn the_arms_answer_the_same_on_one_connection_or_three() {
    let db = TestDb::with_sample("arm_lanes").await;
    let one = ctx(
        &db,
        RetrievalProfile {
            arm_connections: 1,
            ..Default::default()
        },
    );
    let three = ctx(
        &db,
        RetrievalProfile {
            arm_connections: 3,
            ..Default::default()
        },
    );
    // A one-connection pool (a Lambda container) has no spare connection.
    let lambda = Ctx::from_url(&db.runtime_url(), 1, RetrievalProfile::default())
        .unwrap()
        .with_embedder(three.embedder.clone().unwrap());
    let owner = db.owner().await;
    let mut bodies = lane_bodies();
    bodies.push(json!({"query": "espresso machine -manual", "include_diagnostics": true}));
    for body in bodies {
        let [a, b, c] = run_in([&one, &three, &lambda], &body).await;
        assert!(!a.results.is_empty(), "{body}");
        assert_eq!(served(&a), served(&b), "{body}");
        assert_eq!(served(&a), served(&c), "{body}");
        let lanes = |r: &SearchResponse| {
            let d = r.diagnostics.as_ref().unwrap();
            Arm::ALL.map(|arm| d.arms[arm].connection)
        };
        assert_eq!(lanes(&a), [Some(0); 3], "{body}");
        assert_eq!(lanes(&b), [Some(0), Some(1), Some(2)], "{body}");
        assert_eq!(lanes(&c), [Some(0); 3], "{body}");
        // The receipt says which connection ran each arm.
        let stored: Vec<i64> = owner
            .query_one(
                "SELECT ARRAY[(arms->'lexical'->>'connection')::bigint,
                              (arms->'trigram'->>'connection')::bigint,
                              (arms->'semantic'->>'connection')::bigint]
                 FROM receipts.search_events WHERE search_event_id = $1",
                &[&b.search_event_id],
            )
            .await
            .unwrap()
            .get(0);
        assert_eq!(stored, vec![0, 1, 2]);
    }
}

#[tokio::test]
async fn the_semantic_arm_starts_beside_the_understanding_not_after_it() {
    let db = TestDb::with_sample("semantic_beside_understanding").await;
    let c = ctx(
        &db,
        RetrievalProfile {
            statement_timeout_ms: 60_000,
            ..Default::default()
        },
    );
    // The understanding looks a word up in the catalog's vocabulary (an
    // English word it leaves alone), and the text arms start after it: a
    // lock on the vocabulary holds all three back. The semantic arm reads
    // neither, on a lane of its own.
    let mut owner = db.owner().await;
    let lock = owner.transaction().await.unwrap();
    lock.batch_execute("LOCK TABLE search.vocabulary IN ACCESS EXCLUSIVE MODE")
        .await
        .unwrap();
    let observer = db.runtime().await;
    let body = json!({"query": "wireles headphones", "include_diagnostics": true});
    let pending = tokio::spawn({
        let c = c.clone();
        async move { run(&c, body).await }
    });
    let deadline = Instant::now() + Duration::from_secs(30);
    let seen = loop {
        let now = mosaic_integration_tests::locks::running(&observer, &db).await;
        let understanding_waits = now
            .iter()
            .any(|s| s.starts_with("active Lock: -- Query understanding"));
        let semantic = now.iter().any(|s| {
            let query = s.split_once(": ").map_or("", |(_, q)| q);
            query.starts_with("-- Selectivity probe of the semantic arm")
                || query.starts_with("-- Semantic arm")
        });
        if understanding_waits && semantic {
            break now;
        }
        assert!(
            Instant::now() < deadline,
            "no statement of the semantic arm while the understanding waits: {now:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    // The text arms have not started: they search for the understood query.
    assert!(
        !seen
            .iter()
            .any(|s| s.contains("-- Lexical arm") || s.contains("-- Typo-tolerant arm")),
        "{seen:?}"
    );
    lock.rollback().await.unwrap();
    let r = pending.await.unwrap().unwrap();
    assert!(!r.results.is_empty());
    let arms = &r.diagnostics.as_ref().unwrap().arms;
    assert_eq!(arms[Arm::Semantic].connection, Some(2));
    assert!(arms[Arm::Semantic].returned > 0);
    assert!(arms[Arm::Lexical].returned > 0);
}

#[tokio::test]
async fn the_domain_walks_answer_the_same_on_a_fourth_connection() {
    let db = TestDb::with_sample("domain_walk_lane").await;
    // The sample catalog is below the size the walks start at by default.
    let walks = RetrievalProfile {
        semantic_domain_walk_min_rows: 0,
        ..Default::default()
    };
    let profile = |arm_connections| RetrievalProfile {
        arm_connections,
        ..walks.clone()
    };
    let (one, three, four) = (
        ctx(&db, profile(1)),
        ctx(&db, profile(3)),
        ctx(&db, profile(4)),
    );
    let owner = db.owner().await;
    let domains = domain_count(&owner).await;
    for body in lane_bodies() {
        let runs = run_in([&one, &three, &four], &body).await;
        assert!(!runs[0].results.is_empty(), "{body}");
        for (r, walks_lane) in runs.iter().zip([0, 2, 3]) {
            assert_eq!(served(r), served(&runs[0]), "{body}");
            let semantic = &r.diagnostics.as_ref().unwrap().arms[Arm::Semantic];
            assert_eq!(semantic.mode.unwrap().to_string(), "hnsw_domain_walks");
            assert_eq!(semantic.domain_walks, Some(domains as usize), "{body}");
            assert_eq!(semantic.walks_connection, Some(walks_lane), "{body}");
        }
        // The receipt says where the walks ran.
        let stored = stored_semantic(&owner, runs[2].search_event_id).await;
        assert_eq!(stored["connection"], 2, "{stored}");
        assert_eq!(stored["walks_connection"], 3, "{stored}");
        assert_eq!(stored["domain_walks"], domains, "{stored}");
    }
    // A domain filter walks one graph: no domain walks, nothing recorded.
    let one_domain = first_domain(&owner).await;
    let r = run(
        &four,
        json!({"query": "wireless headphones", "filters": {"domain": one_domain},
               "include_diagnostics": true}),
    )
    .await
    .unwrap();
    let semantic = &r.diagnostics.as_ref().unwrap().arms[Arm::Semantic];
    assert_eq!(semantic.domain_walks, None);
    assert_eq!(semantic.walks_connection, None);
}

/// A catalog of more domains than `semantic_domain_walk_max_domains` walks
/// only the whole catalog's graph; one of at most that many walks every
/// domain's graph. The receipt's profile holds the bound the search ran
/// with.
#[tokio::test]
async fn the_domain_walks_stop_at_a_catalog_of_more_domains_than_the_bound() {
    let db = TestDb::with_sample("domain_walk_bound").await;
    let owner = db.owner().await;
    let domains = domain_count(&owner).await;
    assert!(domains >= 2, "{domains}");
    let bounded = |max| {
        ctx(
            &db,
            RetrievalProfile {
                // The sample catalog is below the size the walks start at.
                semantic_domain_walk_min_rows: 0,
                semantic_domain_walk_max_domains: max,
                arm_connections: 4,
                ..Default::default()
            },
        )
    };
    let body = json!({"query": "wireless headphones", "include_diagnostics": true});
    for (max, walks) in [(0, true), (domains, true), (domains - 1, false), (1, false)] {
        let c = bounded(max);
        let r = run(&c, body.clone()).await.unwrap();
        assert!(!r.results.is_empty());
        // The context remembers the count: a later search of a catalog
        // past the bound takes no lane for walks it will not run.
        assert_eq!(c.catalog.may_walk_domains(&c.profile), walks, "max {max}");
        let semantic = &r.diagnostics.as_ref().unwrap().arms[Arm::Semantic];
        let route = semantic.mode.unwrap().to_string();
        match walks {
            true => {
                assert_eq!(route, "hnsw_domain_walks", "max {max}");
                assert_eq!(semantic.domain_walks, Some(domains as usize), "max {max}");
                assert_eq!(semantic.domains_not_walked, None, "max {max}");
            }
            false => {
                assert_eq!(route, "hnsw", "max {max}");
                assert_eq!(semantic.domain_walks, None, "max {max}");
                // The answer and the receipt say why.
                assert_eq!(semantic.domains_not_walked, Some(domains as usize));
                let stored = stored_semantic(&owner, r.search_event_id).await;
                assert_eq!(stored["domains_not_walked"], domains, "{stored}");
            }
        }
        let profile: Value = owner
            .query_one(
                "SELECT profile FROM receipts.search_events WHERE search_event_id = $1",
                &[&r.search_event_id],
            )
            .await
            .unwrap()
            .get(0);
        assert_eq!(
            profile["semantic_domain_walk_max_domains"], max,
            "{profile}"
        );
    }
}

#[tokio::test]
async fn a_code_s_family_runs_beside_the_walk_on_a_fourth_connection() {
    let db = TestDb::with_sample("family_lane").await;
    let owner = db.owner().await;
    // A model code of the catalog (one with a stem), its product's domain
    // and category: filters that keep its line eligible.
    let rows = owner
        .query(
            "SELECT identity_text, domain, category_key FROM search.product_projection
             ORDER BY product_id LIMIT 50",
            &[],
        )
        .await
        .unwrap();
    let (code, domain, category) = rows
        .iter()
        .find_map(|r| {
            let text: String = r.get(0);
            let code = text
                .split_whitespace()
                .find(|w| mosaic::search::understand::identifier_stem(w).is_some())?
                .to_string();
            Some((code, r.get::<_, String>(1), r.get::<_, String>(2)))
        })
        .expect("the sample's identity texts carry model codes");
    // Every filtered search on the graph route, where the family runs.
    let profile = |arm_connections| RetrievalProfile {
        arm_connections,
        semantic_exact_threshold: 0,
        ..Default::default()
    };
    let (one, three, four) = (
        ctx(&db, profile(1)),
        ctx(&db, profile(3)),
        ctx(&db, profile(4)),
    );
    for filters in [json!({"domain": domain}), json!({"category_key": category})] {
        let body = json!({"query": code, "filters": filters, "include_diagnostics": true});
        let runs = run_in([&one, &three, &four], &body).await;
        let family = |r: &SearchResponse| {
            r.diagnostics.as_ref().unwrap().arms[Arm::Semantic].identifier_family
        };
        assert!(family(&runs[0]).is_some_and(|n| n > 0), "{body}");
        for (r, family_lane) in runs.iter().zip([0, 2, 3]) {
            assert_eq!(served(r), served(&runs[0]), "{body}");
            assert_eq!(family(r), family(&runs[0]), "{body}");
            let semantic = &r.diagnostics.as_ref().unwrap().arms[Arm::Semantic];
            assert_eq!(semantic.mode.unwrap().to_string(), "hnsw", "{body}");
            assert_eq!(semantic.family_connection, Some(family_lane), "{body}");
            assert_eq!(semantic.walks_connection, None, "{body}");
        }
        // The receipt says where the family ran.
        let stored = stored_semantic(&owner, runs[2].search_event_id).await;
        assert_eq!(stored["connection"], 2, "{stored}");
        assert_eq!(stored["family_connection"], 3, "{stored}");
    }
    // Where the arm walks each domain's graph, those walks take the fourth
    // lane and the family follows the walk on the arm's own.
    let walks = ctx(
        &db,
        RetrievalProfile {
            semantic_domain_walk_min_rows: 0,
            ..profile(4)
        },
    );
    let body = json!({"query": code, "include_diagnostics": true});
    let r = run(&walks, body.clone()).await.unwrap();
    let semantic = &r.diagnostics.as_ref().unwrap().arms[Arm::Semantic];
    assert_eq!(semantic.mode.unwrap().to_string(), "hnsw_domain_walks");
    assert!(semantic.identifier_family.is_some(), "{body}");
    assert_eq!(semantic.walks_connection, Some(3));
    assert_eq!(semantic.family_connection, Some(2));
    // Under a domain filter only a query with a code takes the fourth lane
    // (with the far domain's exact scan off, which may take it too).
    let opened = |c: &Ctx| c.pool.status().size;
    let words = ctx(
        &db,
        RetrievalProfile {
            semantic_far_exact_max_rows: 0,
            ..profile(4)
        },
    );
    let in_domain = |query: &str| json!({"query": query, "filters": {"domain": domain}, "include_diagnostics": true});
    let r = run(&words, in_domain("wireless headphones")).await.unwrap();
    assert_eq!(opened(&words), 3);
    let semantic = &r.diagnostics.as_ref().unwrap().arms[Arm::Semantic];
    assert_eq!(semantic.identifier_family, None);
    assert_eq!(semantic.family_connection, None);
    run(&words, in_domain(&code)).await.unwrap();
    assert_eq!(opened(&words), 4);
}

#[tokio::test]
async fn a_catalog_seen_below_the_walks_size_takes_no_fourth_lane() {
    let db = TestDb::with_sample("walks_lane_small").await;
    let owner = db.owner().await;
    let products: i64 = owner
        .query_one("SELECT count(*) FROM search.product_projection", &[])
        .await
        .unwrap()
        .get(0);
    let profile = RetrievalProfile::default();
    assert!(products < profile.semantic_domain_walk_min_rows);
    assert_eq!(profile.arm_connections, 4);
    let one_domain = first_domain(&owner).await;
    let unfiltered = json!({"query": "wireless headphones", "include_diagnostics": true});
    let in_domain = json!({"query": "wireless headphones", "filters": {"domain": one_domain},
                           "include_diagnostics": true});
    let one_category: String = owner
        .query_one(
            "SELECT category_key FROM search.product_projection ORDER BY product_id LIMIT 1",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    let in_category = json!({"query": "wireless headphones", "filters": {"category_key": one_category},
                             "include_diagnostics": true});
    // The connections a context's pool has opened: the search's own and
    // one per extra lane it took.
    let opened = |c: &Ctx| c.pool.status().size;
    // Before any search the catalog's size is unknown: an unfiltered search
    // takes the walks' lane in case they run. They do not, at this size.
    let fresh = ctx(&db, profile.clone());
    assert_eq!(fresh.catalog.known(), None);
    let r = run(&fresh, unfiltered.clone()).await.unwrap();
    assert_eq!(opened(&fresh), 4);
    assert_eq!(fresh.catalog.known(), Some(products));
    let semantic = &r.diagnostics.as_ref().unwrap().arms[Arm::Semantic];
    assert_eq!(semantic.walks_connection, None);
    // So does a search under a domain filter, in case it is far from the
    // domain's products and scans them in two halves.
    let fresh = ctx(&db, profile.clone());
    run(&fresh, in_domain.clone()).await.unwrap();
    assert_eq!(opened(&fresh), 4);
    // Once a search has seen the catalog's size (a category filter takes
    // no fourth lane at any size), no search takes a lane for walks or a
    // scan that cannot run.
    let seen = ctx(&db, profile.clone());
    run(&seen, in_category).await.unwrap();
    assert_eq!(opened(&seen), 3);
    assert_eq!(seen.catalog.known(), Some(products));
    run(&seen, in_domain).await.unwrap();
    assert_eq!(opened(&seen), 3);
    let r = run(&seen, unfiltered.clone()).await.unwrap();
    assert_eq!(opened(&seen), 3);
    let d = r.diagnostics.as_ref().unwrap();
    let lanes: Vec<Option<usize>> = Arm::ALL.iter().map(|a| d.arms[*a].connection).collect();
    assert_eq!(lanes, [Some(0), Some(1), Some(2)]);
    // From the walks' size on, they take it again.
    seen.catalog.remember(profile.semantic_domain_walk_min_rows);
    run(&seen, unfiltered).await.unwrap();
    assert_eq!(opened(&seen), 4);
}

#[tokio::test]
async fn the_semantic_probe_reads_one_index_for_its_usual_filters() {
    // Migrations 0015 and 0019: the selectivity probe counts eligible
    // embedded rows from one partial index under a price range, a domain,
    // or a category with a price band, instead of ANDing the bitmaps of
    // every row of the category and of the price range.
    let db = TestDb::with_sample("probe_indexes").await;
    let rt = db.runtime().await;
    let (category, lo, hi): (String, i64, i64) = {
        let r = rt
            .query_one(
                "SELECT category_key, (percentile_disc(0.35) WITHIN GROUP (ORDER BY price_cents))::bigint,
                        (percentile_disc(0.65) WITHIN GROUP (ORDER BY price_cents))::bigint
                 FROM search.product_projection GROUP BY category_key ORDER BY count(*) DESC, 1 LIMIT 1",
                &[],
            )
            .await
            .unwrap();
        (r.get(0), r.get(1), r.get(2))
    };
    let probe = RetrievalProfile::default().semantic_exact_threshold + 1;
    for (filters, index) in [
        (
            Filters {
                category_key: Some(category.clone()),
                min_price_cents: Some(lo),
                max_price_cents: Some(hi),
                ..Default::default()
            },
            "projection_embedded_category_price_idx",
        ),
        (
            Filters {
                category_key: Some(category.clone()),
                ..Default::default()
            },
            "projection_embedded_category_price_idx",
        ),
        (
            Filters {
                max_price_cents: Some(hi),
                ..Default::default()
            },
            "projection_embedded_price_idx",
        ),
        (
            Filters {
                domain: Some("electronics".into()),
                ..Default::default()
            },
            "projection_embedded_domain_idx",
        ),
    ] {
        let elig = Eligibility::new(&filters);
        let plan = texts(
            &rt,
            &format!("EXPLAIN {}", arms::ELIGIBLE_COUNT_SQL),
            &elig.params(&[&probe]),
        )
        .await
        .join("\n");
        assert!(plan.contains(index), "{filters:?}: {plan}");
        assert!(!plan.contains("BitmapAnd"), "{filters:?}: {plan}");
    }
}

#[tokio::test]
async fn a_trigram_step_checks_a_broad_price_filter_on_its_matches_and_intersects_a_narrow_one() {
    // Migration 0020 (and scripts/db.sh, as the extension's owner) give
    // pg_trgm's word-similarity operators the 0.1% estimate: under half the
    // catalog's prices the step filters the price on each match's row
    // instead of ANDing the price index's bitmap of half the catalog; a
    // narrow band's small bitmap is still intersected.
    let db = TestDb::with_sample("trigram_price").await;
    let mut rt = db.runtime().await;
    let (median, band): (i64, i64) = {
        let r = rt
            .query_one(
                "SELECT (percentile_disc(0.5) WITHIN GROUP (ORDER BY price_cents))::bigint,
                        (percentile_disc(0.51) WITHIN GROUP (ORDER BY price_cents))::bigint
                 FROM search.product_projection",
                &[],
            )
            .await
            .unwrap();
        (r.get(0), r.get(1))
    };
    let estimates = texts(
        &rt,
        "SELECT oprrest::text FROM pg_operator
         WHERE oprname IN ('<%', '%>') AND oprleft = 'text'::regtype AND oprright = 'text'::regtype",
        &[],
    )
    .await;
    assert_eq!(estimates, vec!["contsel", "contsel"]);
    let (q, budget) = ("wireless headphones".to_string(), 500i64);
    for (filters, intersects) in [
        (
            Filters {
                max_price_cents: Some(median),
                ..Default::default()
            },
            false,
        ),
        (
            Filters {
                min_price_cents: Some(median),
                max_price_cents: Some(band),
                ..Default::default()
            },
            true,
        ),
    ] {
        let tx = rt.transaction().await.unwrap();
        let plan = trigram_floor_plan(&tx, &Eligibility::new(&filters), &q, budget).await;
        assert!(plan.contains("<%") || plan.contains("%>"), "{plan}");
        assert_eq!(
            plan.contains("projection_price_idx"),
            intersects,
            "{filters:?}: {plan}"
        );
        tx.rollback().await.unwrap();
    }
}

#[tokio::test]
async fn a_broad_price_filter_is_checked_on_the_lexical_matches_and_every_step_keeps_its_rows() {
    let db = TestDb::with_sample("lexical_price").await;
    let mut rt = db.runtime().await;
    let profile = RetrievalProfile::default();
    let cut: Vec<i64> = {
        let r = rt
            .query_one(
                "SELECT percentile_disc(ARRAY[0.1, 0.5, 0.51, 0.9]) WITHIN GROUP (ORDER BY price_cents)
                 FROM search.product_projection",
                &[],
            )
            .await
            .unwrap();
        r.get(0)
    };
    let (p10, median, band, p90) = (cut[0], cut[1], cut[2], cut[3]);
    let price = |min: Option<i64>, max: Option<i64>| {
        Eligibility::new(&Filters {
            min_price_cents: min,
            max_price_cents: max,
            ..Default::default()
        })
    };
    let ranges = [
        (None, Some(median)),
        (Some(median), Some(band)),
        (Some(p90), None),
        (Some(p10), Some(p90)),
    ];
    let shapes: Vec<Eligibility> = ranges.iter().map(|&(lo, hi)| price(lo, hi)).collect();
    // The share the statistics estimate is the catalog's, within a bucket
    // or two of the histogram (1% each).
    for (elig, (lo, hi)) in shapes.iter().zip(ranges) {
        // A cache of its own each time: the statistics read afresh.
        let stats = mosaic::PriceStatsCache::default();
        let estimate = stats.share(&rt, elig).await.unwrap().unwrap();
        let exact: f64 = rt
            .query_one(
                "SELECT avg((price_cents BETWEEN coalesce($1, price_cents) AND coalesce($2, price_cents))::int)::float8
                 FROM search.product_projection",
                &[&lo, &hi],
            )
            .await
            .unwrap()
            .get(0);
        assert!(
            (estimate.share - exact).abs() <= 0.02,
            "{estimate:?} against {exact}"
        );
        assert_eq!(estimate.rows, 5_000.0);
    }
    assert_eq!(
        mosaic::PriceStatsCache::default()
            .share(&rt, &price(None, None))
            .await
            .unwrap(),
        None
    );

    // Written either way, each step keeps the same matches, modes and
    // verdicts: the strict step, the relaxed ones (long queries, a code, a
    // misspelt word that drops out) and a query with "or" and a negation.
    let queries = [
        "wireless headphones",
        "laptop",
        "kettle",
        "stainless steel kettle with a glass lid and a quiet boil",
        "ergonomic mesh office chair with lumbar support for long days",
        "tent or backpack -ultralight",
        "wirelss headphnes with noise cancelling",
    ];
    let on_rows = Some(arms::PriceShare {
        share: 1.0,
        rows: f64::MAX,
    });
    let tx = rt.transaction().await.unwrap();
    arms::apply_settings(&tx, &profile).await.unwrap();
    let mut relaxed = 0;
    for elig in &shapes {
        let rows = elig.clone().with_price_share(on_rows);
        for q in queries {
            let index = arms::lexical(&tx, elig, q, &profile).await.unwrap();
            let checked = arms::lexical(&tx, &rows, q, &profile).await.unwrap();
            let seen =
                |a: &arms::ArmResult| format!("{:?} {:?} {:?}", a.mode, a.verdict, a.candidates);
            assert_eq!(seen(&index), seen(&checked), "{q}");
            assert_eq!(
                (index.price_checked_on_rows, checked.price_checked_on_rows),
                (None, Some(true))
            );
            relaxed += usize::from(index.mode != Some(ArmMode::Lexical(LexicalMode::Strict)));
        }
    }
    assert!(relaxed >= 4, "only {relaxed} relaxed steps");

    // The plans: the rows' check reads no price index; a narrow band's
    // check through the index intersects it.
    let plan = |sql: String, elig: Eligibility| {
        let tx = &tx;
        async move {
            let (q, budget, limit) = ("laptop".to_string(), 2_000i64, 100i64);
            tx.batch_execute("SET LOCAL enable_seqscan = off")
                .await
                .unwrap();
            texts(
                tx,
                &format!("EXPLAIN {sql}"),
                &elig.params(&[&q, &budget, &limit]),
            )
            .await
            .join("\n")
        }
    };
    let narrow = shapes[1].clone();
    let through = plan(arms::LEXICAL_SQL.to_string(), narrow.clone()).await;
    assert!(through.contains("projection_price_idx"), "{through}");
    let checked = plan(arms::price_on_rows(arms::LEXICAL_SQL), narrow).await;
    assert!(!checked.contains("projection_price_idx"), "{checked}");
    assert!(checked.contains("price_cents + 0"), "{checked}");
    tx.rollback().await.unwrap();
}

/// The plan of one trigram step for `q` at the 0.45 floor, in `tx`.
async fn trigram_floor_plan(
    tx: &tokio_postgres::Transaction<'_>,
    elig: &Eligibility,
    q: &str,
    budget: i64,
) -> String {
    tx.execute(
        "SELECT set_config('pg_trgm.word_similarity_threshold', '0.45', true)",
        &[],
    )
    .await
    .unwrap();
    let sql = format!("EXPLAIN {}", arms::TRIGRAM_SQL);
    texts(tx, &sql, &elig.params(&[&q, &budget, &q]))
        .await
        .join("\n")
}

#[tokio::test]
async fn the_trigram_similarity_runs_after_every_eligibility_condition() {
    // PostgreSQL orders one scan's conditions by declared cost; migration
    // 0007 (and scripts/db.sh, as the extension's owner) declare pg_trgm's
    // word similarity costly, so no ineligible row pays for it. A sequential
    // scan puts every condition in one filter, in evaluation order.
    let db = TestDb::with_sample("trigram_order").await;
    let mut c = db.owner().await;
    let tx = c.transaction().await.unwrap();
    tx.batch_execute(
        "SET LOCAL enable_indexscan = off; SET LOCAL enable_bitmapscan = off;
         SET LOCAL max_parallel_workers_per_gather = 0",
    )
    .await
    .unwrap();
    let filters = Filters {
        domain: Some("electronics".into()),
        in_stock_only: true,
        max_price_cents: Some(50_000),
        ..Default::default()
    };
    let elig = Eligibility::new(&filters);
    let (q, budget) = ("wireless headphones".to_string(), 1000i64);
    let plan = texts(
        &tx,
        &format!("EXPLAIN {}", arms::TRIGRAM_SQL),
        &elig.params(&[&q, &budget, &q]),
    )
    .await
    .join("\n");
    let filter = plan
        .lines()
        .find(|l| l.contains("Filter:") && l.contains("<%"))
        .unwrap_or_else(|| panic!("no trigram filter in\n{plan}"));
    for condition in ["domain =", "in_stock", "price_cents <="] {
        let at = filter
            .find(condition)
            .unwrap_or_else(|| panic!("{condition}: {filter}"));
        assert!(
            at < filter.find("<%").unwrap(),
            "{condition} after <%: {filter}"
        );
    }
    tx.rollback().await.unwrap();
}

#[tokio::test]
async fn a_long_query_whose_floor_is_budget_cut_still_finds_its_closest_match() {
    // A long query starts the trigram arm at its floor. When that step meets
    // its scan budget it has scored matches in physical order only, so the
    // stricter steps must still find the closest match: here the product
    // stored last, which a budget-cut floor never reaches.
    let db = TestDb::with_sample("trigram_floor_first").await;
    let mut c = db.runtime().await;
    let (id, identity): (String, String) = {
        let r = c
            .query_one(
                "SELECT product_id, identity_text FROM search.product_projection
                 ORDER BY ctid DESC LIMIT 1",
                &[],
            )
            .await
            .unwrap();
        (r.get(0), r.get(1))
    };
    let q: String = identity
        .split_whitespace()
        .take(6)
        .collect::<Vec<_>>()
        .join(" ");
    let profile = RetrievalProfile {
        trigram_limit: 10,
        trigram_enough: 10,
        trigram_scan_budget: 10,
        ..Default::default()
    };
    assert!(q.split_whitespace().count() as i64 >= profile.trigram_floor_first_words);
    let floor_only = RetrievalProfile {
        trigram_strict_threshold: profile.trigram_floor,
        trigram_middle_threshold: profile.trigram_floor,
        ..profile.clone()
    };
    let elig = Eligibility::new(&Filters::default());
    let tx = c.transaction().await.unwrap();
    arms::apply_settings(&tx, &profile).await.unwrap();
    let alone = arms::trigram(&tx, &elig, &q, (false, None), &floor_only)
        .await
        .unwrap();
    assert_eq!(
        alone.verdict,
        Verdict::BudgetCut,
        "{q}: the floor must be cut"
    );
    assert!(
        alone.candidates.iter().all(|(c, _)| *c != id),
        "{q}: the premise needs a floor that misses {id}"
    );
    let arm = arms::trigram(&tx, &elig, &q, (false, None), &profile)
        .await
        .unwrap();
    tx.rollback().await.unwrap();
    assert_eq!(arm.verdict, Verdict::BudgetCut);
    assert_eq!(
        arm.candidates.first().map(|(c, _)| c.as_str()),
        Some(id.as_str()),
        "{q}"
    );
    // The stricter steps ran after the floor.
    assert_ne!(arm.mode, alone.mode, "{q}");
}

#[tokio::test]
async fn a_query_of_common_words_is_served_by_its_perfect_matches_at_the_same_scores() {
    // "headphones" is in the identity text of more sample products than the
    // trigram arm's limit: the perfect step fills the arm alone, and its
    // scores are the ones the cascade serves without it.
    let db = TestDb::with_sample("trigram_perfect").await;
    let mut c = db.runtime().await;
    let on = RetrievalProfile::default();
    let off = RetrievalProfile {
        trigram_perfect_first: 0,
        ..Default::default()
    };
    let elig = Eligibility::new(&Filters::default());
    let scores = |r: &arms::ArmResult| r.candidates.iter().map(|(_, s)| *s).collect::<Vec<_>>();
    let mut with_and_without = async |q: &str| {
        let mut run = async |p: &RetrievalProfile| {
            mosaic_devtools::bench::trigram_only(&mut c, &elig, q, p)
                .await
                .unwrap()
        };
        (run(&on).await, run(&off).await)
    };
    let (with, without) = with_and_without("headphones").await;
    assert_eq!(with.mode, Some(ArmMode::Trigram(1.0)));
    assert_eq!(with.verdict, Verdict::Full);
    assert_eq!(with.candidates.len() as i64, on.trigram_limit);
    assert_eq!(scores(&with), scores(&without));
    assert_ne!(without.mode, Some(ArmMode::Trigram(1.0)));

    // A typo has no perfect match: the arm goes on and serves exactly what
    // it serves without the step.
    let (with, without) = with_and_without("headphnes").await;
    assert!(!with.candidates.is_empty());
    assert_eq!(with.candidates, without.candidates);
    assert_eq!(with.mode, without.mode);
    assert_eq!(with.verdict, without.verdict);
}

#[tokio::test]
async fn the_services_word_similarity_equals_pg_trgms_to_the_bit() {
    // The trigram arm scores its matches in the service (search::trgm). Over
    // the sample catalog's identity texts and odd strings, every score must
    // be the very float4 that pg_trgm's word_similarity returns.
    let db = TestDb::with_sample("trgm_port").await;
    let c = db.runtime().await;
    let mut texts_: Vec<String> = texts(
        &c,
        "SELECT identity_text FROM search.product_projection ORDER BY product_id LIMIT 400",
        &[],
    )
    .await;
    let odd = [
        "",
        " ",
        "-",
        "a",
        "ab",
        "a b c",
        "two words",
        "word",
        "WORD words wordy",
        "the the the the",
        "x-1 x-1 x-1 x1",
        "air_fryer air-fryer airfryer",
        "1234 12345 123",
        "Kestrel KESTREL kestrel",
        "!!kestrel--headphones??",
        "aaa aaa aaaa aa a",
        "mini mini pro max mini",
    ];
    texts_.extend(odd.iter().map(|s| s.to_string()));
    let mut queries: Vec<String> = mosaic_devtools::bench::queries(42, 5_000, 240, 11)
        .into_iter()
        .map(|q| q.text.to_lowercase())
        .collect();
    queries.extend(odd.iter().map(|s| s.to_lowercase()));
    queries.extend(
        [
            "kestrl headphones",
            "WH-1000XM5",
            "cheap air fryer",
            "x",
            "zz top",
            "qlLT-1734S",
        ]
        .iter()
        .map(|s| s.to_string()),
    );
    let mut compared = 0usize;
    for q in &queries {
        let expected: Vec<f32> = c
            .query(
                "SELECT word_similarity($1, t) FROM unnest($2::text[]) WITH ORDINALITY AS u (t, i) ORDER BY i",
                &[q, &texts_],
            )
            .await
            .unwrap()
            .iter()
            .map(|r| r.get(0))
            .collect();
        let scorer = mosaic::search::trgm::WordSimilarity::new(q).unwrap();
        for (t, want) in texts_.iter().zip(&expected) {
            let got = scorer.score(t).unwrap();
            assert_eq!(
                got.to_bits(),
                want.to_bits(),
                "word_similarity({q:?}, {t:?}): {got} vs {want}"
            );
            compared += 1;
        }
    }
    assert!(compared > 100_000, "{compared} pairs");
}

#[tokio::test]
async fn the_trigram_arm_serves_pg_trgms_scores_best_first_ascii_or_not() {
    // End to end: the arm's scores are pg_trgm's for the served rows, in
    // order, whether the service scored them (ASCII) or the SQL (a query
    // outside ASCII).
    let db = TestDb::with_sample("trgm_arm").await;
    let mut c = db.runtime().await;
    let profile = RetrievalProfile::default();
    let elig = Eligibility::new(&Filters::default());
    for q in [
        "kestrl headphones",
        "wireless",
        "warm sleeping bag for winter",
        "kestrél headphones",
    ] {
        let tx = c.transaction().await.unwrap();
        arms::apply_settings(&tx, &profile).await.unwrap();
        let arm = arms::trigram(&tx, &elig, q, (false, None), &profile)
            .await
            .unwrap();
        assert!(!arm.candidates.is_empty(), "{q}: no trigram candidates");
        let ids: Vec<String> = arm.candidates.iter().map(|(id, _)| id.clone()).collect();
        let sql: std::collections::HashMap<String, f64> = tx
            .query(
                "SELECT product_id, word_similarity($1, identity_text)::float8
                 FROM search.product_projection WHERE product_id = ANY ($2)",
                &[&q.to_lowercase(), &ids],
            )
            .await
            .unwrap()
            .iter()
            .map(|r| (r.get(0), r.get(1)))
            .collect();
        for (id, score) in &arm.candidates {
            assert_eq!(
                score.to_bits(),
                sql[id].to_bits(),
                "{q}: {id} {score} vs {}",
                sql[id]
            );
        }
        for w in arm.candidates.windows(2) {
            assert!(
                w[0].1 > w[1].1 || (w[0].1 == w[1].1 && w[0].0 < w[1].0),
                "{q}: not best first: {w:?}"
            );
        }
        tx.rollback().await.unwrap();
    }
}

/// The semantic arm alone, in a read-only transaction with the service's
/// settings; also `hnsw.ef_search` and `hnsw.max_scan_tuples` once the arm
/// is done.
async fn semantic_alone(
    c: &mut Client,
    v: &pgvector::Vector,
    p: &RetrievalProfile,
    f: &Filters,
) -> (arms::ArmResult, String) {
    semantic_alone_after(c, v, p, f, "").await
}

/// As [`semantic_alone`], with `setup` (SET LOCAL statements) run first.
async fn semantic_alone_after(
    c: &mut Client,
    v: &pgvector::Vector,
    p: &RetrievalProfile,
    f: &Filters,
    setup: &str,
) -> (arms::ArmResult, String) {
    let elig = Eligibility::new(f);
    let tx = c.build_transaction().read_only(true).start().await.unwrap();
    if !setup.is_empty() {
        tx.batch_execute(setup).await.unwrap();
    }
    arms::apply_settings(&tx, p).await.unwrap();
    let r = arms::semantic(&tx, &elig, "", v, p).await.unwrap();
    let ef: String = tx
        .query_one(
            "SELECT current_setting('hnsw.ef_search') || ' ' || current_setting('hnsw.max_scan_tuples')",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    tx.commit().await.unwrap();
    (r, ef)
}

#[tokio::test]
async fn longer_walks_and_domain_walks_only_bring_nearer_rows() {
    let db = TestDb::with_sample("graph_walks").await;
    let mut c = db.owner().await;
    // A point between two products of different domains: a hard case for
    // one greedy walk of the whole catalog's graph.
    let v: pgvector::Vector = c
        .query_one(
            "SELECT a.embedding + b.embedding
             FROM (SELECT embedding FROM search.product_projection
                   WHERE domain = 'outdoor' ORDER BY product_id LIMIT 1) a,
                  (SELECT embedding FROM search.product_projection
                   WHERE domain = 'office' ORDER BY product_id LIMIT 1) b",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    let exact: Vec<f64> = c
        .query(
            arms::SEMANTIC_EXACT_SQL,
            &Eligibility::new(&Filters::default()).params(&[&v, &10i64, &None::<i32>]),
        )
        .await
        .map(|rows| arms::scored_by_distance(&rows))
        .unwrap()
        .into_iter()
        .map(|(_, score)| score)
        .collect();
    let narrow = RetrievalProfile {
        hnsw_ef_search: 10,
        ..Default::default()
    };
    let (one, _) = semantic_alone(&mut c, &v, &narrow, &Filters::default()).await;
    let variants = [
        RetrievalProfile {
            semantic_overfetch: 1_000,
            ..narrow.clone()
        },
        RetrievalProfile {
            semantic_domain_walk_ef: 400,
            semantic_domain_walk_min_rows: 0,
            ..narrow.clone()
        },
        // Domain walks that may walk on past their first candidate list
        // (as the default profile's do).
        RetrievalProfile {
            semantic_domain_walk_ef: 40,
            semantic_domain_walk_min_rows: 0,
            ..narrow.clone()
        },
        RetrievalProfile {
            semantic_domain_walk_ef: 40,
            semantic_domain_walk_tuples: 2_000,
            semantic_domain_walk_min_rows: 0,
            ..narrow.clone()
        },
    ];
    for (p, mode) in variants.iter().zip([
        "hnsw",
        "hnsw_domain_walks",
        "hnsw_domain_walks",
        "hnsw_domain_walks",
    ]) {
        let (r, ef) = semantic_alone(&mut c, &v, p, &Filters::default()).await;
        assert_eq!(r.mode.unwrap().to_string(), mode);
        assert_eq!(r.returned, 150);
        // The domain walks' own settings do not outlive them.
        assert_eq!(ef, "10 20000");
        let ids: HashSet<&String> = r.candidates.iter().map(|(id, _)| id).collect();
        assert_eq!(ids.len(), r.candidates.len(), "each row once");
        for (k, (got, before)) in r.candidates.iter().zip(&one.candidates).enumerate() {
            assert!(
                got.1 >= before.1 - 1e-9,
                "rank {k}: {} < {}",
                got.1,
                before.1
            );
            if k > 0 {
                assert!(r.candidates[k - 1].1 >= got.1, "sorted by score");
            }
        }
    }
    // Each domain's graph is small here: its walk at 400 is exhaustive, so
    // the walks together find the exact top 10.
    let (r, _) = semantic_alone(&mut c, &v, &variants[1], &Filters::default()).await;
    let top: Vec<f64> = r.candidates.iter().take(10).map(|(_, s)| *s).collect();
    for (got, want) in top.iter().zip(&exact) {
        assert!((got - want).abs() < 1e-6, "{top:?} against {exact:?}");
    }
    // Each domain's walk keeps the request's other filters.
    let f = Filters {
        in_stock_only: true,
        min_rating: Some(4.0),
        ..Default::default()
    };
    // Under a filter, walks that look further (a scan budget) too; their
    // settings do not outlive them either.
    for p in &variants[1..] {
        let (r, ef) = semantic_alone(&mut c, &v, p, &f).await;
        assert_eq!(r.returned, 150);
        assert_eq!(ef, "10 20000");
        let ids: Vec<String> = r.candidates.iter().map(|(id, _)| id.clone()).collect();
        let bad: i64 = c
            .query_one(
                "SELECT count(*) FROM search.product_projection
                 WHERE product_id = ANY ($1) AND NOT (in_stock AND rating >= 4.0)",
                &[&ids],
            )
            .await
            .unwrap()
            .get(0);
        assert_eq!(bad, 0);
    }
}

async fn scan_mem_multiplier(c: &Client) -> String {
    c.query_one("SELECT current_setting('hnsw.scan_mem_multiplier')", &[])
        .await
        .unwrap()
        .get(0)
}

#[tokio::test]
async fn a_walk_that_stops_short_is_walked_again_with_a_larger_budget_where_many_rows_are_eligible()
{
    let db = TestDb::with_sample("refill").await;
    let mut c = db.owner().await;
    // A camera's vector under a price no camera (nor anything near one)
    // reaches: the walk meets ineligible products first.
    let row = c
        .query_one(
            "SELECT pp.embedding,
                    (SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY price_cents)
                     FROM search.product_projection)
             FROM search.product_projection pp
             WHERE pp.category_key = (SELECT category_key FROM search.product_projection
                                      GROUP BY category_key ORDER BY min(price_cents) DESC LIMIT 1)
             ORDER BY pp.product_id LIMIT 1",
            &[],
        )
        .await
        .unwrap();
    let (v, median): (pgvector::Vector, i64) = (row.get(0), row.get(1));
    let cheap = Filters {
        max_price_cents: Some(median),
        ..Default::default()
    };
    let eligible: i64 = c
        .query_one(
            "SELECT count(*) FROM search.product_projection
             WHERE embedding IS NOT NULL AND price_cents <= $1",
            &[&median],
        )
        .await
        .unwrap()
        .get(0);
    // The HNSW route with a budget too small to reach the eligible rows,
    // and the graph walked whatever the planner's estimate (it may sort a
    // few thousand rows instead, which never stops short).
    let p = RetrievalProfile {
        semantic_exact_threshold: 0,
        hnsw_ef_search: 10,
        hnsw_max_scan_tuples: 150,
        semantic_refill_scan_tuples: eligible / 2,
        ..Default::default()
    };
    let walk = "SET LOCAL enable_sort = off";
    let mode = |r: &arms::ArmResult| r.mode.unwrap().to_string();
    let session_mem = scan_mem_multiplier(&c).await;
    let (long, ef) = semantic_alone_after(&mut c, &v, &p, &cheap, walk).await;
    assert_eq!(mode(&long), "hnsw_underfilled_then_long_walk");
    assert_eq!(long.returned, 150);
    assert_eq!(ef, "10 150", "the second walk's budget does not outlive it");
    assert_eq!(scan_mem_multiplier(&c).await, session_mem);
    // Every row is eligible, once, best first.
    let ids: Vec<String> = long.candidates.iter().map(|(id, _)| id.clone()).collect();
    assert_eq!(ids.iter().collect::<HashSet<_>>().len(), 150);
    let outside: i64 = c
        .query_one(
            "SELECT count(*) FROM search.product_projection
             WHERE product_id = ANY ($1) AND price_cents > $2",
            &[&ids, &median],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(outside, 0);
    assert!(long.candidates.windows(2).all(|w| w[0].1 >= w[1].1));
    // Exact where the budget would visit as many rows as are eligible, and
    // where the second walk is off: as before.
    for budget in [eligible, 0] {
        let q = RetrievalProfile {
            semantic_refill_scan_tuples: budget,
            ..p.clone()
        };
        let (r, _) = semantic_alone_after(&mut c, &v, &q, &cheap, walk).await;
        assert_eq!(mode(&r), "hnsw_underfilled_then_exact", "budget {budget}");
        assert_eq!(r.returned, 150);
        // The second walk's rows are the exact scan's, or farther.
        for (k, (got, best)) in long.candidates.iter().zip(&r.candidates).enumerate() {
            assert!(got.1 <= best.1 + 1e-9, "rank {k}: {} > {}", got.1, best.1);
        }
    }
}

/// The semantic arm alone for `written`'s vector `v`, in a read-only
/// transaction with the service's settings.
async fn semantic_for(
    c: &mut Client,
    written: &str,
    v: &pgvector::Vector,
    p: &RetrievalProfile,
    f: &Filters,
) -> arms::ArmResult {
    let tx = c.build_transaction().read_only(true).start().await.unwrap();
    arms::apply_settings(&tx, p).await.unwrap();
    let r = arms::semantic(&tx, &Eligibility::new(f), written, v, p)
        .await
        .unwrap();
    tx.commit().await.unwrap();
    r
}

#[tokio::test]
async fn a_code_s_product_line_and_brand_are_scored_exactly_beside_the_walks() {
    let db = TestDb::with_sample("identifier_family").await;
    let mut c = db.owner().await;
    // A model code from the catalog and its stem ("heaf" of "heaf-1072").
    let texts: Vec<String> = c
        .query(
            "SELECT identity_text FROM search.product_projection ORDER BY product_id LIMIT 50",
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    let (code, stem) = texts
        .iter()
        .flat_map(|t| t.split_whitespace())
        .find_map(|w| mosaic::search::understand::identifier_stem(w).map(|s| (w.to_string(), s)))
        .expect("the sample's identity texts carry model codes");
    // Two vectors: the code's own product's, and one far from its line (a
    // product of another domain).
    let near: pgvector::Vector = c
        .query_one(
            "SELECT embedding FROM search.product_projection
             WHERE identity_text LIKE '%' || $1 || '%' ORDER BY product_id LIMIT 1",
            &[&code],
        )
        .await
        .unwrap()
        .get(0);
    let far: pgvector::Vector = c
        .query_one(
            "SELECT embedding FROM search.product_projection
             WHERE embedding IS NOT NULL AND domain <> (SELECT domain FROM search.product_projection
                 WHERE identity_text LIKE '%' || $1 || '%' ORDER BY product_id LIMIT 1)
             ORDER BY product_id LIMIT 1",
            &[&code],
        )
        .await
        .unwrap()
        .get(0);
    let median: i64 = c
        .query_one(
            "SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY price_cents) FROM search.product_projection",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    let p = RetrievalProfile {
        semantic_exact_threshold: 0,
        hnsw_ef_search: 10,
        semantic_overfetch: 150,
        semantic_identifier_family: 1_000,
        semantic_identifier_brand: 0,
        ..Default::default()
    };
    let off = RetrievalProfile {
        semantic_identifier_family: 0,
        ..p.clone()
    };
    let with_brand = RetrievalProfile {
        semantic_identifier_brand: 10_000,
        ..p.clone()
    };
    // The line's brand: one in this catalog, so the statement's sample of
    // the line's first rows names it.
    let brands: Vec<String> = c
        .query(
            "SELECT DISTINCT brand_key FROM search.product_projection
             WHERE identity_text LIKE '%' || $1 || '%'",
            &[&stem],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(brands.len(), 1, "{brands:?}");
    let cheap = Filters {
        max_price_cents: Some(median),
        ..Default::default()
    };
    let shapes = [Filters::default(), cheap];
    let (mut changed, mut changed_by_brand) = (0, 0);
    // A poor graph (the fewest links pgvector builds), so that walks miss
    // near rows as they do in a large catalog's graph. pgvector places
    // nodes at random, so a rare build lets every walk find the whole line:
    // then the graph is built again.
    for build in 0..5 {
        if build > 0 && changed > 0 && changed_by_brand > 0 {
            break;
        }
        c.batch_execute(
            "DROP INDEX search.projection_embedding_hnsw_idx;
             CREATE INDEX projection_embedding_hnsw_idx ON search.product_projection
                 USING hnsw (embedding vector_cosine_ops) WITH (m = 2, ef_construction = 4);",
        )
        .await
        .unwrap();
        (changed, changed_by_brand) = (0, 0);
        for (v, f) in [&near, &far]
            .into_iter()
            .flat_map(|v| shapes.iter().map(move |f| (v, f)))
        {
            let with = semantic_for(&mut c, &code, v, &p, f).await;
            let walks = semantic_for(&mut c, &code, v, &off, f).await;
            assert_eq!(with.mode, walks.mode, "the route is the walks'");
            assert_eq!(walks.identifier_family, None);
            // The family, independently: every eligible product holding the
            // stem, nearest first.
            let family: Vec<(String, f64)> = c
            .query(
                "SELECT product_id, (1 - (embedding <=> $1))::float8 FROM search.product_projection
                 WHERE identity_text LIKE '%' || $2 || '%' AND embedding IS NOT NULL
                   AND ($3::bigint IS NULL OR price_cents <= $3)
                 ORDER BY embedding <=> $1, product_id",
                &[v, &stem, &f.max_price_cents],
            )
            .await
            .unwrap()
            .iter()
            .map(|r| (r.get(0), r.get(1)))
            .collect();
            assert!(
                !family.is_empty() && family.len() < 1_000,
                "{}",
                family.len()
            );
            assert_eq!(with.identifier_family, Some(family.len() as i64));
            // The arm's rows are the nearest of the walks' rows and the family,
            // each once, best first.
            let nearest = |sets: &[&[(String, f64)]]| {
                let mut all: Vec<(String, f64)> = sets.concat();
                all.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
                let mut seen = HashSet::new();
                all.retain(|(id, _)| seen.insert(id.clone()));
                all.truncate(150);
                all
            };
            let expected = nearest(&[&walks.candidates, &family]);
            let scores = |r: &[(String, f64)]| {
                r.iter()
                    .map(|(_, s)| (s * 1e9).round() as i64)
                    .collect::<Vec<_>>()
            };
            assert_eq!(scores(&with.candidates), scores(&expected));
            if with.candidates != walks.candidates {
                changed += 1;
            }
            // With the brand: the rest of the line's brand, eligible, as well.
            let rest: Vec<(String, f64)> = c
            .query(
                "SELECT product_id, (1 - (embedding <=> $1))::float8 FROM search.product_projection
                 WHERE brand_key = $2 AND identity_text NOT LIKE '%' || $3 || '%'
                   AND embedding IS NOT NULL AND ($4::bigint IS NULL OR price_cents <= $4)",
                &[v, &brands[0], &stem, &f.max_price_cents],
            )
            .await
            .unwrap()
            .iter()
            .map(|r| (r.get(0), r.get(1)))
            .collect();
            assert!(!rest.is_empty());
            let branded = semantic_for(&mut c, &code, v, &with_brand, f).await;
            assert_eq!(
                branded.identifier_family,
                Some((family.len() + rest.len()) as i64)
            );
            let expected = nearest(&[&walks.candidates, &family, &rest]);
            assert_eq!(scores(&branded.candidates), scores(&expected));
            if branded.candidates != with.candidates {
                changed_by_brand += 1;
            }
            // No family member nearer than the arm's last row is left out.
            let ids: HashSet<&String> = with.candidates.iter().map(|(id, _)| id).collect();
            let nearest_kept = with.candidates.last().unwrap().1;
            for (id, score) in &family {
                assert!(ids.contains(id) || *score <= nearest_kept, "{id} {score}");
            }
            // Every row is eligible.
            if let Some(max) = f.max_price_cents {
                let found: Vec<String> = with.candidates.iter().map(|(id, _)| id.clone()).collect();
                let outside: i64 = c
                    .query_one(
                        "SELECT count(*) FROM search.product_projection
                     WHERE product_id = ANY ($1) AND price_cents > $2",
                        &[&found, &max],
                    )
                    .await
                    .unwrap()
                    .get(0);
                assert_eq!(outside, 0);
            }
        }
    }
    assert!(changed > 0, "the family brought rows the walks missed");
    assert!(
        changed_by_brand > 0,
        "the brand brought rows the walks and the line missed"
    );
    // The family's budget bounds the rows read; a query without a stem,
    // and the exact route, score no family.
    let small = RetrievalProfile {
        semantic_identifier_family: 3,
        ..p.clone()
    };
    let r = semantic_for(&mut c, &code, &near, &small, &Filters::default()).await;
    assert_eq!(r.identifier_family, Some(3));
    let small_brand = RetrievalProfile {
        semantic_identifier_brand: 2,
        ..small.clone()
    };
    let r = semantic_for(&mut c, &code, &near, &small_brand, &Filters::default()).await;
    assert_eq!(r.identifier_family, Some(5));
    let r = semantic_for(&mut c, "air fryer", &near, &p, &Filters::default()).await;
    assert_eq!(r.identifier_family, None);
    let exact = RetrievalProfile {
        semantic_exact_threshold: 1_000_000,
        ..p.clone()
    };
    let r = semantic_for(&mut c, &code, &near, &exact, &Filters::default()).await;
    assert_eq!(r.mode.unwrap().to_string(), "exact");
    assert_eq!(r.identifier_family, None);
}

/// A product's own vector (its nearest products are in its domain), that
/// domain, and the largest other domain with its number of products: a
/// domain filter far from the vector.
async fn far_domain_case(c: &Client) -> (pgvector::Vector, String, String, i64) {
    let row = c
        .query_one(
            "SELECT embedding, domain FROM search.product_projection
             WHERE embedding IS NOT NULL ORDER BY product_id LIMIT 1",
            &[],
        )
        .await
        .unwrap();
    let (v, home): (pgvector::Vector, String) = (row.get(0), row.get(1));
    let other = c
        .query_one(
            "SELECT domain, count(*) FROM search.product_projection WHERE domain <> $1
             GROUP BY domain ORDER BY count(*) DESC LIMIT 1",
            &[&home],
        )
        .await
        .unwrap();
    (v, home, other.get(0), other.get(1))
}

/// Rank by rank, `nearer`'s rows score at least what `other`'s do.
fn at_least_as_near(nearer: &[(String, f64)], other: &[(String, f64)]) {
    for (k, (got, theirs)) in nearer.iter().zip(other).enumerate() {
        assert!(
            got.1 >= theirs.1 - 1e-9,
            "rank {k}: {} < {}",
            got.1,
            theirs.1
        );
    }
}

#[tokio::test]
async fn a_query_far_from_a_domain_filter_walks_that_domains_graph_longer() {
    let db = TestDb::with_sample("far_domain").await;
    let mut c = db.owner().await;
    c.execute("ANALYZE search.product_projection", &[])
        .await
        .unwrap();
    let (v, home, other, _) = far_domain_case(&c).await;
    // The HNSW route at this size, and a short first walk; no domain is
    // small enough to be scored exactly.
    let p = RetrievalProfile {
        semantic_exact_threshold: 0,
        semantic_domain_walk_min_rows: 0,
        hnsw_ef_search: 10,
        semantic_far_domain_overfetch: 1_000,
        semantic_far_exact_max_rows: 0,
        ..Default::default()
    };
    let in_domain = |d: &str| Filters {
        domain: Some(d.to_string()),
        ..Default::default()
    };
    let mode = |r: &arms::ArmResult| r.mode.unwrap().to_string();
    // Near its own domain: the usual walk.
    let (r, ef) = semantic_alone(&mut c, &v, &p, &in_domain(&home)).await;
    assert_eq!(mode(&r), "hnsw");
    assert_eq!(ef, "10 20000");
    // Far from the other domain: that domain's graph, walked longer, and
    // every row still in that domain.
    let (long, ef) = semantic_alone(&mut c, &v, &p, &in_domain(&other)).await;
    assert_eq!(mode(&long), "hnsw_long_walk");
    assert_eq!(ef, "10 20000", "the check's settings do not outlive it");
    assert_eq!(long.returned, 150);
    let ids: Vec<String> = long.candidates.iter().map(|(id, _)| id.clone()).collect();
    let outside: i64 = c
        .query_one(
            "SELECT count(*) FROM search.product_projection
             WHERE product_id = ANY ($1) AND domain <> $2",
            &[&ids, &other],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(outside, 0);
    // The longer walk only ever brings nearer rows than the usual one.
    let off = RetrievalProfile {
        semantic_far_domain_overfetch: 0,
        ..p.clone()
    };
    let (short, _) = semantic_alone(&mut c, &v, &off, &in_domain(&other)).await;
    assert_eq!(mode(&short), "hnsw");
    at_least_as_near(&long.candidates, &short.candidates);
    // Below the size the walks start at, the check changes nothing.
    let small = RetrievalProfile {
        semantic_domain_walk_min_rows: i64::MAX,
        ..p.clone()
    };
    let (r, _) = semantic_alone(&mut c, &v, &small, &in_domain(&other)).await;
    assert_eq!(mode(&r), "hnsw");
}

#[tokio::test]
async fn a_query_far_from_a_small_domain_scores_all_of_it_exactly() {
    let db = TestDb::with_sample("far_domain_exact").await;
    let mut c = db.owner().await;
    let (v, home, other, size) = far_domain_case(&c).await;
    // The HNSW route at this size, a short first walk, and the domain
    // (its graph's entries, by the planner's statistics) under the exact
    // scan's bound.
    let p = RetrievalProfile {
        semantic_exact_threshold: 0,
        semantic_domain_walk_min_rows: 0,
        hnsw_ef_search: 10,
        semantic_far_exact_max_rows: size * 2,
        ..Default::default()
    };
    let in_domain = |d: &str| Filters {
        domain: Some(d.to_string()),
        ..Default::default()
    };
    let mode = |r: &arms::ArmResult| r.mode.unwrap().to_string();
    c.execute("ANALYZE search.product_projection", &[])
        .await
        .unwrap();
    let (exact, ef) = semantic_alone(&mut c, &v, &p, &in_domain(&other)).await;
    assert_eq!(mode(&exact), "exact_far_domain");
    assert_eq!(exact.half_connection, None, "set by the lanes");
    assert_eq!(ef, "10 20000");
    assert_eq!(exact.identifier_family, None);
    // Exactly the domain's nearest rows, in order: the same as scoring every
    // product of the domain by hand (the two halves, merged).
    let truth: Vec<(String, f64)> = c
        .query(
            "SELECT product_id, (1 - (embedding <=> $1))::float8 FROM search.product_projection
             WHERE embedding IS NOT NULL AND domain = $2
             ORDER BY (embedding <=> $1) + 0, product_id LIMIT 150",
            &[&v, &other],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    assert_eq!(exact.returned, 150);
    assert_eq!(exact.candidates.len(), truth.len());
    for (k, (got, want)) in exact.candidates.iter().zip(&truth).enumerate() {
        assert!((got.1 - want.1).abs() < 1e-9, "rank {k}: {got:?} {want:?}");
    }
    // The same products, but for ties at the last place kept.
    let last = truth.last().unwrap().1;
    let above = |rows: &[(String, f64)]| -> HashSet<String> {
        rows.iter()
            .filter(|(_, s)| *s > last + 1e-9)
            .map(|(id, _)| id.clone())
            .collect()
    };
    assert_eq!(above(&exact.candidates), above(&truth));
    // Each scanned row's distance is taken once: the scan hands the sort
    // the distance and nothing else derived from the vector (a score column
    // beside the sort key would be a second distance for every row).
    let plan: Value = c
        .query_one(
            &format!(
                "EXPLAIN (VERBOSE, FORMAT JSON) {}",
                arms::SEMANTIC_EXACT_SQL
            ),
            &Eligibility::new(&in_domain(&other)).params(&[&v, &150i64, &Some(0i32)]),
        )
        .await
        .unwrap()
        .get(0);
    let mut nodes = vec![&plan[0]["Plan"]];
    let mut scans = 0;
    while let Some(node) = nodes.pop() {
        if node["Relation Name"] == "product_projection" {
            scans += 1;
            let output = node["Output"].to_string();
            assert_eq!(output.matches("<=>").count(), 1, "{output}");
        }
        nodes.extend(node["Plans"].as_array().into_iter().flatten());
    }
    assert_eq!(scans, 1, "{plan}");
    // What the long walk finds is never nearer.
    let walk = RetrievalProfile {
        semantic_far_exact_max_rows: 0,
        ..p.clone()
    };
    let (long, _) = semantic_alone(&mut c, &v, &walk, &in_domain(&other)).await;
    assert_eq!(mode(&long), "hnsw_long_walk");
    at_least_as_near(&exact.candidates, &long.candidates);
    // A domain larger than the bound is walked; the query's own domain is
    // near it and takes the usual walk.
    let bounded = RetrievalProfile {
        semantic_far_exact_max_rows: size / 2,
        ..p.clone()
    };
    let (r, _) = semantic_alone(&mut c, &v, &bounded, &in_domain(&other)).await;
    assert_eq!(mode(&r), "hnsw_long_walk");
    let (r, _) = semantic_alone(&mut c, &v, &p, &in_domain(&home)).await;
    assert_eq!(mode(&r), "hnsw");
    // With the long walk off the bound still holds: exact, or the usual walk.
    let no_walk = RetrievalProfile {
        semantic_far_domain_overfetch: 0,
        ..p.clone()
    };
    let (r, _) = semantic_alone(&mut c, &v, &no_walk, &in_domain(&other)).await;
    assert_eq!(mode(&r), "exact_far_domain");
    let neither = RetrievalProfile {
        semantic_far_domain_overfetch: 0,
        semantic_far_exact_max_rows: size / 2,
        ..p.clone()
    };
    let (r, _) = semantic_alone(&mut c, &v, &neither, &in_domain(&other)).await;
    assert_eq!(mode(&r), "hnsw");
    // Filters the index holds keep the exact scan, and its rows obey them;
    // a filter it does not hold (a brand) sends the arm back to the walk.
    let stocked = Filters {
        in_stock_only: true,
        max_price_cents: Some(50_000),
        ..in_domain(&other)
    };
    let (r, _) = semantic_alone(&mut c, &v, &p, &stocked).await;
    assert_eq!(mode(&r), "exact_far_domain");
    let ids: Vec<String> = r.candidates.iter().map(|(id, _)| id.clone()).collect();
    let broken: i64 = c
        .query_one(
            "SELECT count(*) FROM search.product_projection
             WHERE product_id = ANY ($1) AND (domain <> $2 OR NOT in_stock OR price_cents > 50000)",
            &[&ids, &other],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!((broken, ids.is_empty()), (0, false));
    let brand: String = c
        .query_one(
            "SELECT brand_key FROM search.product_projection WHERE domain = $1
             GROUP BY brand_key ORDER BY count(*) DESC, 1 LIMIT 1",
            &[&other],
        )
        .await
        .unwrap()
        .get(0);
    let branded = Filters {
        brand: Some(brand),
        ..in_domain(&other)
    };
    let (r, _) = semantic_alone(&mut c, &v, &p, &branded).await;
    assert_ne!(mode(&r), "exact_far_domain");
    // A search runs the second half on a fourth lane, beside the first,
    // when it has one, and serves the same either way; the receipt says
    // where it ran.
    let title: String = c
        .query_one(
            "SELECT p.title FROM catalog.products p JOIN search.product_projection pp USING (product_id)
             WHERE pp.embedding IS NOT NULL AND pp.domain = $1 ORDER BY product_id LIMIT 1",
            &[&home],
        )
        .await
        .unwrap()
        .get(0);
    let profile = |arm_connections| RetrievalProfile {
        arm_connections,
        ..p.clone()
    };
    let (one, three, four) = (
        ctx(&db, profile(1)),
        ctx(&db, profile(3)),
        ctx(&db, profile(4)),
    );
    let body = json!({"query": title, "filters": {"domain": other}, "include_diagnostics": true});
    let runs = run_in([&one, &three, &four], &body).await;
    for (r, half_lane) in runs.iter().zip([0, 2, 3]) {
        assert_eq!(served(r), served(&runs[0]), "{body}");
        let semantic = &r.diagnostics.as_ref().unwrap().arms[Arm::Semantic];
        assert_eq!(mode(semantic), "exact_far_domain", "{body}");
        assert_eq!(semantic.half_connection, Some(half_lane), "{body}");
    }
    assert_eq!(four.pool.status().size, 4);
    let stored = stored_semantic(&c, runs[2].search_event_id).await;
    assert_eq!(stored["mode"], "exact_far_domain", "{stored}");
    assert_eq!(stored["half_connection"], 3, "{stored}");
    // Without migration 0024's index the arm does not scan exactly.
    let tx = c.transaction().await.unwrap();
    tx.batch_execute("DROP INDEX search.projection_embedded_domain_vectors_idx")
        .await
        .unwrap();
    let elig = Eligibility::new(&in_domain(&other));
    arms::apply_settings(&tx, &p).await.unwrap();
    let r = arms::semantic(&tx, &elig, "", &v, &p).await.unwrap();
    assert_eq!(mode(&r), "hnsw_long_walk");
    tx.rollback().await.unwrap();
    // The domain's size is its own graph's entries: without that graph the
    // arm does not know it, and walks.
    let graph: String = c
        .query_one(
            "SELECT 'projection_embedding_hnsw_d_' || substr(md5($1), 1, 16)",
            &[&other],
        )
        .await
        .unwrap()
        .get(0);
    let tx = c.transaction().await.unwrap();
    tx.batch_execute(&format!("DROP INDEX search.{graph}"))
        .await
        .unwrap();
    arms::apply_settings(&tx, &p).await.unwrap();
    let r = arms::semantic(&tx, &elig, "", &v, &p).await.unwrap();
    assert_eq!(mode(&r), "hnsw_long_walk");
    tx.rollback().await.unwrap();
    let r = arms::semantic(&c, &elig, "", &v, &p).await.unwrap();
    assert_eq!(mode(&r), "exact_far_domain");
}

#[tokio::test]
async fn domain_walks_are_left_out_where_they_cannot_help() {
    let db = TestDb::with_sample("domain_walks_left_out").await;
    let mut c = db.owner().await;
    let products: i64 = c
        .query_one("SELECT count(*) FROM search.product_projection", &[])
        .await
        .unwrap()
        .get(0);
    c.execute("ANALYZE search.product_projection", &[])
        .await
        .unwrap();
    let v: pgvector::Vector = c
        .query_one(
            "SELECT embedding FROM search.product_projection ORDER BY product_id LIMIT 1",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    // The HNSW route whatever the filter's selectivity.
    let walks = RetrievalProfile {
        semantic_exact_threshold: 0,
        semantic_domain_walk_ef: 40,
        semantic_domain_walk_min_rows: 0,
        ..Default::default()
    };
    let mode = |r: &arms::ArmResult| r.mode.unwrap().to_string();
    let (r, _) = semantic_alone(&mut c, &v, &walks, &Filters::default()).await;
    assert_eq!(mode(&r), "hnsw_domain_walks");
    // A catalog below the size the walks start at.
    let small = RetrievalProfile {
        semantic_domain_walk_min_rows: products + 1,
        ..walks.clone()
    };
    let (r, _) = semantic_alone(&mut c, &v, &small, &Filters::default()).await;
    assert_eq!(mode(&r), "hnsw");
    let at_size = RetrievalProfile {
        semantic_domain_walk_min_rows: products,
        ..walks.clone()
    };
    let (r, _) = semantic_alone(&mut c, &v, &at_size, &Filters::default()).await;
    assert_eq!(mode(&r), "hnsw_domain_walks");
    // Filters that confine the search to one domain's products.
    let row = c
        .query_one(
            "SELECT domain, category_key FROM search.product_projection ORDER BY product_id LIMIT 1",
            &[],
        )
        .await
        .unwrap();
    let (domain, category): (String, String) = (row.get(0), row.get(1));
    for f in [
        Filters {
            domain: Some(domain.clone()),
            ..Default::default()
        },
        Filters {
            category_key: Some(category.clone()),
            ..Default::default()
        },
    ] {
        let (r, _) = semantic_alone(&mut c, &v, &walks, &f).await;
        assert_eq!(mode(&r), "hnsw", "{f:?}");
        assert!(r.returned > 0, "{f:?}");
    }
    // A filter that does not: the walks keep it.
    let f = Filters {
        in_stock_only: true,
        ..Default::default()
    };
    let (r, _) = semantic_alone(&mut c, &v, &walks, &f).await;
    assert_eq!(mode(&r), "hnsw_domain_walks");
}

/// Each of `arm`'s candidates' word similarity to each of `texts`, as
/// pg_trgm computes it.
async fn word_similarities(
    tx: &tokio_postgres::Transaction<'_>,
    arm: &arms::ArmResult,
    texts: &[&str],
) -> std::collections::HashMap<String, Vec<f64>> {
    let ids: Vec<&str> = arm.candidates.iter().map(|(id, _)| id.as_str()).collect();
    tx.query(
        "SELECT product_id,
                ARRAY(SELECT word_similarity(t, identity_text)::float8
                      FROM unnest($2::text[]) WITH ORDINALITY AS u (t, i) ORDER BY i)
         FROM search.product_projection WHERE product_id = ANY ($1)",
        &[&ids, &texts],
    )
    .await
    .unwrap()
    .iter()
    .map(|r| (r.get(0), r.get(1)))
    .collect()
}

#[tokio::test]
async fn a_code_queries_relaxed_trigram_steps_match_the_code_alone_and_score_the_whole_query() {
    // A product line's code with a variant word ("pxlt-1000 pro"), under a
    // domain filter that excludes the code's own product: at the relaxed
    // thresholds the whole query admits every text that shares the variant
    // word and a few digits; the code alone admits near spellings of it.
    let db = TestDb::with_sample("trigram_codes").await;
    let mut c = db.runtime().await;
    let profile = RetrievalProfile::default();
    // The first such code and domain where the whole query matches a text
    // that does not spell the code, and the code alone matches something.
    let pick = c.transaction().await.unwrap();
    let floor = profile.trigram_floor.to_string();
    pick.execute(
        "SELECT set_config('pg_trgm.word_similarity_threshold', $1, true)",
        &[&floor],
    )
    .await
    .unwrap();
    let row = pick
        .query_one(
            "WITH c AS (
                 SELECT product_id, domain,
                        substring(identity_text from ' ([a-z]{3,5}-[0-9]{4}) (?:mini|pro|plus) ') AS code,
                        substring(identity_text from ' [a-z]{3,5}-[0-9]{4} (mini|pro|plus) ') AS variant
                 FROM search.product_projection
                 WHERE identity_text ~ ' [a-z]{3,5}-[0-9]{4} (mini|pro|plus) '),
             o AS (
                 SELECT c.*, d.domain AS other
                 FROM c CROSS JOIN (SELECT DISTINCT domain FROM search.product_projection) d
                 WHERE d.domain <> c.domain)
             SELECT code, variant, other FROM o
             WHERE EXISTS (SELECT 1 FROM search.product_projection pp
                           WHERE pp.domain = o.other AND (o.code || ' ' || o.variant) <% pp.identity_text
                                 AND NOT o.code <% pp.identity_text)
               AND EXISTS (SELECT 1 FROM search.product_projection pp
                           WHERE pp.domain = o.other AND o.code <% pp.identity_text)
             ORDER BY o.product_id, o.other LIMIT 1",
            &[],
        )
        .await
        .unwrap();
    pick.rollback().await.unwrap();
    let (code, variant, other): (String, String, String) = (row.get(0), row.get(1), row.get(2));
    let q = format!("{code} {variant}");
    let elig = Eligibility::new(&Filters {
        domain: Some(other.clone()),
        ..Default::default()
    });
    let off = RetrievalProfile {
        trigram_identifier_steps: 0,
        ..Default::default()
    };
    let tx = c.transaction().await.unwrap();
    arms::apply_settings(&tx, &profile).await.unwrap();
    let codes = arms::trigram(&tx, &elig, &q, (false, Some(&code)), &profile)
        .await
        .unwrap();
    let whole = arms::trigram(&tx, &elig, &q, (false, None), &profile)
        .await
        .unwrap();
    let unset = arms::trigram(&tx, &elig, &q, (false, Some(&code)), &off)
        .await
        .unwrap();
    // A code that matches nothing: the relaxed steps run for the whole
    // query after all.
    let garbled = arms::trigram(&tx, &elig, &q, (false, Some("xqzjwv")), &profile)
        .await
        .unwrap();
    // A word outside ASCII: the SQL scores the matches, still for the whole
    // query.
    let wide = format!("{q} größe");
    let wide_arm = arms::trigram(&tx, &elig, &wide, (false, Some(&code)), &profile)
        .await
        .unwrap();
    let wide_scores = word_similarities(&tx, &wide_arm, &[&wide]).await;
    // A category of that domain: the slice keeps the whole query.
    let category: String = tx
        .query_one(
            "SELECT category_key FROM search.product_projection WHERE domain = $1
             GROUP BY category_key ORDER BY count(*) DESC, category_key LIMIT 1",
            &[&other],
        )
        .await
        .unwrap()
        .get(0);
    let slice = Eligibility::new(&Filters {
        category_key: Some(category),
        ..Default::default()
    });
    let sliced = arms::trigram(&tx, &slice, &q, (false, Some(&code)), &profile)
        .await
        .unwrap();
    let sliced_whole = arms::trigram(&tx, &slice, &q, (false, None), &profile)
        .await
        .unwrap();
    // Each candidate's word similarity to the code and to the whole query.
    let of_codes = word_similarities(&tx, &codes, &[&code, &q]).await;
    let of_whole = word_similarities(&tx, &whole, &[&code]).await;
    tx.rollback().await.unwrap();

    assert!(
        !codes.candidates.is_empty(),
        "{q}: the premise needs near spellings of {code}"
    );
    assert!(
        of_whole.values().any(|s| s[0] < profile.trigram_floor),
        "{q}: the premise needs whole-query matches that do not spell the code"
    );
    for (id, score) in &codes.candidates {
        let (to_code, to_query) = (of_codes[id][0], of_codes[id][1]);
        assert!(
            to_code >= profile.trigram_floor - 1e-6,
            "{q}: {id} does not spell {code}"
        );
        assert!(
            (score - to_query).abs() < 1e-6,
            "{q}: {id} scored {score}, not {to_query}"
        );
    }
    let same = |a: &arms::ArmResult, b: &arms::ArmResult| {
        a.candidates == b.candidates && a.mode == b.mode && a.verdict == b.verdict
    };
    // The arm's account says which it matched.
    assert_eq!(codes.matched_codes.as_deref(), Some(code.as_str()), "{q}");
    for arm in [&unset, &garbled, &sliced] {
        assert_eq!(arm.matched_codes, None, "{q}");
    }
    assert!(
        same(&sliced, &sliced_whole),
        "{q}: a slice keeps the whole query"
    );
    assert_eq!(
        wide_arm.matched_codes.as_deref(),
        Some(code.as_str()),
        "{wide}"
    );
    assert!(!wide_arm.candidates.is_empty(), "{wide}");
    for (id, score) in &wide_arm.candidates {
        let to_wide = wide_scores[id][0];
        assert!(
            (score - to_wide).abs() < 1e-6,
            "{wide}: {id} scored {score}, not {to_wide}"
        );
    }

    // Through the service: the understanding step's identifiers reach the arm.
    let served = run(
        &ctx(&db, profile.clone()),
        json!({"query": q, "include_diagnostics": true, "filters": {"domain": other}}),
    )
    .await
    .unwrap();
    let d = served.diagnostics.unwrap();
    assert_eq!(
        d.arms[Arm::Trigram].matched_codes.as_deref(),
        Some(code.as_str()),
        "{q}"
    );
    assert!(
        same(&unset, &whole),
        "{q}: the setting off must match the whole query"
    );
    assert!(
        same(&garbled, &whole),
        "{q}: a code that matches nothing falls back"
    );
    assert!(!same(&codes, &whole), "{q}");
}

#[tokio::test]
async fn an_overlong_word_is_read_in_part_by_the_trigram_arm_and_not_looked_up() {
    // One "word" of 1,000 letters: what a careless or hostile caller sends.
    // Read whole, it holds about a thousand distinct trigrams, and at this
    // catalog's size the planner would compute the similarity of every row
    // for each step of the cascade (seconds) rather than scan the index.
    let db = TestDb::with_sample("overlong_word").await;
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    let word: String = (0..1_000)
        .map(|_| rng.gen_range(b'a'..=b'z') as char)
        .collect();
    let profile = RetrievalProfile::default();
    let chars = profile.trigram_query_chars;
    assert!(chars > 0, "the default profile bounds the trigram arm");
    let r = run(
        &ctx(&db, profile.clone()),
        json!({"query": word, "include_diagnostics": true}),
    )
    .await
    .unwrap();
    let d = r.diagnostics.unwrap();
    let trigram = &d.arms[Arm::Trigram];
    assert_eq!(trigram.read_chars, Some(chars as usize), "{trigram:?}");
    // Unknown, and never corrected: no vocabulary word is within reach.
    let u = d.query_understanding.expect("understanding ran");
    assert_eq!(u.unknown, vec![word.clone()]);
    assert!(u.corrections.is_empty());

    // What the arm matched: an index scan, not a scan of every row.
    let (read, cut) = arms::first_chars(&word, chars);
    assert!(cut && read.chars().count() == chars as usize);
    let mut c = db.runtime().await;
    let tx = c.transaction().await.unwrap();
    let elig = Eligibility::new(&Filters::default());
    let plan = trigram_floor_plan(&tx, &elig, &read, profile.trigram_scan_budget).await;
    assert!(
        plan.contains("Bitmap Index Scan") && !plan.contains("Seq Scan"),
        "{plan}"
    );
    tx.rollback().await.unwrap();
}

#[tokio::test]
async fn a_bound_the_query_states_puts_the_products_that_keep_it_first() {
    let db = TestDb::with_sample("stated_bounds").await;
    let body = json!({"query": "kettle under $30", "limit": 50, "include_diagnostics": true});
    let prices =
        |r: &SearchResponse| -> Vec<i64> { r.results.iter().map(|x| x.price_cents).collect() };
    // The reverse reranker's order, so that the bound visibly reorders it.
    let on = ctx(&db, RetrievalProfile::default()).with_reranker(Arc::new(rerankers::Reverse));
    let r = run(&on, body.clone()).await.unwrap();
    let served = prices(&r);
    let kept = served.iter().filter(|&&p| p <= 3000).count();
    assert!(kept > 0 && kept < served.len(), "{served:?}");
    assert!(served[..kept].iter().all(|&p| p <= 3000), "{served:?}");
    // Within the products that keep it, the reranker's order stands.
    let pre: Vec<i32> = r.results[..kept]
        .iter()
        .map(|x| x.signals.pre_rerank_rank)
        .collect();
    assert!(pre.windows(2).all(|w| w[0] > w[1]), "{pre:?}");
    let u = r
        .diagnostics
        .as_ref()
        .and_then(|d| d.query_understanding.as_ref())
        .expect("understanding");
    assert_eq!(u.bounds.len(), 1, "{:?}", u.bounds);
    assert_eq!(
        (u.bounds[0].text.as_str(), u.bounds[0].value),
        ("under $30", 3000.0)
    );
    // The receipt records the bound.
    let recorded: Value = db
        .owner()
        .await
        .query_one(
            "SELECT query_understanding FROM receipts.search_events WHERE search_event_id = $1",
            &[&r.search_event_id],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(recorded["bounds"][0]["kind"], "price", "{recorded}");
    assert_eq!(recorded["bounds"][0]["comparison"], "at_most", "{recorded}");
    // And each pool member's standing, as the response's signals say.
    let rows = db
        .owner()
        .await
        .query(
            "SELECT c.product_id, c.bounds_broken, c.bounds_kept, p.price_cents
             FROM receipts.search_candidates c JOIN catalog.products p USING (product_id)
             WHERE c.search_event_id = $1",
            &[&r.search_event_id],
        )
        .await
        .unwrap();
    assert_eq!(rows.len(), r.results.len());
    for row in &rows {
        let (broken, kept, price): (Option<i16>, Option<i16>, i64) =
            (row.get(1), row.get(2), row.get(3));
        let expected = if price <= 3000 { (0, 1) } else { (1, 0) };
        assert_eq!(
            (broken, kept),
            (Some(expected.0), Some(expected.1)),
            "{}",
            row.get::<_, String>(0)
        );
    }
    let standing = r.results[0].signals.bounds.expect("the served standing");
    assert_eq!((standing.broken, standing.kept), (0, 1));
    // Off, the reranker's order alone: a product over $30 comes before one
    // that keeps the bound.
    let off = RetrievalProfile {
        rerank_stated_bounds: 0,
        ..RetrievalProfile::default()
    };
    let off = ctx(&db, off).with_reranker(Arc::new(rerankers::Reverse));
    let r = run(&off, body).await.unwrap();
    let served = prices(&r);
    assert!(
        served
            .iter()
            .skip_while(|&&p| p <= 3000)
            .any(|&p| p <= 3000),
        "{served:?}"
    );
    assert!(
        r.diagnostics
            .unwrap()
            .query_understanding
            .unwrap()
            .bounds
            .is_empty(),
        "off, no bound is read"
    );
}

#[tokio::test]
async fn a_stated_bound_holds_when_the_reranker_fails_and_one_no_product_keeps_changes_nothing() {
    let db = TestDb::with_sample("stated_bounds_fallback").await;
    let failing = ctx(&db, RetrievalProfile::default()).with_reranker(Arc::new(rerankers::Failing));
    let r = run(
        &failing,
        json!({"query": "kettle under $30", "limit": 50, "include_diagnostics": true}),
    )
    .await
    .unwrap();
    assert_eq!(
        r.diagnostics.as_ref().unwrap().rerank_status,
        RerankStatus::FallbackFused
    );
    let served: Vec<i64> = r.results.iter().map(|x| x.price_cents).collect();
    let kept = served.iter().filter(|&&p| p <= 3000).count();
    assert!(kept > 0 && kept < served.len(), "{served:?}");
    assert!(served[..kept].iter().all(|&p| p <= 3000), "{served:?}");
    // The bound reordered the fused order, and the warnings say so.
    let pre: Vec<i32> = r
        .results
        .iter()
        .map(|x| x.signals.pre_rerank_rank)
        .collect();
    assert!(pre.windows(2).any(|w| w[0] > w[1]), "{pre:?}");
    let warnings = &r.diagnostics.as_ref().unwrap().warnings;
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("stated bounds then ordered")),
        "{warnings:?}"
    );
    // Under $1 no kettle is: the fused order stands.
    let r = run(
        &failing,
        json!({"query": "kettle under $1", "limit": 50, "include_diagnostics": true}),
    )
    .await
    .unwrap();
    let u = r.diagnostics.as_ref().unwrap().query_understanding.as_ref();
    assert_eq!(u.unwrap().bounds.len(), 1);
    assert!(u.unwrap().bounds[0].set_aside, "no kettle keeps it");
    assert!(r.results.iter().all(|x| x.signals.bounds.is_none()));
    let pre: Vec<i32> = r
        .results
        .iter()
        .map(|x| x.signals.pre_rerank_rank)
        .collect();
    assert!(pre.windows(2).all(|w| w[0] < w[1]), "{pre:?}");
    let warnings = &r.diagnostics.as_ref().unwrap().warnings;
    assert!(
        !warnings.iter().any(|w| w.contains("stated bounds")),
        "{warnings:?}"
    );
}
