//! The local all-MiniLM-L6-v2 embedder against an independent reference
//! implementation (tests/fixtures/minilm-reference.json), plus semantic,
//! shape and determinism checks.
//!
//! Needs the model files: run `scripts/fetch-model.sh` first (honours
//! `MOSAIC_MODEL_DIR`). Missing files fail the tests; they are never skipped.
//!
//! Speed (release build, ignored by default):
//! `cargo test --release -p mosaic --features local-model --test minilm -- --ignored --nocapture`
#![cfg(feature = "local-model")]

use std::sync::OnceLock;
use std::time::{Duration, Instant};

use mosaic::embed::minilm::{MiniLmEmbedder, DIMENSION, MODEL_ID};
use mosaic::embed::{cosine, EmbedKind, Embedder};

const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../tests/fixtures/minilm-reference.json"
);

fn model() -> &'static MiniLmEmbedder {
    static MODEL: OnceLock<MiniLmEmbedder> = OnceLock::new();
    MODEL.get_or_init(|| {
        let dir = MiniLmEmbedder::default_dir();
        MiniLmEmbedder::load(&dir).unwrap_or_else(|e| {
            panic!(
                "could not load all-MiniLM-L6-v2 from {}: {e}\n\
                 Run scripts/fetch-model.sh (it honours MOSAIC_MODEL_DIR) and re-run the tests.",
                dir.display()
            )
        })
    })
}

struct Reference {
    text: String,
    tokens: Vec<String>,
    embedding: Vec<f32>,
}

fn reference() -> Vec<Reference> {
    let raw = std::fs::read_to_string(FIXTURE)
        .unwrap_or_else(|e| panic!("cannot read fixture {FIXTURE}: {e}"));
    let json: serde_json::Value = serde_json::from_str(&raw).expect("fixture is JSON");
    let sentences = json["sentences"].as_array().expect("fixture has sentences");
    assert_eq!(sentences.len(), 10, "fixture should hold ten sentences");
    sentences
        .iter()
        .map(|s| Reference {
            text: s["text"].as_str().expect("text").to_string(),
            tokens: s["tokens"]
                .as_array()
                .expect("tokens")
                .iter()
                .map(|t| t.as_str().expect("token").to_string())
                .collect(),
            embedding: s["embedding"]
                .as_array()
                .expect("embedding")
                .iter()
                .map(|x| x.as_f64().expect("number") as f32)
                .collect(),
        })
        .collect()
}

fn embed(texts: &[&str]) -> Vec<Vec<f32>> {
    let texts: Vec<String> = texts.iter().map(|t| t.to_string()).collect();
    model().embed_sync(&texts).expect("embedding succeeds")
}

fn max_abs_diff(a: &[Vec<f32>], b: &[Vec<f32>]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .flat_map(|(x, y)| {
            assert_eq!(x.len(), y.len());
            x.iter().zip(y).map(|(p, q)| (p - q).abs())
        })
        .fold(0f32, f32::max)
}

#[test]
fn matches_the_reference_tokens_and_vectors() {
    let refs = reference();
    let texts: Vec<&str> = refs.iter().map(|r| r.text.as_str()).collect();
    let got = embed(&texts);
    let mut worst = f32::INFINITY;
    for (r, v) in refs.iter().zip(&got) {
        let tokens = model().tokens(&r.text).expect("tokenizes");
        assert_eq!(tokens, r.tokens, "tokens of {:?}", r.text);
        assert_eq!(
            r.embedding.len(),
            DIMENSION,
            "fixture vector of {:?}",
            r.text
        );
        let c = cosine(v, &r.embedding);
        assert!(c >= 0.9999, "cosine to reference for {:?} is {c}", r.text);
        worst = worst.min(c);
    }
    println!("lowest cosine to the reference over ten sentences: {worst:.6}");
}

#[test]
fn known_sentence_pair_similarity() {
    let v = embed(&["A man is eating food.", "A man is eating a piece of bread."]);
    let c = cosine(&v[0], &v[1]);
    println!("food/bread cosine: {c:.4}");
    assert!(
        (c - 0.7553).abs() <= 0.001,
        "cosine is {c}, expected 0.7553 ± 0.001"
    );
}

#[test]
fn vectors_are_unit_length_with_384_dims() {
    let m = model();
    assert_eq!(m.model_id(), MODEL_ID);
    assert_eq!(m.model_id(), "local/all-MiniLM-L6-v2");
    assert_eq!(m.dimension(), 384);
    let long = "wireless headphones with long battery life ".repeat(60);
    let texts = [
        "",
        "x",
        "Sonora WH-C720",
        "ergonomic office chair with lumbar support",
        long.as_str(),
    ];
    for (t, v) in texts.iter().zip(embed(&texts)) {
        assert_eq!(v.len(), 384, "dims of {t:?}");
        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-5, "norm of {t:?} is {norm}");
        assert!(v.iter().all(|x| x.is_finite()), "finite values for {t:?}");
    }
    // Truncation at 256 tokens, [CLS] and [SEP] included.
    let tokens = m.tokens(&long).unwrap();
    assert_eq!(tokens.len(), 256);
    assert_eq!(tokens.first().map(String::as_str), Some("[CLS]"));
    assert_eq!(tokens.last().map(String::as_str), Some("[SEP]"));
}

#[test]
fn product_paraphrases_beat_unrelated_text() {
    // (query, paraphrase, unrelated)
    let cases = [
        (
            "noise cancelling headphones for flights",
            "over-ear ANC headset for travel",
            "stainless steel chef knife",
        ),
        (
            "cheap laptop for students",
            "budget notebook computer for school",
            "organic cotton bath towels",
        ),
        (
            "running shoes for a marathon",
            "lightweight trainers for long-distance races",
            "cast iron skillet with lid",
        ),
        (
            "waterproof hiking jacket",
            "rain-proof shell coat for trekking",
            "wireless gaming mouse",
        ),
        (
            "55 inch 4K TV",
            "55-inch ultra HD television",
            "picture book about dinosaurs for toddlers",
        ),
        (
            "ergonomic office chair",
            "desk seat with lumbar support for back pain",
            "dry food for puppies",
        ),
        (
            "coffee maker with built-in grinder",
            "bean-to-cup espresso machine",
            "magnetic car phone mount",
        ),
        (
            "kids bike with training wheels",
            "children's bicycle with stabilisers",
            "rechargeable electric toothbrush",
        ),
        (
            "fast USB-C phone charger",
            "quick charge power adapter for smartphones",
            "non-slip yoga mat",
        ),
        (
            "sleeping bag for winter camping",
            "cold weather down mummy bag",
            "mechanical keyboard with RGB lighting",
        ),
    ];
    let mut wins = 0;
    let mut report = Vec::new();
    for (q, para, other) in cases {
        let v = embed(&[q, para, other]);
        let (cp, cu) = (cosine(&v[0], &v[1]), cosine(&v[0], &v[2]));
        if cp > cu {
            wins += 1;
        }
        report.push(format!("{q:?}: paraphrase {cp:.3} vs unrelated {cu:.3}"));
    }
    println!("{}", report.join("\n"));
    assert!(
        wins >= 9,
        "only {wins}/10 paraphrases won:\n{}",
        report.join("\n")
    );
}

#[test]
fn identical_across_runs_and_batch_sizes() {
    let mut texts: Vec<String> = reference().into_iter().map(|r| r.text).collect();
    assert_eq!(texts.len(), 10);
    // Mix in texts whose token lengths collide and differ.
    texts.extend(
        [
            "cheap laptop for students",
            "budget notebook computer for school",
            "",
            "A man is eating food.",
        ]
        .map(String::from),
    );
    let m = model();
    let full = m.embed_sync(&texts).unwrap();
    let again = m.embed_sync(&texts).unwrap();
    assert_eq!(max_abs_diff(&full, &again), 0.0, "two runs differ");

    for batch in [1, 3, 10] {
        let mut chunked = Vec::new();
        for chunk in texts.chunks(batch) {
            chunked.extend(m.embed_sync(chunk).unwrap());
        }
        let d = max_abs_diff(&full, &chunked);
        assert!(d <= 1e-6, "batch size {batch}: max abs diff {d}");
    }

    // Reversed order yields the same vector per text.
    let mut reversed = texts.clone();
    reversed.reverse();
    let mut back = m.embed_sync(&reversed).unwrap();
    back.reverse();
    assert!(max_abs_diff(&full, &back) <= 1e-6, "order changes vectors");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn async_embed_matches_sync() {
    let m = model().clone();
    let texts: Vec<String> = ["noise cancelling headphones", "cast iron skillet"]
        .map(String::from)
        .to_vec();
    let a = m.embed(&texts, EmbedKind::Query).await.unwrap();
    let b = m.embed(&texts, EmbedKind::Document).await.unwrap();
    let s = m.embed_sync(&texts).unwrap();
    assert_eq!(max_abs_diff(&a, &s), 0.0);
    assert_eq!(max_abs_diff(&b, &s), 0.0);
    assert!(m.embed(&[], EmbedKind::Query).await.unwrap().is_empty());
}

#[test]
fn bad_model_files_give_a_clear_error() {
    let dir = std::env::temp_dir().join(format!("mosaic-minilm-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();

    let missing = MiniLmEmbedder::load(&dir.join("nope"))
        .unwrap_err()
        .to_string();
    assert!(missing.contains("config.json"), "{missing}");
    assert!(missing.contains("scripts/fetch-model.sh"), "{missing}");

    std::fs::write(dir.join("config.json"), b"{}").unwrap();
    let wrong = MiniLmEmbedder::load(&dir).unwrap_err().to_string();
    std::fs::remove_dir_all(&dir).ok();
    assert!(wrong.contains("config.json"), "{wrong}");
    assert!(
        wrong.contains("953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41"),
        "{wrong}"
    );
    // SHA-256 of "{}".
    assert!(
        wrong.contains("44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"),
        "{wrong}"
    );
    assert!(wrong.contains("scripts/fetch-model.sh"), "{wrong}");
}

/// Query latency and document throughput. Meaningful in a release build.
#[test]
#[ignore = "speed measurement; run with --release -- --ignored --nocapture"]
fn speed() {
    let m = model();
    let nouns = [
        "headphones",
        "laptop",
        "running shoes",
        "office chair",
        "monitor",
        "backpack",
        "coffee maker",
        "tent",
        "blender",
        "keyboard",
        "jacket",
        "smartwatch",
    ];
    let adjectives = [
        "wireless",
        "cheap",
        "lightweight",
        "ergonomic",
        "waterproof",
        "quiet",
        "compact",
        "premium",
        "durable",
        "portable",
    ];
    let queries: Vec<String> = (0..200)
        .map(|i| {
            format!(
                "{} {} under ${}",
                adjectives[i % adjectives.len()],
                nouns[(i * 7) % nouns.len()],
                50 + (i % 9) * 25
            )
        })
        .collect();

    // Warm-up.
    for q in queries.iter().take(20) {
        m.embed_sync(std::slice::from_ref(q)).unwrap();
    }
    let mut times: Vec<Duration> = queries
        .iter()
        .map(|q| {
            let t = Instant::now();
            m.embed_sync(std::slice::from_ref(q)).unwrap();
            t.elapsed()
        })
        .collect();
    times.sort();
    let pct = |p: f64| times[((times.len() as f64 * p).ceil() as usize - 1).min(times.len() - 1)];
    println!(
        "query latency over {} short queries: p50 {:.1} ms, p95 {:.1} ms, max {:.1} ms",
        times.len(),
        pct(0.50).as_secs_f64() * 1e3,
        pct(0.95).as_secs_f64() * 1e3,
        times.last().unwrap().as_secs_f64() * 1e3,
    );

    // ~60-word product descriptions, varied so token lengths differ.
    let words = [
        "the",
        "with",
        "for",
        "and",
        "battery",
        "hours",
        "comfortable",
        "design",
        "premium",
        "sound",
        "fabric",
        "steel",
        "warranty",
        "includes",
        "adjustable",
        "water-resistant",
        "grams",
        "fits",
        "most",
        "travel",
        "everyday",
        "use",
        "noise",
        "cancelling",
        "cushions",
        "charging",
        "USB-C",
        "recycled",
        "materials",
        "support",
    ];
    let docs: Vec<String> = (0..1000)
        .map(|i| {
            let n = 50 + i % 21;
            let body: Vec<&str> = (0..n)
                .map(|j| words[(i * 31 + j * 17 + j * j) % words.len()])
                .collect();
            format!(
                "{} {}: {}.",
                adjectives[i % adjectives.len()],
                nouns[i % nouns.len()],
                body.join(" ")
            )
        })
        .collect();
    let tokens: usize = docs.iter().map(|d| m.tokens(d).unwrap().len()).sum();
    let t = Instant::now();
    for chunk in docs.chunks(32) {
        m.embed_sync(chunk).unwrap();
    }
    let secs = t.elapsed().as_secs_f64();
    println!(
        "throughput: {} docs (mean {:.0} tokens) in batches of 32: {:.1} s, {:.1} texts/s",
        docs.len(),
        tokens as f64 / docs.len() as f64,
        secs,
        docs.len() as f64 / secs
    );
}
