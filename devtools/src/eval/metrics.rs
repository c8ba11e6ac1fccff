//! Ranking metrics over one ranked list and one query's graded judgments.
//!
//! Conventions (also in EVALUATION.md):
//!
//! * grades are 0..=3; a product without a judgment has grade 0;
//! * "relevant" means grade ≥ [`RELEVANT_GRADE`] (2): it answers the query
//!   and meets every constraint the query states;
//! * nDCG@k uses graded gains `2^g − 1` and the `log2(rank + 1)` discount; the
//!   ideal ranking is the query's own judgments sorted by grade, so a query
//!   is scored against what the judgments say is attainable;
//! * Recall@k is capped: relevant results in the top k divided by
//!   `min(k, |relevant|)`, so a query with 160 relevant products can reach
//!   1.0 at k = 10 (uncapped recall would be bounded by 10/160);
//! * the reciprocal rank is `1 / rank` of the first relevant result in the
//!   whole ranked list given (the evaluation serves 50), 0 when there is none.

use std::collections::HashMap;

/// Grade at and above which a result counts as relevant.
pub const RELEVANT_GRADE: u8 = 2;
/// The highest grade: the intended product, or a product meeting every part
/// of the query.
pub const TOP_GRADE: u8 = 3;

/// Product id → grade. Products absent from the map have grade 0.
pub type Grades = HashMap<String, u8>;

fn gain(grade: u8) -> f64 {
    f64::from((1u32 << grade.min(30)) - 1)
}

/// Discounted cumulative gain of grades in rank order (first = rank 1).
pub fn dcg(grades: impl IntoIterator<Item = u8>) -> f64 {
    grades
        .into_iter()
        .enumerate()
        .map(|(i, g)| gain(g) / ((i + 2) as f64).log2())
        .sum()
}

/// nDCG@k of `ranked` against the judgments; `None` when no product has a
/// grade above 0 (the query cannot be scored).
pub fn ndcg_at(ranked: &[String], grades: &Grades, k: usize) -> Option<f64> {
    let mut ideal: Vec<u8> = grades.values().copied().filter(|g| *g > 0).collect();
    if ideal.is_empty() {
        return None;
    }
    ideal.sort_unstable_by(|a, b| b.cmp(a));
    let idcg = dcg(ideal.into_iter().take(k));
    let got =
        dcg(once(ranked, k).map(|id| id.map_or(0, |id| grades.get(id).copied().unwrap_or(0))));
    Some(got / idcg)
}

/// The first `k` of `ranked`, a product listed again as `None`: a repeat
/// earns nothing, so a list cannot score above 1 by naming one product twice.
fn once(ranked: &[String], k: usize) -> impl Iterator<Item = Option<&String>> {
    let mut seen = std::collections::HashSet::new();
    ranked
        .iter()
        .take(k)
        .map(move |id| seen.insert(id.as_str()).then_some(id))
}

/// Number of relevant products in the judgments.
pub fn relevant_count(grades: &Grades) -> usize {
    grades.values().filter(|g| **g >= RELEVANT_GRADE).count()
}

/// Capped Recall@k: relevant results in the top `k` over `min(k, |relevant|)`;
/// `None` when the query has no relevant product.
pub fn recall_at(ranked: &[String], grades: &Grades, k: usize) -> Option<f64> {
    let relevant = relevant_count(grades);
    if relevant == 0 || k == 0 {
        return None;
    }
    let hits = once(ranked, k)
        .flatten()
        .filter(|id| grades.get(*id).is_some_and(|g| *g >= RELEVANT_GRADE))
        .count();
    Some(hits as f64 / relevant.min(k) as f64)
}

/// `1 / rank` of the first result with grade ≥ `min_grade`, 0 when none.
pub fn reciprocal_rank(ranked: &[String], grades: &Grades, min_grade: u8) -> f64 {
    ranked
        .iter()
        .position(|id| grades.get(id).is_some_and(|g| *g >= min_grade))
        .map_or(0.0, |i| 1.0 / (i + 1) as f64)
}

/// Whether a product of grade ≥ `min_grade` appears in the top `k`.
pub fn hit_at(ranked: &[String], grades: &Grades, k: usize, min_grade: u8) -> bool {
    ranked
        .iter()
        .take(k)
        .any(|id| grades.get(id).is_some_and(|g| *g >= min_grade))
}

/// Nearest-rank percentile (`p` in 0..=100) of unsorted samples; 0 when empty.
pub fn percentile(samples: &[f64], p: f64) -> f64 {
    if samples.is_empty() {
        return 0.0;
    }
    let mut s = samples.to_vec();
    s.sort_by(f64::total_cmp);
    let rank = ((p / 100.0) * s.len() as f64).ceil().max(1.0) as usize;
    s[rank.min(s.len()) - 1]
}

/// Arithmetic mean of the present values; `None` when there are none.
pub fn mean(values: impl IntoIterator<Item = Option<f64>>) -> Option<f64> {
    let (mut sum, mut n) = (0.0, 0usize);
    for v in values.into_iter().flatten() {
        sum += v;
        n += 1;
    }
    (n > 0).then(|| sum / n as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn g(pairs: &[(&str, u8)]) -> Grades {
        pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
    }

    fn ids(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_product_listed_twice_counts_once() {
        let grades = g(&[("a", 3), ("b", 2)]);
        let twice = ids(&["a", "a", "b"]);
        let once = ids(&["a", "x", "b"]);
        assert_eq!(ndcg_at(&twice, &grades, 10), ndcg_at(&once, &grades, 10));
        assert!(ndcg_at(&ids(&["a", "a"]), &g(&[("a", 3)]), 10).unwrap() <= 1.0);
        assert_eq!(recall_at(&ids(&["a", "a"]), &grades, 10), Some(0.5));
    }

    #[test]
    fn perfect_ranking_scores_one() {
        let grades = g(&[("a", 3), ("b", 2), ("c", 1)]);
        let ranked = ids(&["a", "b", "c", "x"]);
        assert!((ndcg_at(&ranked, &grades, 10).unwrap() - 1.0).abs() < 1e-12);
        assert_eq!(recall_at(&ranked, &grades, 10), Some(1.0));
        assert_eq!(reciprocal_rank(&ranked, &grades, 2), 1.0);
    }

    #[test]
    fn unscorable_queries_are_none() {
        let grades = g(&[("a", 1)]);
        assert_eq!(recall_at(&ids(&["a"]), &grades, 10), None);
        assert_eq!(ndcg_at(&ids(&["a"]), &Grades::new(), 10), None);
        assert_eq!(percentile(&[], 50.0), 0.0);
        assert_eq!(percentile(&[3.0, 1.0, 2.0, 4.0], 50.0), 2.0);
        assert_eq!(percentile(&[3.0, 1.0, 2.0, 4.0], 95.0), 4.0);
    }
}
