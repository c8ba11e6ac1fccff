//! What changed between a recorded search and its replay, told from the two
//! receipts alone (so `mosaic replay` and the explanation of a replay say
//! the same thing, however long after).
//!
//! Event changes: strategy, semantic route, eligible estimate, rerank
//! status, every arm's account of itself (verdict, returned, limit, mode;
//! not its timing, its connection or how the lexical arm checked a price),
//! models, every profile value, warnings.
//! Timings, ids and timestamps are never changes.
//!
//! Moves: every product whose served rank changed, that entered or left the
//! served window, or that entered or left the pool, each with the stage
//! that caused it ([`super::cause`] holds the rules).

use super::cause::{Cause, Ranks, Rules, ARMS};
use crate::profile::RetrievalProfile;
use crate::receipt::{Candidate, Event, Receipt};
use serde::Serialize;
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};
use uuid::Uuid;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MoveKind {
    /// Served in both, at another rank.
    Moved,
    EnteredWindow,
    LeftWindow,
    EnteredPool,
    LeftPool,
}

/// Where a product stood in one receipt (two rank spaces, never compared).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Place {
    /// Window rank space (1..limit); null when not served.
    pub served_rank: Option<i32>,
    /// Pool rank space (1..pool size), before reranking.
    pub pre_rerank_rank: i32,
}

/// One arm's rank of a product before and after (null: not ranked).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ArmRank {
    pub arm: &'static str,
    pub before: Option<i32>,
    pub after: Option<i32>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Move {
    pub product_id: String,
    pub change: MoveKind,
    pub before: Option<Place>,
    pub after: Option<Place>,
    pub cause: Cause,
    /// The arms that rank the product differently (products in both pools).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub arm_ranks: Vec<ArmRank>,
}

/// One recorded value that differs (`arms.lexical.verdict`, `profile.pool_size`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FieldChange {
    pub field: String,
    pub before: Value,
    pub after: Value,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReplayDiff {
    /// No event change and no move.
    pub empty: bool,
    /// The first served product is the same (or none was served either time).
    pub top1_unchanged: bool,
    /// Mean over the recorded window of |served rank after − before|; a
    /// product no longer served counts as moved to just past the window
    /// (limit + 1).
    pub served_displacement: f64,
    pub changes: Vec<FieldChange>,
    pub moves: Vec<Move>,
}

/// A replay as its receipts tell it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReplayReport {
    pub replayed_event_id: Uuid,
    pub replay_event_id: Uuid,
    /// `recorded` or `current`: the profile the replay ran with.
    pub profile: String,
    pub diff: ReplayDiff,
}

impl ReplayReport {
    /// The report of `after`, which replays `before`.
    pub(crate) fn between(before: &Receipt, after: &Receipt) -> Self {
        ReplayReport {
            replayed_event_id: before.event.search_event_id,
            replay_event_id: after.event.search_event_id,
            profile: after.event.replay_profile.clone().unwrap_or_default(),
            diff: diff(before, after),
        }
    }
}

pub(crate) fn diff(before: &Receipt, after: &Receipt) -> ReplayDiff {
    let changes = event_changes(&before.event, &after.event);
    let moves = moves(before, after);
    let top = |r: &Receipt| {
        r.pool
            .iter()
            .find(|c| c.served_rank == Some(1))
            .map(|c| c.product_id.clone())
    };
    ReplayDiff {
        empty: changes.is_empty() && moves.is_empty(),
        top1_unchanged: top(before) == top(after),
        served_displacement: displacement(before, after),
        changes,
        moves,
    }
}

fn displacement(before: &Receipt, after: &Receipt) -> f64 {
    let now: BTreeMap<&str, Option<i32>> = after
        .pool
        .iter()
        .map(|c| (c.product_id.as_str(), c.served_rank))
        .collect();
    let past_window = before.event.limit + 1;
    let moved: Vec<i32> = before
        .pool
        .iter()
        .filter_map(|c| {
            let was = c.served_rank?;
            let is = now.get(c.product_id.as_str()).copied().flatten();
            Some((is.unwrap_or(past_window) - was).abs())
        })
        .collect();
    match moved.len() {
        0 => 0.0,
        n => f64::from(moved.iter().sum::<i32>()) / n as f64,
    }
}

fn event_changes(b: &Event, a: &Event) -> Vec<FieldChange> {
    let scalars = [
        ("strategy", json!(b.strategy), json!(a.strategy)),
        (
            "semantic_route",
            json!(b.semantic_route),
            json!(a.semantic_route),
        ),
        (
            "eligible_estimate",
            json!(b.eligible_estimate),
            json!(a.eligible_estimate),
        ),
        (
            "rerank_status",
            json!(b.rerank_status),
            json!(a.rerank_status),
        ),
    ];
    let mut out: Vec<FieldChange> = scalars
        .into_iter()
        .filter(|(_, x, y)| x != y)
        .map(|(field, before, after)| FieldChange {
            field: field.into(),
            before,
            after,
        })
        .collect();
    // An arm's timing and connection vary run to run, and so may how the
    // lexical arm checked a price (the price statistics, which change with
    // ANALYZE; the same rows either way); its eligible count is the event's
    // `eligible_estimate`.
    value_changes(
        &mut out,
        "arms",
        &b.arms,
        &a.arms,
        &[
            "ms",
            "connection",
            "eligible_estimate",
            "price_checked_on_rows",
        ],
    );
    value_changes(&mut out, "models", &b.models, &a.models, &[]);
    value_changes(&mut out, "profile", &b.profile, &a.profile, &[]);
    value_changes(&mut out, "warnings", &b.warnings, &a.warnings, &[]);
    // A correction the vocabulary or the profile changed: the text arms
    // searched for another query, which their moves alone do not say.
    let understanding = |e: &Event| e.query_understanding.clone().unwrap_or(Value::Null);
    value_changes(
        &mut out,
        "query_understanding",
        &understanding(b),
        &understanding(a),
        &[],
    );
    out
}

/// Appends the differences between two recorded values: objects key by key
/// (`prefix.key`, keys in `ignore` left out at every depth), anything else
/// as a whole.
fn value_changes(out: &mut Vec<FieldChange>, prefix: &str, b: &Value, a: &Value, ignore: &[&str]) {
    match (b, a) {
        (Value::Object(bo), Value::Object(ao)) => {
            let keys: BTreeSet<&String> = bo.keys().chain(ao.keys()).collect();
            for k in keys.into_iter().filter(|k| !ignore.contains(&k.as_str())) {
                let (x, y) = (
                    bo.get(k).unwrap_or(&Value::Null),
                    ao.get(k).unwrap_or(&Value::Null),
                );
                value_changes(out, &format!("{prefix}.{k}"), x, y, ignore);
            }
        }
        _ if b != a => out.push(FieldChange {
            field: prefix.to_string(),
            before: b.clone(),
            after: a.clone(),
        }),
        _ => {}
    }
}

fn place(c: &Candidate) -> Place {
    Place {
        served_rank: c.served_rank,
        pre_rerank_rank: c.pre_rerank_rank,
    }
}

fn kind(b: Option<&Candidate>, a: Option<&Candidate>) -> Option<MoveKind> {
    match (b, a) {
        (Some(_), None) => Some(MoveKind::LeftPool),
        (None, Some(_)) => Some(MoveKind::EnteredPool),
        (Some(b), Some(a)) => match (b.served_rank, a.served_rank) {
            (Some(x), Some(y)) if x != y => Some(MoveKind::Moved),
            (Some(_), None) => Some(MoveKind::LeftWindow),
            (None, Some(_)) => Some(MoveKind::EnteredWindow),
            _ => None,
        },
        (None, None) => None,
    }
}

/// Product `id` in receipt `r`, through `r`'s index.
fn find<'r>(index: &BTreeMap<String, usize>, r: &'r Receipt, id: &str) -> Option<&'r Candidate> {
    index.get(id).map(|&n| &r.pool[n])
}

fn moves(before: &Receipt, after: &Receipt) -> Vec<Move> {
    let index = |r: &Receipt| -> BTreeMap<String, usize> {
        r.pool
            .iter()
            .enumerate()
            .map(|(i, c)| (c.product_id.clone(), i))
            .collect()
    };
    let (bi, ai) = (index(before), index(after));
    let rrf_k = after.event.profile["rrf_k"]
        .as_f64()
        .unwrap_or(RetrievalProfile::default().rrf_k);
    let rules = Rules::new(before, after, rrf_k);
    let ids: BTreeSet<&String> = bi.keys().chain(ai.keys()).collect();
    let mut out: Vec<Move> = ids
        .into_iter()
        .filter_map(|id| {
            let (b, a) = (find(&bi, before, id), find(&ai, after, id));
            let change = kind(b, a)?;
            let arm_ranks = match (b, a) {
                (Some(b), Some(a)) => arm_rank_changes(Ranks::of(b).arms, Ranks::of(a).arms),
                _ => Vec::new(),
            };
            Some(Move {
                product_id: id.clone(),
                change,
                before: b.map(place),
                after: a.map(place),
                cause: rules.cause(b, a),
                arm_ranks,
            })
        })
        .collect();
    out.sort_by_key(order_key);
    out
}

/// Moves in the order a reader scans them: by the best served rank either
/// side had, then by pool rank.
fn order_key(m: &Move) -> (i32, i32, String) {
    let served = [m.before, m.after]
        .iter()
        .flatten()
        .filter_map(|p| p.served_rank)
        .min()
        .unwrap_or(i32::MAX);
    let pool = [m.before, m.after]
        .iter()
        .flatten()
        .map(|p| p.pre_rerank_rank)
        .min()
        .unwrap_or(i32::MAX);
    (served, pool, m.product_id.clone())
}

fn arm_rank_changes(b: [Option<i32>; 3], a: [Option<i32>; 3]) -> Vec<ArmRank> {
    (0..3)
        .filter(|&i| b[i] != a[i])
        .map(|i| ArmRank {
            arm: ARMS[i].0,
            before: b[i],
            after: a[i],
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nested_values_differ_key_by_key_and_ignored_keys_never() {
        let b = json!({"lexical": {"verdict": "full", "ms": 3.0}, "semantic": {"returned": 150}});
        let a =
            json!({"lexical": {"verdict": "budget_cut", "ms": 9.0}, "semantic": {"returned": 150}});
        let mut out = Vec::new();
        value_changes(&mut out, "arms", &b, &a, &["ms"]);
        assert_eq!(
            out,
            vec![FieldChange {
                field: "arms.lexical.verdict".into(),
                before: json!("full"),
                after: json!("budget_cut"),
            }]
        );
    }
}
