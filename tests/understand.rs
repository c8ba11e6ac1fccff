//! Query understanding: a misspelt word is corrected against the catalog's
//! vocabulary before the text arms run, the correction is recorded in the
//! receipt and shown by diagnostics and explain, words a shopper writes are
//! never "corrected", identifiers are left to the arms made for them, and
//! the vocabulary follows the catalog. Against the real PostgreSQL and the
//! sample catalog, on the runtime role.

use mosaic::scope::explain_retrieval;
use mosaic::search::{search_json, Shape};
use mosaic::{Ctx, Principal, RetrievalProfile};
use mosaic_integration_tests::{a_brand, add_product_titled, ctx, misspelt, served, TestDb};
use serde_json::{json, Value};

fn alice() -> Principal {
    Principal("alice".into())
}

async fn search(c: &Ctx, body: Value) -> Value {
    search_json(c, &alice(), &body, Shape::Nested)
        .await
        .expect("search")
}

#[tokio::test]
async fn a_misspelt_brand_is_corrected_for_the_text_arms_and_recorded() {
    let db = TestDb::with_sample("understand_brand").await;
    let c = ctx(&db, RetrievalProfile::default());
    let (brand, lower, category) = a_brand(&db).await;
    let typo = misspelt(&lower);
    let r = search(
        &c,
        json!({"query": format!("{typo} {category}"), "limit": 10, "include_diagnostics": true}),
    )
    .await;

    let u = &r["diagnostics"]["query_understanding"];
    assert_eq!(
        u["corrections"],
        json!([{"from": typo, "to": lower, "edits": 1}]),
        "{u}"
    );
    assert_eq!(u["corrected_query"], json!(format!("{lower} {category}")));
    // The lexical arm's strict query matched: no back-off over every term.
    assert_eq!(r["diagnostics"]["arms"]["lexical"]["mode"], json!("strict"));
    // The receipt keeps the query as the caller wrote it.
    assert_eq!(r["normalized_query"], json!(format!("{typo} {category}")));
    let top = &r["results"][0];
    assert_eq!(top["brand"], json!(brand), "{top}");
    assert!(r["diagnostics"]["timings_ms"]["understand"].is_number());

    // The same record is in the receipt, and explain shows it.
    let e = explain_retrieval(
        &c,
        &alice(),
        &json!({"retrieval_scope_id": r["search_event_id"]}),
    )
    .await
    .expect("explain");
    assert_eq!(e["query_understanding"], *u);
}

#[tokio::test]
async fn two_neighbouring_letters_swapped_are_one_edit_however_few_trigrams_they_share() {
    let db = TestDb::with_sample("understand_swap").await;
    let c = ctx(&db, RetrievalProfile::default());
    let rt = db.runtime().await;
    for (query, from, to) in [
        ("standing dsek", "dsek", "desk"),
        ("wireless mosue", "mosue", "mouse"),
    ] {
        // Too few shared trigrams for the vocabulary's trigram index to
        // offer the word meant.
        let similarity: f32 = rt
            .query_one("SELECT similarity($1, $2)", &[&from, &to])
            .await
            .unwrap()
            .get(0);
        assert!(similarity < 0.25, "{from} {to}: {similarity}");
        let r = search(
            &c,
            json!({"query": query, "limit": 10, "include_diagnostics": true}),
        )
        .await;
        let u = &r["diagnostics"]["query_understanding"];
        assert_eq!(
            u["corrections"],
            json!([{"from": from, "to": to, "edits": 1}]),
            "{u}"
        );
        assert_eq!(u["unknown"], json!([]), "{u}");
        assert_eq!(r["diagnostics"]["arms"]["lexical"]["mode"], json!("strict"));
    }
}

#[tokio::test]
async fn words_a_shopper_writes_and_identifiers_are_left_alone() {
    let db = TestDb::with_sample("understand_alone").await;
    let c = ctx(&db, RetrievalProfile::default());
    // English words the catalog may not hold are never turned into the
    // catalog's look-alikes.
    let r = search(
        &c,
        json!({"query": "wired headphones my kids can wear", "include_diagnostics": true}),
    )
    .await;
    let u = &r["diagnostics"]["query_understanding"];
    assert_eq!(u["corrections"], json!([]), "{u}");
    assert!(u.get("corrected_query").is_none(), "{u}");

    // A model number is seen as an identifier and never corrected; the
    // exact-identifier strategy still pins its product.
    let model: String = db
        .owner()
        .await
        .query_one(
            "SELECT model FROM catalog.products WHERE model ~ '[0-9]' ORDER BY product_id LIMIT 1",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    let r = search(&c, json!({"query": model, "include_diagnostics": true})).await;
    let u = &r["diagnostics"]["query_understanding"];
    assert_eq!(u["corrections"], json!([]), "{u}");
    assert!(
        !u["identifiers"].as_array().unwrap().is_empty(),
        "{model}: {u}"
    );
    assert_eq!(r["strategy"], json!("exact_identifier"));

    // A filters-only search has nothing to understand.
    let r = search(
        &c,
        json!({"filters": {"category_key": "headphones"}, "include_diagnostics": true}),
    )
    .await;
    assert!(r["diagnostics"].get("query_understanding").is_none());
}

#[tokio::test]
async fn with_correction_off_the_arms_see_the_query_as_written() {
    let db = TestDb::with_sample("understand_off").await;
    let (_, lower, category) = a_brand(&db).await;
    let typo = misspelt(&lower);
    let body = json!({"query": format!("{typo} {category}"), "include_diagnostics": true});
    let off = RetrievalProfile {
        query_correction: 0,
        ..RetrievalProfile::default()
    };
    let r = search(&ctx(&db, off), body).await;
    let u = &r["diagnostics"]["query_understanding"];
    assert_eq!(u["corrections"], json!([]), "{u}");
    assert_ne!(r["diagnostics"]["arms"]["lexical"]["mode"], json!("strict"));
}

#[tokio::test]
async fn the_vocabulary_follows_the_catalog_and_only_the_owner_writes_it() {
    let db = TestDb::with_sample("understand_vocab").await;
    let c = ctx(&db, RetrievalProfile::default());
    let body = json!({"query": "zorbulaxe", "limit": 5, "include_diagnostics": true});
    let before = search(&c, body.clone()).await;
    assert_eq!(
        before["diagnostics"]["query_understanding"]["corrections"],
        json!([])
    );

    // A product whose title holds a new word; its refresh (as load and
    // import run it) brings the word into the vocabulary.
    add_product_titled(&db, "P-VOCAB-1", "Zorbulax").await;

    let after = search(&c, body).await;
    assert_eq!(
        after["diagnostics"]["query_understanding"]["corrections"],
        json!([{"from": "zorbulaxe", "to": "zorbulax", "edits": 1}])
    );
    assert_eq!(served(&after)[0], "P-VOCAB-1");

    // The runtime role reads the vocabulary and cannot change it.
    let runtime = db.runtime().await;
    let n: i64 = runtime
        .query_one("SELECT count(*) FROM search.vocabulary", &[])
        .await
        .unwrap()
        .get(0);
    assert!(n > 1000, "{n}");
    for sql in [
        "INSERT INTO search.vocabulary VALUES ('forged', 1)",
        "DELETE FROM search.vocabulary",
        "SELECT search.refresh_vocabulary()",
    ] {
        let e = runtime.batch_execute(sql).await.expect_err(sql);
        assert_eq!(
            e.code(),
            Some(&tokio_postgres::error::SqlState::INSUFFICIENT_PRIVILEGE),
            "{sql}: {e}"
        );
    }
}

#[tokio::test]
async fn a_tie_between_corrections_goes_to_the_word_held_alongside_the_query() {
    let db = TestDb::with_sample("understand_tie").await;
    // "zorbax" is one edit from "zorbay" (two products) and from "zorbal"
    // (one product, the only one that also holds "quillon"). Each copies the
    // catalog's first product, which these ids sort after.
    add_product_titled(&db, "Q-TIE-1", "Zorbay").await;
    add_product_titled(&db, "Q-TIE-2", "Zorbay").await;
    add_product_titled(&db, "Q-TIE-3", "Zorbal Quillon").await;
    let c = ctx(&db, RetrievalProfile::default());
    let body = json!({"query": "zorbax quillon", "limit": 5, "include_diagnostics": true});
    let r = search(&c, body.clone()).await;
    let u = &r["diagnostics"]["query_understanding"];
    assert_eq!(
        u["corrections"],
        json!([{"from": "zorbax", "to": "zorbal", "edits": 1, "alongside": 1}]),
        "{u}"
    );
    assert_eq!(served(&r)[0], "Q-TIE-3");
    // The receipt holds the same record, and explain shows it.
    let e = explain_retrieval(
        &c,
        &alice(),
        &json!({"retrieval_scope_id": r["search_event_id"]}),
    )
    .await
    .expect("explain");
    assert_eq!(e["query_understanding"], *u);

    // With nothing else in the query, the most common word wins.
    let r = search(&c, json!({"query": "zorbax", "include_diagnostics": true})).await;
    assert_eq!(
        r["diagnostics"]["query_understanding"]["corrections"],
        json!([{"from": "zorbax", "to": "zorbay", "edits": 1, "alongside": 0}])
    );

    // With the setting off, as before it existed: the most common word.
    let off = RetrievalProfile {
        correction_context: 0,
        ..RetrievalProfile::default()
    };
    let r = search(&ctx(&db, off), body).await;
    assert_eq!(
        r["diagnostics"]["query_understanding"]["corrections"],
        json!([{"from": "zorbax", "to": "zorbay", "edits": 1}])
    );
}

#[tokio::test]
async fn a_query_spelled_as_written_or_corrected_takes_only_the_trigram_arms_perfect_step() {
    let db = TestDb::with_sample("understand_spelled").await;
    let (_, lower, _) = a_brand(&db).await;
    let domain: String = db
        .owner()
        .await
        .query_one(
            "SELECT domain FROM search.product_projection WHERE brand_key = $1 LIMIT 1",
            &[&lower],
        )
        .await
        .unwrap()
        .get(0);
    let trigram = |r: &Value| r["diagnostics"]["arms"]["trigram"].clone();
    let spelled = lower.clone();
    let typo = misspelt(&lower);
    // A domain filter: the cascade then starts below 1.0 (no perfect step
    // first), so the two paths are told apart by the threshold that served.
    let body = |q: &str| json!({"query": q, "limit": 10, "filters": {"domain": domain}, "include_diagnostics": true});
    let on = ctx(&db, RetrievalProfile::default());
    let off = ctx(
        &db,
        RetrievalProfile {
            trigram_spelled_perfect: 0,
            ..Default::default()
        },
    );

    // Spelled as written: the perfect step alone; the brand's products
    // hold its name.
    let r = search(&on, body(&spelled)).await;
    assert!(r["diagnostics"]["query_understanding"]["corrections"]
        .as_array()
        .unwrap()
        .is_empty());
    let t = trigram(&r);
    assert_eq!(t["mode"], json!("threshold_1"), "{t}");
    assert!(t["returned"].as_i64().unwrap() > 0, "{t}");
    // Misspelt and corrected to the same words: the same perfect step, for
    // the corrected words.
    let r = search(&on, body(&typo)).await;
    assert_eq!(
        r["diagnostics"]["query_understanding"]["corrected_query"],
        json!(spelled)
    );
    let t = trigram(&r);
    assert_eq!(t["mode"], json!("threshold_1"), "{t}");
    assert!(t["returned"].as_i64().unwrap() > 0, "{t}");
    // As before `trigram_corrected_perfect`: a corrected query runs the
    // cascade.
    let cascade = ctx(
        &db,
        RetrievalProfile {
            trigram_corrected_perfect: 0,
            ..Default::default()
        },
    );
    let t = trigram(&search(&cascade, body(&typo)).await);
    assert_ne!(t["mode"], json!("threshold_1"), "{t}");
    // A word with no close neighbour is unknown: the cascade runs.
    let t = trigram(&search(&on, body(&format!("{spelled} qzxwvk"))).await);
    assert_ne!(t["mode"], json!("threshold_1"), "{t}");
    // Off: the spelled query runs the cascade too.
    let t = trigram(&search(&off, body(&spelled)).await);
    assert_ne!(t["mode"], json!("threshold_1"), "{t}");
    // Without correction no word is known to be spelled right: a typo keeps
    // the cascade.
    let unchecked = ctx(
        &db,
        RetrievalProfile {
            query_correction: 0,
            ..Default::default()
        },
    );
    let t = trigram(&search(&unchecked, body(&typo)).await);
    assert_ne!(t["mode"], json!("threshold_1"), "{t}");
}
