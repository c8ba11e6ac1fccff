//! A deterministic feature-hashing embedder.
//!
//! It is not a language model: it hashes word unigrams and character
//! trigrams into signed buckets. Texts that share words or spellings land
//! close together, which is enough for tests of the semantic arm's plumbing
//! and for benchmarks at sizes where the real model would take too long.
//! It is never the default for serving.

use super::{l2_normalize, EmbedError, EmbedKind, Embedder};
use async_trait::async_trait;
use sha2::{Digest, Sha256};

#[derive(Debug, Clone)]
pub struct HashingEmbedder {
    dimension: usize,
    model_id: String,
}

impl HashingEmbedder {
    pub fn new(dimension: usize) -> Self {
        Self {
            dimension,
            model_id: format!("hashing-v1/{dimension}"),
        }
    }

    /// Embeds one text synchronously.
    pub fn embed_one(&self, text: &str) -> Vec<f32> {
        let mut v = vec![0f32; self.dimension];
        let lower = text.to_lowercase();
        for word in lower
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
        {
            self.add(&mut v, word.as_bytes(), 1.0);
            let padded: Vec<char> = format!("#{word}#").chars().collect();
            for tri in padded.windows(3) {
                let s: String = tri.iter().collect();
                self.add(&mut v, s.as_bytes(), 0.5);
            }
        }
        l2_normalize(&mut v);
        v
    }

    fn add(&self, v: &mut [f32], feature: &[u8], weight: f32) {
        let digest = Sha256::digest(feature);
        let bucket =
            u64::from_le_bytes(digest[0..8].try_into().expect("8 bytes")) as usize % self.dimension;
        let sign = if digest[8] & 1 == 0 { 1.0 } else { -1.0 };
        v[bucket] += sign * weight;
    }
}

#[async_trait]
impl Embedder for HashingEmbedder {
    fn model_id(&self) -> &str {
        &self.model_id
    }

    fn dimension(&self) -> usize {
        self.dimension
    }

    async fn embed(&self, texts: &[String], _kind: EmbedKind) -> Result<Vec<Vec<f32>>, EmbedError> {
        Ok(texts.iter().map(|t| self.embed_one(t)).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::embed::cosine;

    #[test]
    fn vectors_are_unit_length_and_deterministic() {
        let e = HashingEmbedder::new(384);
        let a = e.embed_one("Noise cancelling headphones");
        let b = e.embed_one("Noise cancelling headphones");
        assert_eq!(a, b);
        assert_eq!(a.len(), 384);
        let norm: f32 = a.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-5);
    }

    #[test]
    fn shared_words_score_higher_than_unrelated_text() {
        let e = HashingEmbedder::new(384);
        let q = e.embed_one("wireless headphones");
        let near = e.embed_one("Aurel wireless over-ear headphones");
        let far = e.embed_one("stainless steel chef knife");
        assert!(cosine(&q, &near) > cosine(&q, &far));
    }
}
