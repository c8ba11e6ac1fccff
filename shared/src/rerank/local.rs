//! The local reranker: a deterministic development stand-in for a managed
//! cross-encoder (Cohere Rerank, Amazon Rerank), so the rerank stage does
//! real work on a laptop without any service.
//!
//! It combines two signals per pool member:
//!
//! * **base** = 0.5 × cosine(query, document head) + 0.3 × coverage of the
//!   query's terms in the whole document + 0.2 × coverage in the title.
//!   The document head is the title and attributes (the first and fourth
//!   segments of the rerank text); its embedding comes from the same sentence
//!   model the semantic arm uses and is memoised, so repeated pools cost little.
//! * **identity** = for each query token, its best fuzzy match among the
//!   document's identity tokens (the words of the title and of the
//!   "brand model sku" segment), averaged over the query tokens. Tokens are
//!   compared as identifier keys (lower-cased letters and digits, so
//!   `VX-HP000123` and `vxhp000123` are the same key); the match of two keys
//!   is the mean of their character-trigram similarity (Jaccard over padded
//!   trigrams, as pg_trgm pads) and their edit similarity
//!   (1 − optimal-string-alignment distance / longer length). Trigrams reward
//!   long shared runs such as a series prefix; the edit distance counts
//!   typing mistakes (deletion, substitution, transposition) one each.
//!
//! The final score depends on whether the query is *identifier-like*: it has
//! a token key of at least four characters with both a letter and a digit
//! (a SKU or model number, possibly misspelt).
//!
//! * identifier-like: score = 0.3 × base + 0.7 × identity. The sentence model
//!   and word coverage know nothing about `KSHP-1040` versus `KSHP-1004`, so
//!   identifier closeness decides: the look-alike series of a SKU orders by
//!   how close its identifiers are, and a misspelt model still finds its
//!   product.
//! * otherwise: score = 0.85 × base + 0.15 × identity, so a misspelt brand or
//!   title word still counts for something without overriding the meaning.
//!
//! Everything is deterministic (scores are rounded to six decimals) and cheap:
//! the fuzzy matching is a few thousand short-string comparisons per pool.
//! It is not a learned reranker and is not meant to beat one; in particular it
//! has no notion of negation (the caller strips negated terms before calling)
//! or of filters (the pool is already eligible).

use super::{RerankError, Reranker};
use crate::embed::{cosine, EmbedKind, Embedder};
use async_trait::async_trait;
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

/// Memoised head embeddings kept at most (then the memo starts afresh).
const MEMO_CAPACITY: usize = 50_000;

const STOPWORDS: &[&str] = &[
    "a",
    "an",
    "and",
    "are",
    "as",
    "at",
    "be",
    "best",
    "but",
    "by",
    "for",
    "from",
    "good",
    "has",
    "have",
    "i",
    "in",
    "is",
    "it",
    "me",
    "my",
    "need",
    "of",
    "on",
    "or",
    "some",
    "something",
    "that",
    "the",
    "to",
    "with",
    "want",
    "looking",
    "under",
    "over",
];

pub struct LocalReranker {
    embedder: Arc<dyn Embedder>,
    model_id: String,
    memo: Mutex<HashMap<String, Arc<Vec<f32>>>>,
}

impl LocalReranker {
    pub fn new(embedder: Arc<dyn Embedder>) -> Self {
        let model_id = format!("local/coverage+identity+{}", embedder.model_id());
        LocalReranker {
            embedder,
            model_id,
            memo: Mutex::new(HashMap::new()),
        }
    }
}

/// Lower-case word stems: letters and digits, a plural `s` dropped.
fn terms(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(|w| {
            let w = w.to_lowercase();
            match w.strip_suffix('s') {
                Some(stem) if stem.len() > 2 => stem.to_string(),
                _ => w,
            }
        })
        .collect()
}

fn coverage(query: &[String], text: &HashSet<String>) -> f64 {
    if query.is_empty() {
        return 0.0;
    }
    query.iter().filter(|t| text.contains(*t)).count() as f64 / query.len() as f64
}

/// Weight of the identity match for identifier-like queries.
const IDENTITY_WEIGHT_IDENTIFIER: f64 = 0.7;
/// Weight of the identity match for all other queries.
const IDENTITY_WEIGHT_TEXT: f64 = 0.15;

/// Lower-cased letters and digits only: `VX-HP000123` → `vxhp000123`.
fn identifier_key(s: &str) -> String {
    s.chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .collect()
}

/// Whitespace-separated tokens as identifier keys, empty ones and stopwords
/// dropped.
fn identity_keys(text: &str) -> Vec<String> {
    text.split_whitespace()
        .map(identifier_key)
        .filter(|k| !k.is_empty() && !STOPWORDS.contains(&k.as_str()))
        .collect()
}

/// A SKU- or model-like key: at least four characters, letters and digits.
fn is_identifier(key: &str) -> bool {
    key.chars().count() >= 4
        && key.chars().any(|c| c.is_ascii_digit())
        && key.chars().any(char::is_alphabetic)
}

/// Padded character trigrams (two spaces before, one after, as pg_trgm).
fn trigrams(key: &str) -> HashSet<[char; 3]> {
    let chars: Vec<char> = "  ".chars().chain(key.chars()).chain([' ']).collect();
    chars.windows(3).map(|w| [w[0], w[1], w[2]]).collect()
}

/// A key prepared once for repeated comparisons.
struct Key {
    text: String,
    len: usize,
    grams: HashSet<[char; 3]>,
}

impl Key {
    fn new(key: &str) -> Self {
        Key {
            text: key.to_string(),
            len: key.chars().count(),
            grams: trigrams(key),
        }
    }

    /// Mean of trigram Jaccard similarity and edit similarity, in [0, 1].
    fn similarity(&self, other: &Key) -> f64 {
        if self.text == other.text {
            return 1.0;
        }
        let shared = self.grams.intersection(&other.grams).count();
        let union = self.grams.len() + other.grams.len() - shared;
        let trigram = if union == 0 {
            0.0
        } else {
            shared as f64 / union as f64
        };
        // Optimal string alignment: an adjacent transposition is one edit.
        let longer = self.len.max(other.len).max(1);
        let edit = 1.0 - strsim::osa_distance(&self.text, &other.text) as f64 / longer as f64;
        (trigram + edit) / 2.0
    }
}

/// The mean, over the query keys, of each key's best match among the
/// document's identity keys (title words and the brand/model/SKU segment).
fn identity_match(query: &[Key], doc: &str) -> f64 {
    if query.is_empty() {
        return 0.0;
    }
    let mut parts = doc.splitn(3, ". ");
    let title = parts.next().unwrap_or_default();
    let identity = parts.next().unwrap_or_default();
    let mut seen = HashSet::new();
    let keys: Vec<Key> = identity_keys(title)
        .into_iter()
        .chain(identity_keys(identity))
        .filter(|k| seen.insert(k.clone()))
        .map(|k| Key::new(&k))
        .collect();
    let total: f64 = query
        .iter()
        .map(|q| keys.iter().map(|k| q.similarity(k)).fold(0.0, f64::max))
        .sum();
    total / query.len() as f64
}

/// The title and attribute segments of a rerank text.
fn head(doc: &str) -> String {
    let mut parts = doc.splitn(5, ". ");
    let title = parts.next().unwrap_or_default();
    let _identity = parts.next();
    let _category = parts.next();
    let attrs = parts.next().unwrap_or_default();
    format!("{title}. {attrs}")
}

#[async_trait]
impl Reranker for LocalReranker {
    fn model_id(&self) -> &str {
        &self.model_id
    }

    async fn rerank(
        &self,
        query: &str,
        documents: &[String],
    ) -> Result<Vec<(usize, f64)>, RerankError> {
        let q_terms: Vec<String> = terms(query)
            .into_iter()
            .filter(|t| !STOPWORDS.contains(&t.as_str()))
            .collect::<HashSet<_>>()
            .into_iter()
            .collect();
        let q_keys: Vec<String> = {
            let mut seen = HashSet::new();
            identity_keys(query)
                .into_iter()
                .filter(|k| seen.insert(k.clone()))
                .collect()
        };
        let identity_weight = if q_keys.iter().any(|k| is_identifier(k)) {
            IDENTITY_WEIGHT_IDENTIFIER
        } else {
            IDENTITY_WEIGHT_TEXT
        };
        let q_keys: Vec<Key> = q_keys.iter().map(|k| Key::new(k)).collect();
        let heads: Vec<String> = documents.iter().map(|d| head(d)).collect();
        let missing: Vec<String> = {
            let memo = self.memo.lock().expect("memo lock");
            let mut seen = HashSet::new();
            heads
                .iter()
                .filter(|h| !memo.contains_key(*h) && seen.insert((*h).clone()))
                .cloned()
                .collect()
        };
        let mut texts = vec![query.to_string()];
        texts.extend(missing.iter().cloned());
        // Two calls in flight: the local model uses one core per call.
        let half = texts.len().div_ceil(2).max(1);
        let calls = texts
            .chunks(half)
            .map(|c| self.embedder.embed_for_scoring(c, EmbedKind::Document));
        let mut vectors: Vec<Vec<f32>> = futures_util::future::try_join_all(calls)
            .await
            .map_err(|e| RerankError::Failed(e.to_string()))?
            .into_iter()
            .flatten()
            .collect();
        if vectors.len() != texts.len() {
            return Err(RerankError::Failed(
                "embedder returned the wrong number of vectors".into(),
            ));
        }
        let q_vec = vectors.remove(0);
        let mut memo = self.memo.lock().expect("memo lock");
        if memo.len() + missing.len() > MEMO_CAPACITY {
            memo.clear();
        }
        for (h, v) in missing.into_iter().zip(vectors) {
            memo.insert(h, Arc::new(v));
        }
        let scored = documents
            .iter()
            .zip(&heads)
            .enumerate()
            .map(|(i, (doc, h))| {
                let all: HashSet<String> = terms(doc).into_iter().collect();
                let title: HashSet<String> = terms(doc.split(". ").next().unwrap_or_default())
                    .into_iter()
                    .collect();
                let sim = memo.get(h).map_or(0.0, |v| f64::from(cosine(&q_vec, v)));
                let base =
                    0.5 * sim + 0.3 * coverage(&q_terms, &all) + 0.2 * coverage(&q_terms, &title);
                let identity = identity_match(&q_keys, doc);
                let score = (1.0 - identity_weight) * base + identity_weight * identity;
                (i, (score * 1e6).round() / 1e6)
            })
            .collect();
        Ok(scored)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::embed::HashingEmbedder;

    #[tokio::test]
    async fn prefers_documents_that_cover_the_query_and_is_deterministic() {
        let r = LocalReranker::new(Arc::new(HashingEmbedder::new(128)));
        let docs = vec![
            "Aurel AUHP-1 Studio Headphones. Aurel AUHP-1. headphones. noise cancelling: true. Great for flights".to_string(),
            "Hearthly HEKT-2 Glass Kettle. Hearthly HEKT-2. kettles. capacity ml: 1700. Boils fast".to_string(),
        ];
        let a = r
            .rerank("noise cancelling headphones", &docs)
            .await
            .unwrap();
        let b = r
            .rerank("noise cancelling headphones", &docs)
            .await
            .unwrap();
        assert_eq!(a, b);
        assert!(a[0].1 > a[1].1, "{a:?}");
    }

    #[tokio::test]
    async fn identifier_queries_order_by_identifier_closeness() {
        let r = LocalReranker::new(Arc::new(HashingEmbedder::new(128)));
        let doc = |brand: &str, model: &str, sku: &str| {
            format!(
                "{brand} {model} Bike Helmet. {brand} {model} {sku}. bike helmets. size: m. Light"
            )
        };
        let docs = vec![
            doc("Velox", "VXBH-1501", "VX-BH000501"),
            doc("Basecamp Co", "BCBH-1077 Pro", "BC-BH000077"),
            doc("Basecamp Co", "BCBH-1071", "BC-BH000071"),
        ];
        // A SKU: the same series ranks above another brand's helmet.
        let a = r.rerank("BC-BH000073", &docs).await.unwrap();
        assert!(a[2].1 > a[0].1 && a[1].1 > a[0].1, "{a:?}");
        // A misspelt model (one transposition) still finds its product.
        let b = r.rerank("Basecamp Co BCBH-1707 Pro", &docs).await.unwrap();
        assert!(b[1].1 > b[2].1 && b[1].1 > b[0].1, "{b:?}");
    }
}
