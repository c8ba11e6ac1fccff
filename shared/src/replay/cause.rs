//! Which stage caused a move between a recorded search and its replay.
//!
//! The rules, first match wins:
//!
//! 1. `eligibility`: the product left the pool and, when the replay ran, no
//!    longer passed the recorded filters (or was gone from the catalog);
//!    the replay's receipt lists those products (`replay_ineligible`).
//! 2. an arm (`lexical`, `trigram`, `semantic`): the product is in both
//!    pools and that arm ranks it differently; of several, the arm whose
//!    change moves its fusion score most (`1 / (rrf_k + rank)`, 0 when
//!    unranked). A product in one pool only is put down to the arm that
//!    ranks it best there among the arms whose ranking changed (an arm
//!    changed when it ranks some product of both pools differently, or its
//!    verdict, limit or mode changed): the receipts hold arm ranks for pool
//!    members only, so that is the most they can tell.
//! 3. `fusion`: same arm ranks, but another fused rank or pool membership
//!    (other products moved, or the profile's fusion values changed).
//! 4. `rerank`: same fused rank, another served order.
//!
//! Products that leave for eligibility shift everything ranked below them
//! up, in every arm, in the pool and in the served window. Rules 2 to 4
//! therefore compare the replay's ranks with the recorded ranks *less the
//! ineligible products ranked above* (what the ranks would be had only
//! those products gone); a move that this shift accounts for entirely is
//! itself put down to `eligibility`, and so is a product that entered the
//! pool into the places they left (the last ones, when no arm changed).
//! Otherwise a product that entered the pool is never put down to
//! eligibility: the recorded receipt does not say whether it was eligible
//! then.

use crate::receipt::{Candidate, Receipt};
use serde::Serialize;
use std::collections::BTreeSet;

/// The stage a move is put down to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Cause {
    Eligibility,
    Lexical,
    Trigram,
    Semantic,
    Fusion,
    Rerank,
}

impl Cause {
    pub fn as_str(self) -> &'static str {
        match self {
            Cause::Eligibility => "eligibility",
            Cause::Lexical => "lexical",
            Cause::Trigram => "trigram",
            Cause::Semantic => "semantic",
            Cause::Fusion => "fusion",
            Cause::Rerank => "rerank",
        }
    }
}

/// The arms in receipt order, with the cause each one is.
pub(super) const ARMS: [(&str, Cause); 3] = [
    ("lexical", Cause::Lexical),
    ("trigram", Cause::Trigram),
    ("semantic", Cause::Semantic),
];

/// A candidate's ranks in one receipt: per arm, in the fused pool
/// (`pre_rerank_rank`) and after reranking (`final_rank`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Ranks {
    pub arms: [Option<i32>; 3],
    pub pool: i32,
    pub last: i32,
}

impl Ranks {
    pub fn of(c: &Candidate) -> Self {
        let s = &c.signals;
        Ranks {
            arms: [s.lexical, s.trigram, s.semantic].map(|x| x.map(|x| x.rank)),
            pool: c.pre_rerank_rank,
            last: c.final_rank,
        }
    }
}

/// The rules above, for one pair of receipts.
pub(super) struct Rules {
    ineligible: BTreeSet<String>,
    /// The recorded ranks of the products that left for eligibility.
    exits: Vec<Ranks>,
    /// Whether each arm's ranking changed (beyond the exits' shift).
    changed: [bool; 3],
    rrf_k: f64,
    /// Pool ranks above this one in the replay took places exits left.
    filled_after: i32,
}

impl Rules {
    pub fn new(before: &Receipt, after: &Receipt, rrf_k: f64) -> Self {
        let ineligible: BTreeSet<String> = after.event.replay_ineligible.iter().cloned().collect();
        let exits: Vec<Ranks> = before
            .pool
            .iter()
            .filter(|c| ineligible.contains(&c.product_id))
            .map(Ranks::of)
            .collect();
        let mut rules = Rules {
            filled_after: after.pool.len() as i32 - exits.len() as i32,
            ineligible,
            exits,
            changed: [false; 3],
            rrf_k,
        };
        rules.changed = rules.changed_arms(before, after);
        rules
    }

    /// Recorded ranks less the exits ranked above (`None` stays `None`).
    fn shifted(&self, r: Ranks) -> Ranks {
        let less = |mine: i32, theirs: &dyn Fn(&Ranks) -> Option<i32>| {
            mine - self
                .exits
                .iter()
                .filter(|x| theirs(x).is_some_and(|t| t < mine))
                .count() as i32
        };
        Ranks {
            arms: [0, 1, 2].map(|i| r.arms[i].map(|m| less(m, &|x| x.arms[i]))),
            pool: less(r.pool, &|x| Some(x.pool)),
            last: less(r.last, &|x| Some(x.last)),
        }
    }

    fn changed_arms(&self, before: &Receipt, after: &Receipt) -> [bool; 3] {
        let now: std::collections::BTreeMap<&str, Ranks> = after
            .pool
            .iter()
            .map(|c| (c.product_id.as_str(), Ranks::of(c)))
            .collect();
        let mut changed = [false; 3];
        for (i, (arm, _)) in ARMS.iter().enumerate() {
            let (b, a) = (&before.event.arms[arm], &after.event.arms[arm]);
            let account = ["verdict", "limit", "mode"].iter().any(|k| b[k] != a[k]);
            changed[i] = account
                || before.pool.iter().any(|c| {
                    now.get(c.product_id.as_str())
                        .is_some_and(|a| self.shifted(Ranks::of(c)).arms[i] != a.arms[i])
                });
        }
        changed
    }

    pub fn cause(&self, b: Option<&Candidate>, a: Option<&Candidate>) -> Cause {
        match (b, a) {
            (Some(b), None) if self.ineligible.contains(&b.product_id) => Cause::Eligibility,
            (Some(b), Some(a)) => {
                let (was, is) = (self.shifted(Ranks::of(b)), Ranks::of(a));
                match strongest_arm(was.arms, is.arms, self.rrf_k) {
                    Some(arm) => arm,
                    None if was.pool != is.pool => Cause::Fusion,
                    None if was.last != is.last => Cause::Rerank,
                    None => Cause::Eligibility,
                }
            }
            (Some(c), None) => {
                best_changed_arm(Ranks::of(c).arms, self.changed).unwrap_or(Cause::Fusion)
            }
            (None, Some(c)) => best_changed_arm(Ranks::of(c).arms, self.changed).unwrap_or(
                if c.pre_rerank_rank > self.filled_after {
                    Cause::Eligibility
                } else {
                    Cause::Fusion
                },
            ),
            (None, None) => Cause::Fusion,
        }
    }
}

/// The arm whose rank change moves the product's fusion score most.
fn strongest_arm(b: [Option<i32>; 3], a: [Option<i32>; 3], k: f64) -> Option<Cause> {
    let share = |r: Option<i32>| r.map_or(0.0, |r| 1.0 / (k + f64::from(r)));
    (0..3)
        .filter(|&i| b[i] != a[i])
        .map(|i| (i, (share(b[i]) - share(a[i])).abs()))
        .fold(None, |best: Option<(usize, f64)>, (i, d)| match best {
            Some((_, bd)) if bd >= d => best,
            _ => Some((i, d)),
        })
        .map(|(i, _)| ARMS[i].1)
}

/// Of the arms whose ranking changed, the one that ranks `r` best.
fn best_changed_arm(r: [Option<i32>; 3], changed: [bool; 3]) -> Option<Cause> {
    (0..3)
        .filter(|&i| changed[i])
        .filter_map(|i| r[i].map(|rank| (rank, i)))
        .min()
        .map(|(_, i)| ARMS[i].1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_arm_that_moves_the_fusion_score_most_is_the_cause() {
        // Semantic 2 -> 40 moves the score more than lexical 30 -> 31.
        let b = [Some(30), None, Some(2)];
        let a = [Some(31), None, Some(40)];
        assert_eq!(strongest_arm(b, a, 60.0), Some(Cause::Semantic));
        // An arm that stops ranking the product counts as score 0.
        let a = [Some(30), Some(5), Some(2)];
        assert_eq!(strongest_arm(b, a, 60.0), Some(Cause::Trigram));
        assert_eq!(strongest_arm(b, b, 60.0), None);
    }

    #[test]
    fn a_product_in_one_pool_goes_to_its_best_changed_arm() {
        let r = [Some(7), None, Some(3)];
        assert_eq!(
            best_changed_arm(r, [true, true, true]),
            Some(Cause::Semantic)
        );
        assert_eq!(
            best_changed_arm(r, [true, false, false]),
            Some(Cause::Lexical)
        );
        assert_eq!(best_changed_arm(r, [false, true, false]), None);
    }

    #[test]
    fn ranks_below_an_ineligible_exit_shift_up_by_one() {
        let rules = Rules {
            ineligible: BTreeSet::from(["gone".to_string()]),
            exits: vec![Ranks {
                arms: [Some(8), None, Some(3)],
                pool: 1,
                last: 1,
            }],
            changed: [false; 3],
            rrf_k: 60.0,
            filled_after: 49,
        };
        let below = Ranks {
            arms: [Some(12), Some(4), Some(2)],
            pool: 2,
            last: 2,
        };
        let shifted = Ranks {
            arms: [Some(11), Some(4), Some(2)],
            pool: 1,
            last: 1,
        };
        assert_eq!(rules.shifted(below), shifted);
    }
}
