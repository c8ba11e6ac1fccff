//! The local sentence model end to end: a catalog embedded with
//! all-MiniLM-L6-v2 and a descriptive query that shares no word with the
//! product's title still finds it, through the semantic arm.

use mosaic::db::{self, MigrateOptions};
use mosaic::embed::minilm::MiniLmEmbedder;
use mosaic::search::fusion::Arm;
use mosaic::search::{search, SearchRequest, Shape};
use mosaic::{Principal, RetrievalProfile};
use mosaic_devtools::generator::{self, Generator};
use mosaic_integration_tests::TestDb;
use serde_json::json;
use std::collections::HashSet;
use std::sync::Arc;

fn words(s: &str) -> HashSet<String> {
    s.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

#[tokio::test]
async fn a_descriptive_query_without_title_words_is_found_by_the_semantic_arm() {
    let model = Arc::new(
        MiniLmEmbedder::load_default().expect("the local model (run scripts/fetch-model.sh)"),
    );
    let db = TestDb::empty("minilm_catalog").await;
    let mut c = db.owner().await;
    db::migrate(&mut c, &MigrateOptions::default())
        .await
        .unwrap();
    // 310 products: ten of each of the 31 categories.
    generator::load_sample(&mut c, Generator::new(7, 310), &mut |_, _, _| {})
        .await
        .unwrap();
    mosaic::embed_job::embed_pending(&c, model.as_ref(), 32, 2, &mut |_, _, _| {})
        .await
        .unwrap();

    let ctx = mosaic::Ctx::from_url(&db.runtime_url(), 2, RetrievalProfile::default())
        .unwrap()
        .with_embedder(model.clone());
    let query = "something that silences airplane engine racket while I travel";
    let body = json!({"query": query, "limit": 10, "rerank": false, "include_diagnostics": true});
    let req = SearchRequest::from_json(&body, Shape::Nested, &ctx.profile).unwrap();
    let r = search(&ctx, &Principal::anonymous(), req).await.unwrap();

    let q = words(query);
    let found: Vec<_> = r
        .results
        .iter()
        .filter(|x| x.category_key == "headphones" && words(&x.title).is_disjoint(&q))
        .collect();
    assert!(
        !found.is_empty(),
        "no headphones in the top 10 for {query:?}: {:?}",
        r.results.iter().map(|x| &x.title).collect::<Vec<_>>()
    );
    assert!(
        found.iter().all(|x| x.signals.semantic.is_some()),
        "found without the semantic arm"
    );
    // The semantic arm ranks headphones first on its own.
    let d = r.diagnostics.unwrap();
    assert_eq!(
        d.arms[Arm::Semantic].verdict,
        mosaic::search::arms::Verdict::Full
    );
    let top = r
        .results
        .iter()
        .find(|x| x.signals.semantic.map(|s| s.rank) == Some(1))
        .map(|x| x.category_key.clone());
    if let Some(cat) = top {
        assert_eq!(cat, "headphones");
    }
}
