//! Unweighted reciprocal rank fusion into a bounded pool.
//!
//! `rrf(d) = Σ_arms 1 / (k + rank_arm(d))`, k = 60 by default. Ties break
//! deterministically: more arms first, then the best single-arm rank, then
//! the product id. A weighted variant exists only for side-by-side
//! comparison ([`fuse_weighted`]); the serving path never calls it.

use std::collections::HashMap;

/// The three arms, in a fixed order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Arm {
    Lexical,
    Trigram,
    Semantic,
}

impl Arm {
    pub const ALL: [Arm; 3] = [Arm::Lexical, Arm::Trigram, Arm::Semantic];

    pub fn name(self) -> &'static str {
        match self {
            Arm::Lexical => "lexical",
            Arm::Trigram => "trigram",
            Arm::Semantic => "semantic",
        }
    }
}

/// An arm's rank (1-based) and score for one product.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ArmSignal {
    pub rank: i32,
    pub score: f64,
}

/// One fused pool member.
#[derive(Debug, Clone, PartialEq)]
pub struct Fused {
    pub product_id: String,
    pub rrf_score: f64,
    pub signals: [Option<ArmSignal>; 3],
}

impl Fused {
    pub fn signal(&self, arm: Arm) -> Option<ArmSignal> {
        self.signals[arm as usize]
    }

    fn arms(&self) -> usize {
        self.signals.iter().flatten().count()
    }

    fn best_rank(&self) -> i32 {
        self.signals
            .iter()
            .flatten()
            .map(|s| s.rank)
            .min()
            .unwrap_or(i32::MAX)
    }
}

/// Fuses ranked lists (product id, score; best first) into at most `pool`
/// members, best first.
pub fn fuse(lists: &[(Arm, &[(String, f64)])], k: f64, pool: usize) -> Vec<Fused> {
    fuse_weighted(
        lists,
        &[
            (Arm::Lexical, 1.0),
            (Arm::Trigram, 1.0),
            (Arm::Semantic, 1.0),
        ],
        k,
        pool,
    )
}

/// Weighted RRF, for explicit comparisons only (`mosaic eval`).
pub fn fuse_weighted(
    lists: &[(Arm, &[(String, f64)])],
    weights: &[(Arm, f64)],
    k: f64,
    pool: usize,
) -> Vec<Fused> {
    let mut by_id: HashMap<&str, Fused> = HashMap::new();
    for (arm, list) in lists {
        let w = weights
            .iter()
            .find(|(a, _)| a == arm)
            .map_or(1.0, |(_, w)| *w);
        let mut seen = std::collections::HashSet::new();
        for (i, (id, score)) in list.iter().enumerate() {
            if !seen.insert(id.as_str()) {
                continue; // a list names each product once; keep its best rank
            }
            let rank = i as i32 + 1;
            let entry = by_id.entry(id.as_str()).or_insert_with(|| Fused {
                product_id: id.clone(),
                rrf_score: 0.0,
                signals: [None; 3],
            });
            entry.rrf_score += w / (k + f64::from(rank));
            entry.signals[*arm as usize] = Some(ArmSignal {
                rank,
                score: *score,
            });
        }
    }
    let mut fused: Vec<Fused> = by_id.into_values().collect();
    fused.sort_by(|a, b| {
        b.rrf_score
            .total_cmp(&a.rrf_score)
            .then_with(|| b.arms().cmp(&a.arms()))
            .then_with(|| a.best_rank().cmp(&b.best_rank()))
            .then_with(|| a.product_id.cmp(&b.product_id))
    });
    fused.truncate(pool);
    fused
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(ids: &[&str]) -> Vec<(String, f64)> {
        ids.iter()
            .enumerate()
            .map(|(i, id)| (id.to_string(), 1.0 / (i as f64 + 1.0)))
            .collect()
    }

    #[test]
    fn rrf_matches_hand_computed_scores() {
        let lex = list(&["a", "b", "c"]);
        let tri = list(&["b", "d"]);
        let sem = list(&["c", "a", "e"]);
        let f = fuse(
            &[
                (Arm::Lexical, &lex),
                (Arm::Trigram, &tri),
                (Arm::Semantic, &sem),
            ],
            60.0,
            50,
        );
        let score = |id: &str| f.iter().find(|x| x.product_id == id).unwrap().rrf_score;
        // a: lexical 1, semantic 2  -> 1/61 + 1/62
        assert!((score("a") - (1.0 / 61.0 + 1.0 / 62.0)).abs() < 1e-12);
        // b: lexical 2, trigram 1   -> 1/62 + 1/61 (ties a exactly)
        assert!((score("b") - (1.0 / 62.0 + 1.0 / 61.0)).abs() < 1e-12);
        // c: lexical 3, semantic 1  -> 1/63 + 1/61
        assert!((score("c") - (1.0 / 63.0 + 1.0 / 61.0)).abs() < 1e-12);
        assert!((score("d") - 1.0 / 62.0).abs() < 1e-12);
        assert!((score("e") - 1.0 / 63.0).abs() < 1e-12);
        let order: Vec<&str> = f.iter().map(|x| x.product_id.as_str()).collect();
        // a and b tie on score, arms (2) and best rank (1): product id decides.
        assert_eq!(order, vec!["a", "b", "c", "d", "e"]);
        assert_eq!(
            f[0].signal(Arm::Semantic),
            Some(ArmSignal {
                rank: 2,
                score: 0.5
            })
        );
    }

    #[test]
    fn ties_are_deterministic_whatever_the_input_order() {
        let x = list(&["p", "q"]);
        let y = list(&["q", "p"]);
        let f1 = fuse(&[(Arm::Lexical, &x), (Arm::Trigram, &y)], 60.0, 50);
        let f2 = fuse(&[(Arm::Trigram, &y), (Arm::Lexical, &x)], 60.0, 50);
        assert_eq!(f1, f2);
        assert_eq!(f1[0].product_id, "p");
    }

    #[test]
    fn the_pool_is_bounded() {
        let ids: Vec<String> = (0..200).map(|i| format!("p{i:03}")).collect();
        let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
        let l = list(&refs);
        assert_eq!(fuse(&[(Arm::Lexical, &l)], 60.0, 50).len(), 50);
    }
}
