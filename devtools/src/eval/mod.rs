//! Retrieval-quality evaluation: judged query sets, ranking metrics, and a
//! runner that sends every query through [`search_variant`] with parts of
//! the pipeline switched off, so each variant is measured on the very code
//! path the service runs.
//!
//! * [`queryset`]: the JSONL format and the generator of the sample set
//!   (judgments from the catalog generator's ground truth);
//! * [`metrics`]: nDCG@10, capped Recall@k, reciprocal rank, percentiles;
//! * [`run`]: one search per query and variant (limit 50: the served list
//!   is the whole pool), an independent filter check of every served result
//!   against catalog rows, and per-variant, per-intent summaries.
//!
//! Metric definitions are in [`metrics`] and EVALUATION.md. In short: every
//! @10 metric reads the first 10 of the 50 served results (the same ten a
//! `limit: 10` request serves, since the limit only truncates); Recall@50
//! and MRR read all 50; "relevant" is grade ≥ 2.

pub mod metrics;
pub mod queryset;

pub use queryset::{EvalQuery, Intent, Judgment, QuerySetOptions};

use metrics::{mean, percentile, Grades, RELEVANT_GRADE, TOP_GRADE};
use mosaic::catalog::Product;
use mosaic::context::{Ctx, Principal};
use mosaic::error::Error;
use mosaic::search::{search_variant, SearchRequest, Shape, Variant};
use serde::Serialize;
use serde_json::{json, Map, Value};
use std::collections::{BTreeMap, HashMap};
use std::time::Instant;

/// Results requested per search: the whole pool, so Recall@50 and MRR see
/// everything the pipeline would ever serve.
pub const EVAL_LIMIT: i64 = 50;

/// Per-arm weights of the weighted-RRF comparison (lexical, trigram,
/// semantic). A comparison only: the service always fuses unweighted.
pub const COMPARISON_WEIGHTS: [f64; 3] = [1.0, 0.5, 1.5];

/// The catalog fields a filter constrains, as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct CatalogRow {
    pub domain: String,
    pub category_key: String,
    pub brand: String,
    pub availability: String,
    pub price_cents: i64,
    pub rating: Option<f32>,
    pub attributes: Map<String, Value>,
}

impl From<&Product> for CatalogRow {
    fn from(p: &Product) -> Self {
        CatalogRow {
            domain: p.domain.clone(),
            category_key: p.category_key.clone(),
            brand: p.brand.clone(),
            availability: p.availability.clone(),
            price_cents: p.price_cents,
            rating: p.rating,
            attributes: p.attributes.clone(),
        }
    }
}

/// Whether `row` meets the HTTP filter object `filters`, decided from the
/// documented filter semantics alone (independent of the request parser and
/// of the SQL eligibility predicate). `null` leaves a field unconstrained;
/// an unknown field or a value of the wrong type is an error.
pub fn satisfies(row: &CatalogRow, filters: &Map<String, Value>) -> Result<bool, String> {
    let bad = |k: &str| Err(format!("filter `{k}` has a value of the wrong type"));
    for (k, v) in filters {
        if v.is_null() {
            continue;
        }
        let ok = match k.as_str() {
            "domain" | "category_key" | "brand" => {
                let Some(want) = v.as_str() else {
                    return bad(k);
                };
                let have = match k.as_str() {
                    "domain" => &row.domain,
                    "category_key" => &row.category_key,
                    _ => &row.brand,
                };
                if k == "brand" {
                    have.to_lowercase() == want.trim().to_lowercase()
                } else {
                    have == want.trim()
                }
            }
            "availability" => match v {
                Value::String(s) => row.availability == s.trim(),
                Value::Array(items) => items
                    .iter()
                    .any(|i| i.as_str().is_some_and(|s| row.availability == s.trim())),
                _ => return bad(k),
            },
            "in_stock_only" => match v.as_bool() {
                Some(true) => matches!(row.availability.as_str(), "in_stock" | "low_stock"),
                Some(false) => true,
                None => return bad(k),
            },
            "min_price_cents" => match v.as_i64() {
                Some(p) => row.price_cents >= p,
                None => return bad(k),
            },
            "max_price_cents" => match v.as_i64() {
                Some(p) => row.price_cents <= p,
                None => return bad(k),
            },
            "min_rating" => match v.as_f64() {
                // Ratings are stored as `real`: compare in that precision.
                Some(m) => row.rating.is_some_and(|r| r >= m as f32),
                None => return bad(k),
            },
            "attributes" => match v {
                Value::Object(want) => want.iter().all(|(ak, av)| {
                    row.attributes
                        .get(ak)
                        .is_some_and(|have| mosaic::catalog::attribute::matches(have, av))
                }),
                _ => return bad(k),
            },
            other => return Err(format!("unknown filter `{other}`")),
        };
        if !ok {
            return Ok(false);
        }
    }
    Ok(true)
}

/// How many products the queries judge relevant (grade above 0), and which
/// of them `catalog` lacks: an evaluation against a catalog without them
/// measures nothing.
pub fn judged_missing(
    queries: &[EvalQuery],
    catalog: &HashMap<String, CatalogRow>,
) -> (usize, Vec<String>) {
    let judged: std::collections::BTreeSet<&str> = queries
        .iter()
        .flat_map(|q| q.judgments.iter())
        .filter(|j| j.grade > 0)
        .map(|j| j.product_id.as_str())
        .collect();
    let missing = judged
        .iter()
        .filter(|id| !catalog.contains_key(**id))
        .map(|id| id.to_string())
        .collect();
    (judged.len(), missing)
}

/// Every catalog row, keyed by product id, for the filter check.
pub async fn load_catalog(ctx: &Ctx) -> Result<HashMap<String, CatalogRow>, Error> {
    let conn = ctx.pool.get().await?;
    let rows = conn
        .query(
            "SELECT product_id, domain, category_key, brand, availability, price_cents, rating,
                    attributes
             FROM catalog.products",
            &[],
        )
        .await?;
    Ok(rows
        .into_iter()
        .map(|r| {
            let attributes = match r.get::<_, Value>(7) {
                Value::Object(m) => m,
                _ => Map::new(),
            };
            (
                r.get(0),
                CatalogRow {
                    domain: r.get(1),
                    category_key: r.get(2),
                    brand: r.get(3),
                    availability: r.get(4),
                    price_cents: r.get(5),
                    rating: r.get(6),
                    attributes,
                },
            )
        })
        .collect())
}

/// One pipeline configuration under evaluation.
#[derive(Debug, Clone, Serialize)]
pub struct EvalVariant {
    pub key: &'static str,
    pub label: &'static str,
    #[serde(skip)]
    pub variant: Variant,
    /// Whether this is what the service runs.
    pub serving: bool,
    /// Whether this is a comparison that the service never runs.
    pub comparison: bool,
}

/// The side-by-side variants of `mosaic eval`: each arm alone, unweighted
/// RRF without and with the rerank (the latter is the serving pipeline),
/// and a weighted-RRF comparison. The exact-identifier strategy (SKU/model
/// pinned first) is part of every variant: it runs ahead of the arms.
pub fn standard_variants() -> Vec<EvalVariant> {
    let v = |arms: [bool; 3], weights: Option<[f64; 3]>, rerank: bool| Variant {
        arms,
        weights,
        rerank,
    };
    vec![
        EvalVariant {
            key: "lexical",
            label: "lexical only",
            variant: v([true, false, false], None, false),
            serving: false,
            comparison: false,
        },
        EvalVariant {
            key: "trigram",
            label: "trigram only",
            variant: v([false, true, false], None, false),
            serving: false,
            comparison: false,
        },
        EvalVariant {
            key: "semantic",
            label: "semantic only",
            variant: v([false, false, true], None, false),
            serving: false,
            comparison: false,
        },
        EvalVariant {
            key: "rrf",
            label: "RRF, no rerank",
            variant: v([true, true, true], None, false),
            serving: false,
            comparison: false,
        },
        EvalVariant {
            key: "rrf_rerank",
            label: "RRF + rerank (serving)",
            variant: Variant::SERVING,
            serving: true,
            comparison: false,
        },
        EvalVariant {
            key: "weighted_rrf",
            label: "weighted RRF 1/0.5/1.5 (comparison)",
            variant: v([true, true, true], Some(COMPARISON_WEIGHTS), false),
            serving: false,
            comparison: true,
        },
    ]
}

/// The outcome of one query under one variant.
#[derive(Debug, Clone, Serialize)]
pub struct QueryOutcome {
    pub query_id: String,
    pub intent: Intent,
    /// The first 10 served product ids (all 50 are scored).
    #[serde(serialize_with = "first_ten")]
    pub ranked: Vec<String>,
    pub ndcg10: Option<f64>,
    pub recall10: Option<f64>,
    pub recall50: Option<f64>,
    /// Reciprocal rank of the first relevant result; `None` when the query
    /// has no relevant product.
    pub reciprocal_rank: Option<f64>,
    /// Exact intents: whether the grade-3 product was ranked first.
    pub exact_top1: Option<bool>,
    /// Typo intent: whether the grade-3 product is in the top 10.
    pub typo_hit10: Option<bool>,
    pub zero_results: bool,
    /// Served results that fail the independent filter check.
    pub filter_violations: usize,
    /// Served results checked against a non-empty filter.
    pub filter_checked: usize,
    pub latency_ms: f64,
    pub strategy: String,
    pub rerank_status: String,
    /// What the response warned of (a stage skipped or degraded: a missed
    /// embedding deadline, a rerank fallback), as served.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    pub error: Option<String>,
}

fn first_ten<S: serde::Serializer>(ranked: &[String], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(ranked.iter().take(10))
}

/// Means and rates over a set of outcomes.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Summary {
    pub queries: usize,
    pub ndcg10: Option<f64>,
    pub recall10: Option<f64>,
    pub recall50: Option<f64>,
    pub mrr: Option<f64>,
    pub exact_queries: usize,
    pub exact_top1: Option<f64>,
    pub typo_queries: usize,
    pub typo_recovery10: Option<f64>,
    pub zero_result_rate: f64,
    pub filter_violations: usize,
    pub filter_checked: usize,
    pub errors: usize,
    /// Searches whose response carried a warning.
    pub with_warnings: usize,
    pub p50_ms: f64,
    pub p95_ms: f64,
}

impl Summary {
    pub fn of<'a>(outcomes: impl IntoIterator<Item = &'a QueryOutcome>) -> Summary {
        let o: Vec<&QueryOutcome> = outcomes.into_iter().collect();
        let rate = |flags: Vec<bool>| -> (usize, Option<f64>) {
            let n = flags.len();
            let hits = flags.iter().filter(|f| **f).count();
            (n, (n > 0).then(|| hits as f64 / n as f64))
        };
        let (exact_queries, exact_top1) = rate(o.iter().filter_map(|x| x.exact_top1).collect());
        let (typo_queries, typo_recovery10) = rate(o.iter().filter_map(|x| x.typo_hit10).collect());
        let latencies: Vec<f64> = o.iter().map(|x| x.latency_ms).collect();
        Summary {
            queries: o.len(),
            ndcg10: mean(o.iter().map(|x| x.ndcg10)),
            recall10: mean(o.iter().map(|x| x.recall10)),
            recall50: mean(o.iter().map(|x| x.recall50)),
            mrr: mean(o.iter().map(|x| x.reciprocal_rank)),
            exact_queries,
            exact_top1,
            typo_queries,
            typo_recovery10,
            zero_result_rate: if o.is_empty() {
                0.0
            } else {
                o.iter().filter(|x| x.zero_results).count() as f64 / o.len() as f64
            },
            filter_violations: o.iter().map(|x| x.filter_violations).sum(),
            filter_checked: o.iter().map(|x| x.filter_checked).sum(),
            errors: o.iter().filter(|x| x.error.is_some()).count(),
            with_warnings: o.iter().filter(|x| !x.warnings.is_empty()).count(),
            p50_ms: percentile(&latencies, 50.0),
            p95_ms: percentile(&latencies, 95.0),
        }
    }
}

/// Everything measured for one variant.
#[derive(Debug, Clone, Serialize)]
pub struct VariantReport {
    #[serde(flatten)]
    pub variant: EvalVariant,
    /// Wall time of this variant's pass over the queries.
    pub seconds: f64,
    pub overall: Summary,
    pub per_intent: BTreeMap<Intent, Summary>,
    /// How often the rerank stage ended in each status.
    pub rerank_status: BTreeMap<String, usize>,
    /// How many searches carried each warning.
    pub warnings: BTreeMap<String, usize>,
    pub outcomes: Vec<QueryOutcome>,
}

/// The result of an evaluation run.
#[derive(Debug, Clone, Serialize)]
pub struct EvalReport {
    pub queries: usize,
    pub principal: String,
    pub limit: i64,
    pub models: Value,
    pub profile: mosaic::RetrievalProfile,
    pub seconds: f64,
    pub variants: Vec<VariantReport>,
}

impl EvalReport {
    pub fn variant(&self, key: &str) -> Option<&VariantReport> {
        self.variants.iter().find(|v| v.variant.key == key)
    }
}

/// Scores one served list against one query.
pub fn score(
    q: &EvalQuery,
    grades: &Grades,
    ranked: Vec<String>,
    catalog: &HashMap<String, CatalogRow>,
) -> QueryOutcome {
    let filters = q.filters.as_ref().filter(|f| !f.is_empty());
    let (mut violations, mut checked) = (0, 0);
    if let Some(f) = filters {
        for id in &ranked {
            checked += 1;
            let ok = catalog
                .get(id)
                .is_some_and(|row| satisfies(row, f).unwrap_or(false));
            if !ok {
                violations += 1;
            }
        }
    }
    let has_relevant = metrics::relevant_count(grades) > 0;
    QueryOutcome {
        query_id: q.id.clone(),
        intent: q.intent,
        ndcg10: metrics::ndcg_at(&ranked, grades, 10),
        recall10: metrics::recall_at(&ranked, grades, 10),
        recall50: metrics::recall_at(&ranked, grades, 50),
        reciprocal_rank: has_relevant
            .then(|| metrics::reciprocal_rank(&ranked, grades, RELEVANT_GRADE)),
        exact_top1: q.intent.is_exact().then(|| {
            ranked
                .first()
                .is_some_and(|id| grades.get(id) == Some(&TOP_GRADE))
        }),
        typo_hit10: (q.intent == Intent::Typo)
            .then(|| metrics::hit_at(&ranked, grades, 10, TOP_GRADE)),
        zero_results: ranked.is_empty(),
        filter_violations: violations,
        filter_checked: checked,
        latency_ms: 0.0,
        strategy: String::new(),
        rerank_status: String::new(),
        warnings: Vec::new(),
        error: None,
        ranked,
    }
}

/// Runs every query through every variant (variant by variant, reranking
/// variants last) against `catalog` ([`load_catalog`], for the filter
/// check) and summarises. `progress(variant, done, total)` is
/// called after each search. A query whose search fails counts
/// as a zero-result query with its error recorded.
pub async fn run(
    ctx: &Ctx,
    principal: &Principal,
    catalog: &HashMap<String, CatalogRow>,
    queries: &[EvalQuery],
    variants: &[EvalVariant],
    progress: &mut dyn FnMut(&str, usize, usize),
) -> Result<EvalReport, Error> {
    let started = Instant::now();
    let requests: Vec<Result<SearchRequest, Error>> = queries
        .iter()
        .map(|q| {
            let mut body = json!({
                "query": q.query,
                "limit": EVAL_LIMIT,
                "include_diagnostics": true,
            });
            if let Some(f) = &q.filters {
                body["filters"] = Value::Object(f.clone());
            }
            SearchRequest::from_json(&body, Shape::Nested, &ctx.profile)
        })
        .collect();
    let grades: Vec<Grades> = queries.iter().map(EvalQuery::grades).collect();
    let mut outcomes: Vec<Vec<QueryOutcome>> = vec![Vec::new(); variants.len()];
    let mut seconds: Vec<f64> = vec![0.0; variants.len()];
    // Variant by variant, the reranking ones last: a rerank that overruns
    // its deadline leaves its model work running in the background, which
    // must not be billed to another variant's latency.
    let mut order: Vec<usize> = (0..variants.len()).collect();
    order.sort_by_key(|&i| variants[i].variant.rerank);
    for vi in order {
        let v = &variants[vi];
        let t_variant = Instant::now();
        for (n, q) in queries.iter().enumerate() {
            let t = Instant::now();
            let result = match &requests[n] {
                Ok(r) => search_variant(ctx, principal, r.clone(), &v.variant).await,
                Err(e) => Err(Error::invalid("query", e.to_string())),
            };
            let latency_ms = t.elapsed().as_secs_f64() * 1000.0;
            let outcome = match result {
                Ok(resp) => {
                    let ranked = resp.results.iter().map(|r| r.product_id.clone()).collect();
                    let mut o = score(q, &grades[n], ranked, catalog);
                    o.strategy = resp.strategy.as_str().to_string();
                    o.rerank_status = resp
                        .diagnostics
                        .as_ref()
                        .map(|d| d.rerank_status.to_string())
                        .unwrap_or_default();
                    o.warnings = resp.diagnostics.map(|d| d.warnings).unwrap_or_default();
                    o
                }
                Err(e) => {
                    tracing::warn!(query = %q.id, variant = v.key, error = %e, "evaluation search failed");
                    let mut o = score(q, &grades[n], Vec::new(), catalog);
                    o.error = Some(e.to_string());
                    o
                }
            };
            outcomes[vi].push(QueryOutcome {
                latency_ms: (latency_ms * 100.0).round() / 100.0,
                ..outcome
            });
            progress(v.key, n + 1, queries.len());
        }
        seconds[vi] = t_variant.elapsed().as_secs_f64();
    }
    let reports = variants
        .iter()
        .zip(outcomes)
        .zip(seconds)
        .map(|((v, outcomes), seconds)| {
            let mut per_intent = BTreeMap::new();
            for intent in Intent::ALL {
                let of: Vec<&QueryOutcome> =
                    outcomes.iter().filter(|o| o.intent == intent).collect();
                if !of.is_empty() {
                    per_intent.insert(intent, Summary::of(of));
                }
            }
            let mut rerank_status = BTreeMap::new();
            let mut warnings = BTreeMap::new();
            for o in &outcomes {
                *rerank_status.entry(o.rerank_status.clone()).or_insert(0) += 1;
                for w in &o.warnings {
                    *warnings.entry(w.clone()).or_insert(0) += 1;
                }
            }
            VariantReport {
                variant: v.clone(),
                seconds,
                overall: Summary::of(&outcomes),
                per_intent,
                rerank_status,
                warnings,
                outcomes,
            }
        })
        .collect();
    Ok(EvalReport {
        queries: queries.len(),
        principal: principal.as_str().to_string(),
        limit: EVAL_LIMIT,
        models: json!({
            "embedding": ctx.embedder.as_ref().map(|e| e.model_id().to_string()),
            "reranker": ctx.reranker.as_ref().map(|r| r.model_id().to_string()),
        }),
        profile: ctx.profile.clone(),
        seconds: started.elapsed().as_secs_f64(),
        variants: reports,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row() -> CatalogRow {
        let mut attributes = Map::new();
        attributes.insert("connectivity".into(), json!("wired"));
        attributes.insert("battery_hours".into(), json!(20));
        attributes.insert("noise_cancelling".into(), json!(true));
        CatalogRow {
            domain: "electronics".into(),
            category_key: "headphones".into(),
            brand: "Kestrel".into(),
            availability: "low_stock".into(),
            price_cents: 12_999,
            rating: Some(4.3),
            attributes,
        }
    }

    fn f(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn judged_products_missing_from_the_catalog_are_named() {
        let judged = |id: &str, grade: u8| queryset::Judgment {
            product_id: id.into(),
            grade,
        };
        let queries = vec![EvalQuery {
            id: "q1".into(),
            query: "wired headphones".into(),
            filters: None,
            intent: Intent::Descriptive,
            judgments: vec![judged("p1", 3), judged("p2", 2), judged("p3", 0)],
        }];
        let catalog: HashMap<String, CatalogRow> = [("p1".to_string(), row())].into();
        // p3 is judged irrelevant: its absence costs nothing.
        assert_eq!(
            judged_missing(&queries, &catalog),
            (2, vec!["p2".to_string()])
        );
        assert_eq!(judged_missing(&queries, &HashMap::new()).1.len(), 2);
    }

    #[test]
    fn the_independent_filter_check() {
        let r = row();
        let yes = [
            json!({}),
            json!({"brand": "kestrel", "in_stock_only": true}),
            json!({"max_price_cents": 12999, "min_price_cents": 12999}),
            json!({"min_rating": 4.3}),
            json!({"availability": ["in_stock", "low_stock"]}),
            json!({"attributes": {"connectivity": "wired", "battery_hours": 20.0}}),
            json!({"domain": null}),
        ];
        for v in yes {
            assert_eq!(satisfies(&r, &f(v.clone())), Ok(true), "{v}");
        }
        let no = [
            json!({"max_price_cents": 12998}),
            json!({"min_rating": 4.4}),
            json!({"availability": "in_stock"}),
            json!({"attributes": {"noise_cancelling": false}}),
            json!({"attributes": {"missing": "x"}}),
            json!({"category_key": "earbuds"}),
        ];
        for v in no {
            assert_eq!(satisfies(&r, &f(v.clone())), Ok(false), "{v}");
        }
        assert!(satisfies(&r, &f(json!({"colour": "red"}))).is_err());
        let unrated = CatalogRow {
            rating: None,
            ..row()
        };
        assert_eq!(satisfies(&unrated, &f(json!({"min_rating": 0}))), Ok(false));
    }
}
