//! Building blocks of `mosaic bench`: a fixed, seeded query mix, filter
//! shapes of known selectivity, the "floor" (the same arm SQL run directly
//! over one connection) and exact-scan ground truth for semantic recall.
//!
//! Nothing here is used when serving; it exists so that the service can be
//! measured against the cost of its own SQL.

use crate::eval::metrics::percentile;
use crate::generator::Generator;
use mosaic::embed::{EmbedError, EmbedKind, Embedder};
use mosaic::profile::RetrievalProfile;
use mosaic::search::arms::{self, ArmResult, Eligibility};
use mosaic::search::Filters;
use pgvector::Vector;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;
use std::collections::HashMap;
use std::time::Instant;
use tokio_postgres::Client;

/// One benchmark query and the category it is about.
#[derive(Debug, Clone, Serialize)]
pub struct BenchQuery {
    pub text: String,
    /// `model_number`, `typo`, `descriptive` or `category_words`.
    pub kind: &'static str,
    pub category: &'static str,
    pub domain: &'static str,
}

/// A fixed, seeded mix of realistic queries over a catalog of `products`
/// generated with `catalog_seed`: model numbers, typos of identity text,
/// descriptive needs and category words, in equal parts.
pub fn queries(catalog_seed: u64, products: u64, count: usize, seed: u64) -> Vec<BenchQuery> {
    let generator = Generator::new(catalog_seed, products);
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let kinds = ["model_number", "typo", "descriptive", "category_words"];
    (0..count)
        .map(|i| {
            let (p, truth) = generator.product(rng.gen_range(0..products));
            let kind = kinds[i % kinds.len()];
            let text = match kind {
                "model_number" => p.model.clone(),
                "typo" => {
                    let base = if rng.gen_bool(0.5) {
                        format!("{} {}", p.brand, p.model)
                    } else {
                        format!("{} {}", p.brand, truth.noun)
                    };
                    typo(&base, &mut rng)
                }
                "descriptive" => {
                    if rng.gen_bool(0.5) {
                        format!("{} {}", truth.noun, truth.need)
                    } else {
                        truth.need.to_string()
                    }
                }
                _ => {
                    let adjective = ["best", "cheap", "quiet", "compact", "premium"]
                        .choose(&mut rng)
                        .copied()
                        .unwrap_or("best");
                    if rng.gen_bool(0.5) {
                        truth.noun.to_string()
                    } else {
                        format!("{adjective} {}", truth.noun)
                    }
                }
            };
            BenchQuery {
                text,
                kind,
                category: truth.category,
                domain: truth.domain,
            }
        })
        .collect()
}

/// One keyboard slip in a word of 4+ letters: a swap, a drop or a double.
fn typo(s: &str, rng: &mut ChaCha8Rng) -> String {
    let words: Vec<&str> = s.split_whitespace().collect();
    let candidates: Vec<usize> = (0..words.len())
        .filter(|&i| words[i].chars().filter(|c| c.is_alphabetic()).count() >= 4)
        .collect();
    let Some(&w) = candidates.choose(rng) else {
        return s.to_string();
    };
    let mut chars: Vec<char> = words[w].chars().collect();
    let at = rng.gen_range(1..chars.len() - 1);
    match rng.gen_range(0..3) {
        0 => chars.swap(at, at + 1),
        1 => {
            chars.remove(at);
        }
        _ => chars.insert(at, chars[at]),
    }
    let mut out: Vec<String> = words.iter().map(|x| x.to_string()).collect();
    out[w] = chars.into_iter().collect();
    out.join(" ")
}

/// The filter shapes, in report order.
pub const SHAPES: [&str; 5] = [
    "none",
    "broad",
    "selective",
    "very_selective",
    "anti_correlated",
];

/// Per-category facts for building filters of a target selectivity.
#[derive(Debug, Clone)]
struct CategoryFacts {
    count: i64,
    brand: String,
    brand_count: i64,
}

/// Builds filters of known selectivity from the loaded catalog:
/// `broad` ~50% (price at or below the median), `selective` ~1% (the
/// query's category and a price band), `very_selective` ~0.05% (category,
/// its most common brand and a price band), `anti_correlated` (the query's
/// category, filtered to another domain).
pub struct ShapeBuilder {
    total: i64,
    median_price: i64,
    facts: HashMap<String, CategoryFacts>,
    bands: HashMap<(String, bool), (i64, i64)>,
}

impl ShapeBuilder {
    pub async fn new(client: &Client) -> Result<Self, tokio_postgres::Error> {
        let row = client
            .query_one(
                "SELECT count(*), (percentile_disc(0.5) WITHIN GROUP (ORDER BY price_cents))::bigint
                 FROM catalog.products",
                &[],
            )
            .await?;
        let (total, median_price): (i64, i64) = (row.get(0), row.get(1));
        let mut facts = HashMap::new();
        for r in client
            .query(
                "SELECT DISTINCT ON (category_key) category_key,
                        sum(count(*)) OVER (PARTITION BY category_key)::bigint, brand, count(*)
                 FROM catalog.products GROUP BY category_key, brand
                 ORDER BY category_key, count(*) DESC, brand",
                &[],
            )
            .await?
        {
            facts.insert(
                r.get::<_, String>(0),
                CategoryFacts {
                    count: r.get(1),
                    brand: r.get(2),
                    brand_count: r.get(3),
                },
            );
        }
        let mut me = ShapeBuilder {
            total,
            median_price,
            facts,
            bands: HashMap::new(),
        };
        let keys: Vec<String> = me.facts.keys().cloned().collect();
        for key in keys {
            let f = me.facts[&key].clone();
            for with_brand in [false, true] {
                let (share, target) = if with_brand {
                    (f.brand_count, 0.0005)
                } else {
                    (f.count, 0.01)
                };
                let width = ((target * total as f64) / share.max(1) as f64).clamp(0.0, 1.0);
                let (lo, hi) = (0.5 - width / 2.0, 0.5 + width / 2.0);
                let brand: Option<&str> = with_brand.then_some(f.brand.as_str());
                let r = client
                    .query_one(
                        "SELECT (percentile_disc($2) WITHIN GROUP (ORDER BY price_cents))::bigint,
                                (percentile_disc($3) WITHIN GROUP (ORDER BY price_cents))::bigint
                         FROM catalog.products
                         WHERE category_key = $1 AND ($4::text IS NULL OR brand = $4)",
                        &[&key, &lo, &hi, &brand],
                    )
                    .await?;
                me.bands
                    .insert((key.clone(), with_brand), (r.get(0), r.get(1)));
            }
        }
        Ok(me)
    }

    pub fn total(&self) -> i64 {
        self.total
    }

    /// The filters of `shape` for query `q`.
    pub fn filters(&self, shape: &str, q: &BenchQuery) -> Filters {
        let mut f = Filters::default();
        match shape {
            "broad" => f.max_price_cents = Some(self.median_price),
            "selective" | "very_selective" => {
                let with_brand = shape == "very_selective";
                f.category_key = Some(q.category.to_string());
                if let Some(&(lo, hi)) = self.bands.get(&(q.category.to_string(), with_brand)) {
                    f.min_price_cents = Some(lo);
                    f.max_price_cents = Some(hi);
                }
                if with_brand {
                    f.brand = self.facts.get(q.category).map(|c| c.brand.clone());
                }
            }
            "anti_correlated" => {
                let other = ["electronics", "home_kitchen", "outdoor", "office"]
                    .into_iter()
                    .find(|d| *d != q.domain)
                    .unwrap_or("office");
                f.domain = Some(other.to_string());
            }
            _ => {}
        }
        f
    }
}

/// The JSON filters object of a request body.
pub fn filters_json(f: &Filters) -> serde_json::Value {
    serde_json::to_value(f).unwrap_or_default()
}

/// The query vector the service would compute with `embedder`.
pub async fn query_vector(embedder: &dyn Embedder, query: &str) -> Result<Vector, EmbedError> {
    let mut v = embedder
        .embed(&[query.to_string()], EmbedKind::Query)
        .await?;
    match v.pop() {
        Some(v) => Ok(Vector::from(v)),
        None => Err(EmbedError::Failed("the embedder returned no vector".into())),
    }
}

/// One direct run of the arm set: what the service's SQL costs on its own.
#[derive(Debug, Clone)]
pub struct DirectRun {
    /// Wall time of the whole read-only transaction, arms back to back.
    pub floor_ms: f64,
    pub exact_identifier_ms: f64,
    pub lexical: ArmResult,
    pub trigram: ArmResult,
    pub semantic: ArmResult,
}

/// Runs exact identifier, lexical, trigram and semantic arms back to back
/// in one read-only transaction with the service's session settings; the
/// lexical arm estimates a price filter's share from `price_stats`, as the
/// service does from its context's.
pub async fn direct(
    client: &mut Client,
    price_stats: &mosaic::PriceStatsCache,
    elig: &Eligibility,
    query: &str,
    vector: &Vector,
    profile: &RetrievalProfile,
) -> Result<DirectRun, tokio_postgres::Error> {
    let t = Instant::now();
    let tx = client.build_transaction().read_only(true).start().await?;
    arms::apply_settings(&tx, profile).await?;
    let te = Instant::now();
    arms::exact_identifier(&tx, elig, query).await?;
    let exact_identifier_ms = te.elapsed().as_secs_f64() * 1000.0;
    let price_share = price_stats.share(&tx, elig).await?;
    let lexical_elig = elig.clone().with_price_share(price_share);
    let lexical = arms::lexical(&tx, &lexical_elig, query, profile).await?;
    // No understanding step here: every query runs the whole cascade.
    let trigram = arms::trigram(&tx, elig, query, (false, None), profile).await?;
    let semantic = arms::semantic(&tx, elig, query, vector, profile).await?;
    tx.commit().await?;
    Ok(DirectRun {
        floor_ms: t.elapsed().as_secs_f64() * 1000.0,
        exact_identifier_ms,
        lexical,
        trigram,
        semantic,
    })
}

/// The semantic arm alone for `query`'s `vector`, with the service's
/// session settings.
pub async fn semantic_only(
    client: &mut Client,
    elig: &Eligibility,
    query: &str,
    vector: &Vector,
    profile: &RetrievalProfile,
) -> Result<ArmResult, tokio_postgres::Error> {
    let tx = client.build_transaction().read_only(true).start().await?;
    arms::apply_settings(&tx, profile).await?;
    let r = arms::semantic(&tx, elig, query, vector, profile).await?;
    tx.commit().await?;
    Ok(r)
}

/// The lexical arm alone.
pub async fn lexical_only(
    client: &Client,
    elig: &Eligibility,
    query: &str,
    profile: &RetrievalProfile,
) -> Result<ArmResult, tokio_postgres::Error> {
    arms::lexical(client, elig, query, profile).await
}

/// The trigram arm alone, in a read-only transaction with the service's
/// session settings (its cascade sets its threshold with SET LOCAL).
pub async fn trigram_only(
    client: &mut Client,
    elig: &Eligibility,
    query: &str,
    profile: &RetrievalProfile,
) -> Result<ArmResult, tokio_postgres::Error> {
    let tx = client.build_transaction().read_only(true).start().await?;
    arms::apply_settings(&tx, profile).await?;
    let r = arms::trigram(&tx, elig, query, (false, None), profile).await?;
    tx.commit().await?;
    Ok(r)
}

/// Ground truth: the exact top `k` by cosine distance over every eligible
/// row (the exact route's SQL, which the HNSW index cannot serve).
pub async fn exact_top(
    client: &Client,
    elig: &Eligibility,
    vector: &Vector,
    k: i64,
) -> Result<Vec<String>, tokio_postgres::Error> {
    let rows = client
        .query(
            arms::SEMANTIC_EXACT_SQL,
            &elig.params(&[vector, &k, &None::<i32>]),
        )
        .await?;
    Ok(rows.iter().map(|r| r.get(0)).collect())
}

/// Exact number of eligible rows.
pub async fn eligible_count(
    client: &Client,
    elig: &Eligibility,
) -> Result<i64, tokio_postgres::Error> {
    Ok(client
        .query_one(arms::ELIGIBILITY_SQL, &elig.params(&[]))
        .await?
        .get(0))
}

/// Distance-aware recall@k: a returned row counts when its score is at
/// least the exact k-th score (rows tied at the cut are interchangeable).
pub fn recall_at_score(got: &[(String, f64)], truth: &[(String, f64)], k: usize) -> f64 {
    if truth.is_empty() {
        return 1.0;
    }
    let k = k.min(truth.len());
    let cut = truth[k - 1].1 - 1e-6;
    let hit = got.iter().take(k).filter(|(_, s)| *s >= cut).count();
    hit as f64 / k as f64
}

/// Exact top `k` with scores.
pub async fn exact_top_scored(
    client: &Client,
    elig: &Eligibility,
    vector: &Vector,
    k: i64,
) -> Result<Vec<(String, f64)>, tokio_postgres::Error> {
    let rows = client
        .query(
            arms::SEMANTIC_EXACT_SQL,
            &elig.params(&[vector, &k, &None::<i32>]),
        )
        .await?;
    Ok(arms::scored_by_distance(&rows))
}

/// recall@k of `got` (ranked ids) against `truth` (the exact top k).
pub fn recall_at(got: &[(String, f64)], truth: &[String], k: usize) -> f64 {
    if truth.is_empty() {
        return 1.0;
    }
    let k = k.min(truth.len());
    let top: Vec<&String> = got.iter().take(k).map(|(id, _)| id).collect();
    let hit = truth[..k].iter().filter(|id| top.contains(id)).count();
    hit as f64 / k as f64
}

/// p50/p95/p99/mean/max of a sample (nearest-rank percentiles).
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct Summary {
    pub n: usize,
    pub p50: f64,
    pub p95: f64,
    pub p99: f64,
    pub mean: f64,
    pub max: f64,
}

pub fn summarize(values: &[f64]) -> Summary {
    if values.is_empty() {
        return Summary::default();
    }
    // Sorted once, so the mean adds up in the same order every time.
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    Summary {
        n: v.len(),
        p50: percentile(&v, 50.0),
        p95: percentile(&v, 95.0),
        p99: percentile(&v, 99.0),
        mean: v.iter().sum::<f64>() / v.len() as f64,
        max: v[v.len() - 1],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_query_mix_is_fixed_and_mixed() {
        let a = queries(42, 1_000, 40, 7);
        let b = queries(42, 1_000, 40, 7);
        assert_eq!(
            a.iter().map(|q| &q.text).collect::<Vec<_>>(),
            b.iter().map(|q| &q.text).collect::<Vec<_>>()
        );
        for kind in ["model_number", "typo", "descriptive", "category_words"] {
            assert_eq!(a.iter().filter(|q| q.kind == kind).count(), 10);
        }
        assert!(a.iter().all(|q| !q.text.trim().is_empty()));
    }

    #[test]
    fn percentiles_are_nearest_rank() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        let s = summarize(&v);
        assert_eq!((s.p50, s.p95, s.p99, s.max), (50.0, 95.0, 99.0, 100.0));
    }
}
