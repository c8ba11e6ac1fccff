//! `mosaic eval`: metric arithmetic on hand-computed examples, the judged
//! query-set generator, and a small end-to-end run on the sample catalog
//! (hashing embedder).

use mosaic::rerank::local::LocalReranker;
use mosaic::{Principal, RetrievalProfile};
use mosaic_devtools::eval::metrics::{self, Grades};
use mosaic_devtools::eval::{
    self, queryset, EvalQuery, Intent, Judgment, QuerySetOptions, Summary,
};
use mosaic_devtools::generator::{Generator, DEFAULT_PRODUCTS, DEFAULT_SEED};
use mosaic_integration_tests::{ctx, TestDb};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

fn ids(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

fn query(id: &str, intent: Intent, judged: &[(&str, u8)]) -> EvalQuery {
    EvalQuery {
        id: id.into(),
        query: "q".into(),
        filters: None,
        intent,
        judgments: judged
            .iter()
            .map(|(p, g)| Judgment {
                product_id: p.to_string(),
                grade: *g,
            })
            .collect(),
    }
}

#[test]
fn metrics_match_hand_computed_values() {
    // Judged: a=3, b=2, c=1, d=2 (d never retrieved); x and y unjudged (0).
    let q1 = query(
        "q1",
        Intent::Descriptive,
        &[("a", 3), ("b", 2), ("c", 1), ("d", 2)],
    );
    let g1: Grades = q1.grades();
    let r1 = ids(&["x", "a", "c", "b", "y"]);
    // DCG  = 7/log2(3) + 1/log2(4) + 3/log2(5)           = 6.208537949
    // IDCG = 7/log2(2) + 3/log2(3) + 3/log2(4) + 1/log2(5) = 10.823465819
    let dcg = 7.0 / 3f64.log2() + 1.0 / 2.0 + 3.0 / 5f64.log2();
    let idcg = 7.0 + 3.0 / 3f64.log2() + 3.0 / 2.0 + 1.0 / 5f64.log2();
    assert!(close(dcg, 6.208_537_949_220_382));
    assert!(close(idcg, 10.823_465_818_787_767));
    let ndcg = metrics::ndcg_at(&r1, &g1, 10).unwrap();
    assert!(close(ndcg, 0.573_618_289_480_193_6), "{ndcg}");
    // Relevant (grade >= 2): a, b, d. Top 10 holds a and b: 2/3.
    assert!(close(metrics::recall_at(&r1, &g1, 10).unwrap(), 2.0 / 3.0));
    // Capped: the top 2 hold a, over min(2, 3) = 2.
    assert!(close(metrics::recall_at(&r1, &g1, 2).unwrap(), 0.5));
    // First grade >= 2 is a at rank 2.
    assert!(close(metrics::reciprocal_rank(&r1, &g1, 2), 0.5));
    // nDCG@1 is 0 (x is unjudged).
    assert!(close(metrics::ndcg_at(&r1, &g1, 1).unwrap(), 0.0));

    // A second query: e=2 retrieved at rank 3. DCG = 3/log2(4) = 1.5, IDCG = 3.
    let q2 = query("q2", Intent::ExactSku, &[("e", 3)]);
    let g2 = q2.grades();
    let r2 = ids(&["x", "y", "e"]);
    assert!(close(
        metrics::ndcg_at(&r2, &g2, 10).unwrap(),
        (7.0 / 2.0) / 7.0
    ));
    assert!(close(metrics::reciprocal_rank(&r2, &g2, 2), 1.0 / 3.0));
    assert!(close(metrics::recall_at(&r2, &g2, 2).unwrap(), 0.0));
    assert!(close(metrics::recall_at(&r2, &g2, 10).unwrap(), 1.0));

    // Aggregation: means over queries; the exact query missed top-1.
    let catalog = HashMap::new();
    let o1 = eval::score(&q1, &g1, r1, &catalog);
    let o2 = eval::score(&q2, &g2, r2, &catalog);
    let s = Summary::of([&o1, &o2]);
    assert!(close(s.mrr.unwrap(), (0.5 + 1.0 / 3.0) / 2.0));
    assert!(close(
        s.ndcg10.unwrap(),
        (0.573_618_289_480_193_6 + 0.5) / 2.0
    ));
    assert!(close(s.recall10.unwrap(), (2.0 / 3.0 + 1.0) / 2.0));
    assert_eq!((s.exact_queries, s.exact_top1), (1, Some(0.0)));
    assert_eq!((s.typo_queries, s.typo_recovery10), (0, None));
    assert_eq!(s.zero_result_rate, 0.0);
    let empty = eval::score(&q2, &g2, Vec::new(), &catalog);
    assert!(empty.zero_results);
    assert_eq!(empty.reciprocal_rank, Some(0.0));
}

#[test]
fn the_query_set_generator_is_deterministic_and_complete() {
    let opts = QuerySetOptions::default();
    let a = queryset::generate(&opts);
    let b = queryset::generate(&opts);
    assert_eq!(a, b, "same options, same query set");
    assert!(a.len() >= 300, "{} queries", a.len());
    let intents: HashSet<Intent> = a.iter().map(|q| q.intent).collect();
    for i in Intent::GENERATED {
        assert!(intents.contains(&i), "no {} query", i.as_str());
    }
    let ids: HashSet<&str> = a.iter().map(|q| q.id.as_str()).collect();
    assert_eq!(ids.len(), a.len(), "query ids are unique");

    // Every query has a grade-3 product; grade-3 of exact_sku is the SKU's product.
    let g = Generator::new(DEFAULT_SEED, DEFAULT_PRODUCTS);
    let by_sku: HashMap<String, String> = (0..g.products)
        .map(|i| {
            let (p, _) = g.product(i);
            (p.sku, p.product_id)
        })
        .collect();
    for q in &a {
        assert!(
            q.with_grade(3).next().is_some(),
            "{} has no grade-3 product",
            q.id
        );
        assert!(q.judgments.iter().all(|j| (1..=3).contains(&j.grade)));
        if q.intent == Intent::ExactSku {
            let top: Vec<&str> = q.with_grade(3).collect();
            assert_eq!(top, vec![by_sku[&q.query].as_str()], "{}", q.id);
        }
        if q.intent == Intent::Filtered {
            assert!(
                q.filters.as_ref().is_some_and(|f| !f.is_empty()),
                "{}",
                q.id
            );
        }
    }

    // The committed fixture is exactly what the generator writes.
    let mut written = Vec::new();
    queryset::write_jsonl(&mut written, &a).unwrap();
    let fixture = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../eval/sample-queries.jsonl"
    ))
    .expect("eval/sample-queries.jsonl exists");
    assert!(
        fixture == written,
        "eval/sample-queries.jsonl is stale: regenerate it with `mosaic eval generate --out eval/sample-queries.jsonl`"
    );
    let parsed = queryset::read_jsonl(std::io::Cursor::new(&fixture)).unwrap();
    assert_eq!(parsed, a);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_small_end_to_end_run_respects_filters_and_pins_identifiers() {
    let db = TestDb::with_sample("eval").await;
    let ctx = ctx(&db, RetrievalProfile::default()).with_reranker(Arc::new(LocalReranker::new()));
    let all = queryset::generate(&QuerySetOptions::default());
    let queries = queryset::spread(&all, 35);
    assert_eq!(queries.len(), 35);
    let intents: HashSet<Intent> = queries.iter().map(|q| q.intent).collect();
    assert_eq!(
        intents.len(),
        Intent::GENERATED.len(),
        "spread covers every intent"
    );

    let variants = eval::standard_variants();
    let mut calls = 0;
    let catalog = eval::load_catalog(&ctx).await.expect("catalog");
    let report = eval::run(
        &ctx,
        &Principal("eval".into()),
        &catalog,
        &queries,
        &variants,
        &mut |_, _, _| calls += 1,
    )
    .await
    .expect("evaluation runs");
    assert_eq!(calls, queries.len() * variants.len());
    assert_eq!(report.variants.len(), variants.len());
    for v in &report.variants {
        let s = &v.overall;
        assert_eq!(s.queries, 35);
        assert_eq!(s.errors, 0, "{}", v.variant.key);
        assert!(
            s.filter_checked > 0,
            "{}: filtered results were checked",
            v.variant.key
        );
        assert_eq!(s.filter_violations, 0, "{}", v.variant.key);
        assert_eq!(
            s.exact_top1,
            Some(1.0),
            "{}: exact identifiers first",
            v.variant.key
        );
        assert!(s.ndcg10.is_some_and(|n| (0.0..=1.0).contains(&n)));
        assert!(s.p95_ms >= s.p50_ms);
    }
    let serving = report.variant("rrf_rerank").expect("serving variant");
    assert!(serving.variant.serving);
    assert!(
        serving.rerank_status.contains_key("reranked"),
        "{:?}",
        serving.rerank_status
    );

    // Every search left a receipt under the eval principal.
    let events: i64 = db
        .owner()
        .await
        .query_one(
            "SELECT count(*) FROM receipts.search_events WHERE principal = 'eval'",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(events, (queries.len() * variants.len()) as i64);
}
