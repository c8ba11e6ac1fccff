//! Rerankers reorder a bounded pool; they never add to it.
//!
//! A reranker returns `(index, score)` pairs over the documents it was sent.
//! [`apply`] turns that into a new order of the same pool: indices it does
//! not know and repeated indices are ignored (and logged), pool members it
//! left out keep their fused order behind the scored ones, and pinned
//! members (exact identifier matches) stay in front whatever the scores say.

pub mod local;

use async_trait::async_trait;

#[derive(Debug, thiserror::Error)]
pub enum RerankError {
    #[error("reranker unavailable: {0}")]
    Unavailable(String),
    #[error("reranker failed: {0}")]
    Failed(String),
}

#[async_trait]
pub trait Reranker: Send + Sync {
    /// Stable identifier stored in receipts.
    fn model_id(&self) -> &str;

    /// Scores `documents` against `query`; higher is better.
    async fn rerank(
        &self,
        query: &str,
        documents: &[String],
    ) -> Result<Vec<(usize, f64)>, RerankError>;
}

/// The outcome of applying a reranker's answer to a pool.
#[derive(Debug, Clone, PartialEq)]
pub struct Reordered {
    /// Pool indices in their new order (a permutation of `0..pool_len`).
    pub order: Vec<usize>,
    /// Rerank score per pool index (None for members left unscored).
    pub scores: Vec<Option<f64>>,
    /// Indices the reranker named that were unknown or repeated.
    pub ignored: Vec<usize>,
}

/// Reorders a pool of `pool_len` members. `pinned` pool indices stay first,
/// in their given order. Only the first `sent` members were sent to the
/// reranker; a scored index at or past `sent` is unknown.
pub fn apply(pool_len: usize, sent: usize, pinned: &[usize], scored: &[(usize, f64)]) -> Reordered {
    let mut scores: Vec<Option<f64>> = vec![None; pool_len];
    let mut ignored = Vec::new();
    for &(i, s) in scored {
        if i >= sent.min(pool_len) || scores[i].is_some() || !s.is_finite() {
            ignored.push(i);
            continue;
        }
        scores[i] = Some(s);
    }
    let mut rest: Vec<usize> = (0..pool_len).filter(|i| !pinned.contains(i)).collect();
    // Stable sort: scored members by score (ties keep fused order), then the
    // unscored ones in fused order.
    rest.sort_by(|&a, &b| match (scores[a], scores[b]) {
        (Some(x), Some(y)) => y.total_cmp(&x),
        (Some(_), None) => std::cmp::Ordering::Less,
        (None, Some(_)) => std::cmp::Ordering::Greater,
        (None, None) => std::cmp::Ordering::Equal,
    });
    let mut order: Vec<usize> = pinned.iter().copied().filter(|&i| i < pool_len).collect();
    order.extend(rest);
    if !ignored.is_empty() {
        tracing::warn!(ignored = ?ignored, "reranker returned unknown or repeated indices");
    }
    Reordered {
        order,
        scores,
        ignored,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reorders_by_score_and_keeps_pinned_first() {
        let r = apply(4, 4, &[2], &[(0, 0.1), (1, 0.9), (2, 0.0), (3, 0.5)]);
        assert_eq!(r.order, vec![2, 1, 3, 0]);
    }

    #[test]
    fn unknown_and_repeated_indices_cannot_add_or_duplicate_members() {
        let r = apply(
            3,
            3,
            &[],
            &[(7, 9.0), (1, 0.2), (1, 5.0), (usize::MAX, 1.0), (0, 0.1)],
        );
        assert_eq!(r.order, vec![1, 0, 2]);
        assert_eq!(r.ignored, vec![7, 1, usize::MAX]);
        let mut sorted = r.order.clone();
        sorted.sort();
        assert_eq!(sorted, vec![0, 1, 2]);
    }

    #[test]
    fn members_not_sent_keep_fused_order_behind_the_scored() {
        let r = apply(5, 3, &[], &[(2, 0.9), (0, 0.8), (1, 0.7), (4, 1.0)]);
        assert_eq!(r.order, vec![2, 0, 1, 3, 4]);
        assert_eq!(r.ignored, vec![4]);
    }
}
