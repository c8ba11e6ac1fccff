//! A deterministic generator of a realistic synthetic catalog.
//!
//! Product `i` of a catalog is a pure function of `(seed, i)`: every product
//! has its own random stream, so a million products stream out in constant
//! memory, two runs with the same seed are identical, and the evidence for a
//! product can be regenerated without the product list.
//!
//! Models and SKUs are built so that identifier look-alikes exist (products of
//! one category share a model series: `KSHP-1040`, `KSHP-1041X`), which gives
//! the exact-identifier and typo cases real neighbours.
//!
//! [`load_sample`] streams it into the database through the library's
//! [`load::replace_catalog`].

use crate::vocab::{
    Attr, Category, ADJECTIVES, CATEGORIES, DOMAINS, MODEL_SUFFIXES, REVIEW_OPENERS_BAD,
    REVIEW_OPENERS_GOOD, REVIEW_OPENERS_MIXED,
};
use chrono::{DateTime, Duration, TimeZone, Utc};
use mosaic::catalog::load::{self, LoadReport, Progress};
use mosaic::catalog::{Evidence, Product};
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

/// Default sample size.
pub const DEFAULT_PRODUCTS: u64 = 5_000;
/// Default seed.
pub const DEFAULT_SEED: u64 = 42;

/// Where generated records say they come from.
const CATALOG_BASE: &str = "https://catalog.mosaic.example";
const REVIEWS_BASE: &str = "https://reviews.mosaic.example";

/// The ground truth behind one generated product: what a shopper who wanted
/// exactly this product might have in mind. Evaluation query sets are built
/// from this, not from search results.
#[derive(Debug, Clone)]
pub struct Truth {
    pub category: &'static str,
    pub domain: &'static str,
    pub noun: &'static str,
    pub need: &'static str,
}

#[derive(Debug, Clone, Copy)]
pub struct Generator {
    pub seed: u64,
    pub products: u64,
}

impl Generator {
    pub fn new(seed: u64, products: u64) -> Self {
        Self { seed, products }
    }

    fn rng(&self, index: u64, stream: u64) -> ChaCha8Rng {
        let mut rng = ChaCha8Rng::seed_from_u64(self.seed ^ 0x9E37_79B9_7F4A_7C15);
        rng.set_stream(stream);
        rng.set_word_pos(u128::from(index) * 4096);
        rng
    }

    /// The category of product `index`: categories are dealt round-robin so
    /// every category is populated and `(category, ordinal)` is unique.
    fn category(index: u64) -> (&'static Category, u64) {
        let n = CATEGORIES.len() as u64;
        (&CATEGORIES[(index % n) as usize], index / n)
    }

    /// Product `index` (0-based) and its ground truth.
    pub fn product(&self, index: u64) -> (Product, Truth) {
        let mut rng = self.rng(index, 1);
        let (cat, ordinal) = Self::category(index);
        let domain = DOMAINS
            .iter()
            .find(|d| d.key == cat.domain)
            .expect("every category names a known domain");
        let &(brand, brand_code) = domain.brands.choose(&mut rng).expect("brands");
        let noun = cat.nouns[if rng.gen_bool(0.7) { 0 } else { 1 }];
        let need = *cat.needs.choose(&mut rng).expect("needs");

        // Model: brand code + category code, a number unique within the
        // category, and a variant suffix. Neighbouring products share a series.
        let number = 1000 + ordinal;
        let suffix = *MODEL_SUFFIXES.choose(&mut rng).expect("suffixes");
        let model = if suffix.len() > 1 {
            format!("{brand_code}{}-{number} {suffix}", cat.code)
        } else {
            format!("{brand_code}{}-{number}{suffix}", cat.code)
        };
        let sku = format!("{}-{}{:06}", brand_code, cat.code, ordinal);
        let product_id = format!("P{:07}", index + 1);

        let mut attributes = Map::new();
        let mut features = Vec::new();
        for attr in cat.attrs {
            match attr {
                Attr::Choice(name, values) => {
                    let v = *values.choose(&mut rng).expect("values");
                    attributes.insert((*name).into(), Value::from(v));
                    features.push(v.to_string());
                }
                Attr::Int(name, lo, hi, unit) => {
                    let v = rng.gen_range(*lo..=*hi);
                    attributes.insert((*name).into(), Value::from(v));
                    features.push(format!("{v} {unit}"));
                }
                Attr::Flag(name, phrase) => {
                    let on = rng.gen_bool(0.5);
                    attributes.insert((*name).into(), Value::from(on));
                    if on {
                        features.push(phrase.to_string());
                    }
                }
            }
        }

        // The marketing adjective never repeats the model suffix ("Pro Pro").
        let adjectives: Vec<&str> = ADJECTIVES
            .iter()
            .copied()
            .filter(|a| *a != suffix)
            .collect();
        let adjective = *adjectives.choose(&mut rng).expect("adjectives");
        let lead = features.first().cloned().unwrap_or_default();
        let title = format!("{brand} {model} {adjective} {noun}");
        let description = format!(
            "Designed for {need}. The {brand} {model} offers {}. {}",
            features.join(", "),
            if features.len() > 1 {
                format!(
                    "A {} pick from {brand}'s {} line.",
                    lead,
                    cat.key.replace('_', " ")
                )
            } else {
                String::new()
            }
        )
        .trim_end()
        .to_string();

        let (lo, hi) = cat.price;
        let dollars =
            (f64::from(lo) * (f64::from(hi) / f64::from(lo)).powf(rng.gen::<f64>())).round();
        let price_cents = (dollars as i64).max(1) * 100 - 1;
        let rating = if rng.gen_bool(0.05) {
            None
        } else {
            Some((rng.gen_range(25..=50) as f32) / 10.0)
        };
        let review_count = if rating.is_none() {
            0
        } else {
            rng.gen_range(1..2500)
        };
        let availability = match rng.gen_range(0..100) {
            0..=69 => "in_stock",
            70..=79 => "low_stock",
            80..=84 => "backorder",
            85..=87 => "preorder",
            88..=97 => "out_of_stock",
            _ => "discontinued",
        };
        let mut aliases = vec![format!("{brand} {}", model.replace(['-', ' '], ""))];
        if rng.gen_bool(0.5) {
            aliases.push(format!("{} {}", brand, cat.nouns[cat.nouns.len() - 1]));
        }

        let product = Product {
            source_uri: format!("{CATALOG_BASE}/products/{product_id}"),
            product_id,
            sku,
            model,
            brand: brand.into(),
            title,
            domain: cat.domain.into(),
            category_key: cat.key.into(),
            description,
            price_cents,
            currency: "USD".into(),
            rating,
            review_count,
            availability: availability.into(),
            attributes,
            aliases,
            updated_at: timestamp(&mut rng),
            revision: rng.gen_range(1..=4),
        };
        let truth = Truth {
            category: cat.key,
            domain: cat.domain,
            noun,
            need,
        };
        (product, truth)
    }

    /// The evidence units of product `index`: one specification record and
    /// two or three reviews.
    pub fn evidence(&self, index: u64) -> Vec<Evidence> {
        let (p, truth) = self.product(index);
        let (cat, _) = Self::category(index);
        let mut rng = self.rng(index, 2);
        let mut out = Vec::with_capacity(4);

        let mut spec_lines = vec![
            format!("Brand: {}", p.brand),
            format!("Model: {}", p.model),
            format!("SKU: {}", p.sku),
            format!("Category: {}", cat.key.replace('_', " ")),
        ];
        for (k, v) in &p.attributes {
            let shown = match v {
                Value::Bool(true) => "yes".to_string(),
                Value::Bool(false) => "no".to_string(),
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            spec_lines.push(format!("{}: {}", k.replace('_', " "), shown));
        }
        spec_lines.push(format!("Warranty: {} years", rng.gen_range(1..=3)));
        out.push(Evidence {
            evidence_id: format!("{}-spec", p.product_id),
            product_id: p.product_id.clone(),
            kind: "specification".into(),
            source_uri: format!("{CATALOG_BASE}/products/{}/specifications", p.product_id),
            source_revision: p.revision.to_string(),
            title: format!("{} {} specifications", p.brand, p.model),
            body: spec_lines.join(". ") + ".",
            rating: None,
            updated_at: p.updated_at,
        });

        let reviews = rng.gen_range(2..=3);
        for k in 1..=reviews {
            let base = p.rating.unwrap_or(3.5);
            let stars = (base + rng.gen_range(-1.5f32..1.0)).round().clamp(1.0, 5.0);
            let aspect = *cat.aspects.choose(&mut rng).expect("aspects");
            let other = *cat.aspects.choose(&mut rng).expect("aspects");
            let (opener, verdict) = if stars >= 4.0 {
                (
                    *REVIEW_OPENERS_GOOD.choose(&mut rng).expect("openers"),
                    "excellent",
                )
            } else if stars >= 3.0 {
                (
                    *REVIEW_OPENERS_MIXED.choose(&mut rng).expect("openers"),
                    "acceptable",
                )
            } else {
                (
                    *REVIEW_OPENERS_BAD.choose(&mut rng).expect("openers"),
                    "poor",
                )
            };
            let body = format!(
                "{opener} I bought the {} for {}. The {aspect} is {verdict}, and the {other} {}. {}",
                p.model,
                truth.need,
                if stars >= 4.0 { "impressed me too" } else { "could be better" },
                if stars >= 3.0 {
                    format!("Recommended if you need a {}.", truth.noun.to_lowercase())
                } else {
                    "I would look elsewhere.".to_string()
                }
            );
            out.push(Evidence {
                evidence_id: format!("{}-r{k}", p.product_id),
                product_id: p.product_id.clone(),
                kind: "review".into(),
                source_uri: format!("{REVIEWS_BASE}/{}/{k}", p.product_id),
                source_revision: "1".into(),
                title: format!("{} stars: {aspect}", stars as i32),
                body,
                rating: Some(stars),
                updated_at: timestamp(&mut rng),
            });
        }
        out
    }

    /// SHA-256 over every generated record, in order: two generators with the
    /// same seed and size have the same digest.
    pub fn digest(&self) -> String {
        let mut h = Sha256::new();
        for i in 0..self.products {
            let (p, _) = self.product(i);
            h.update(serde_json::to_vec(&p).expect("products serialise"));
            for e in self.evidence(i) {
                h.update(serde_json::to_vec(&e).expect("evidence serialises"));
            }
        }
        format!("{:x}", h.finalize())
    }
}

/// A fixed-epoch timestamp in 2025–2026 (never "now": output is deterministic).
fn timestamp(rng: &mut ChaCha8Rng) -> DateTime<Utc> {
    let base = Utc
        .with_ymd_and_hms(2025, 1, 1, 0, 0, 0)
        .single()
        .expect("valid date");
    base + Duration::seconds(rng.gen_range(0..60 * 60 * 24 * 600))
}

/// Replaces the catalog with the generated sample catalog, in one
/// transaction (`mosaic load --sample`, the tests' template database).
pub async fn load_sample(
    client: &mut tokio_postgres::Client,
    generator: Generator,
    progress: Progress<'_>,
) -> Result<LoadReport, tokio_postgres::Error> {
    let n = generator.products;
    load::replace_catalog(
        client,
        (0..n).map(|i| generator.product(i).0),
        (0..n).flat_map(|i| generator.evidence(i)),
        (n, n * 3),
        progress,
    )
    .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn same_seed_same_catalog_and_other_seed_differs() {
        assert_eq!(
            Generator::new(7, 200).digest(),
            Generator::new(7, 200).digest()
        );
        assert_ne!(
            Generator::new(7, 200).digest(),
            Generator::new(8, 200).digest()
        );
    }

    #[test]
    fn identifiers_are_unique_and_counts_hold() {
        let g = Generator::new(DEFAULT_SEED, 3_000);
        let (mut skus, mut models, mut ids) = (HashSet::new(), HashSet::new(), HashSet::new());
        let (mut cats, mut domains, mut evidence) = (HashSet::new(), HashSet::new(), 0);
        for i in 0..g.products {
            let (p, _) = g.product(i);
            assert!(skus.insert(p.sku.clone()), "duplicate sku {}", p.sku);
            assert!(
                models.insert(mosaic::catalog::load::identifier_key(&p.model)),
                "duplicate model {}",
                p.model
            );
            assert!(ids.insert(p.product_id.clone()));
            cats.insert(p.category_key.clone());
            domains.insert(p.domain.clone());
            evidence += g.evidence(i).len();
        }
        assert!(cats.len() >= 25);
        assert!(domains.len() >= 3);
        assert!(
            evidence >= 9_000,
            "{evidence} evidence units for 3k products"
        );
    }
}
