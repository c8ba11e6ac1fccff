//! The local reranker: a deterministic development stand-in for a managed
//! cross-encoder (Cohere Rerank, Amazon Rerank), so the rerank stage does
//! real work on a laptop without any service.
//!
//! Score = 0.5 × cosine(query, document head) + 0.3 × coverage of the
//! query's terms in the whole document + 0.2 × coverage in the title.
//! The document head is the title and attributes (the first two segments
//! of the rerank text); its embedding comes from the same sentence model the
//! semantic arm uses and is memoised, so repeated pools cost little.
//! It is not a learned reranker and is not meant to beat one.

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
        let model_id = format!("local/coverage+{}", embedder.model_id());
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
                let score =
                    0.5 * sim + 0.3 * coverage(&q_terms, &all) + 0.2 * coverage(&q_terms, &title);
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
}
