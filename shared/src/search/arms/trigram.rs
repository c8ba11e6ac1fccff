//! The trigram arm: pg_trgm word similarity against each product's identity
//! text, in a cascade of thresholds from the strictest, with the perfect
//! step first or alone where it serves, and a code's own steps.

use super::*;

/// The word-similarity thresholds of the trigram cascade, strictest first:
/// strict, middle, floor, with repeats dropped (all three equal = one step).
pub fn trigram_steps(profile: &RetrievalProfile) -> Vec<f64> {
    let mut steps: Vec<f64> = Vec::with_capacity(3);
    for th in [
        profile.trigram_strict_threshold,
        profile.trigram_middle_threshold,
        profile.trigram_floor,
    ] {
        if steps.last().is_none_or(|last| th < *last) {
            steps.push(th);
        }
    }
    steps
}

/// Adds one step's rows to the cascade's answer. A later (more relaxed)
/// step's rows are a superset of the earlier ones unless its safety budget
/// cut it, so the union keeps every better match an earlier step found.
fn merge_step(merged: &mut Vec<(String, f64)>, step: Vec<(String, f64)>, limit: i64) {
    for (id, score) in step {
        if !merged.iter().any(|(m, _)| *m == id) {
            merged.push((id, score));
        }
    }
    merged.sort_by(best_first);
    merged.truncate(limit.max(0) as usize);
}

/// One step of the trigram arm at word-similarity threshold `th`, taking
/// at most `budget` matches: its best `trigram_limit` rows (best first,
/// ties by product id) and whether it met the budget. The step matches
/// `find` (the query, or for a relaxed step of a query that names a code,
/// its codes: see [`trigram`]); its rows are scored for `q`, the query, by
/// `scorer` (the query's [`WordSimilarity`], `None` for a query outside
/// ASCII), not in the step's SQL.
async fn trigram_step<C: GenericClient>(
    db: &C,
    elig: &Eligibility,
    (find, q): (&str, &str),
    scorer: Option<&WordSimilarity>,
    th: f64,
    budget: i64,
    profile: &RetrievalProfile,
) -> Result<(Vec<(String, f64)>, bool), tokio_postgres::Error> {
    // The step's threshold (SET LOCAL) and the step: one round trip.
    let th = th.to_string();
    let params = elig.typed(&[(&find, Type::TEXT), (&budget, Type::INT8), (&q, Type::TEXT)]);
    let (_, rows) = tokio::try_join!(
        crate::db::set_local(db, "pg_trgm.word_similarity_threshold", th),
        db.query_typed(TRIGRAM_SQL, &params),
    )?;
    let mut scored: Vec<(String, f64)> = rows
        .iter()
        .map(|r| {
            let sql_score: Option<f64> = r.get(2);
            let score = sql_score
                .or_else(|| Some(f64::from(scorer?.score(r.get(1))?)))
                // Unreachable in a UTF-8 database: the SQL scores every
                // text or query that is not ASCII.
                .unwrap_or(0.0);
            (r.get(0), score)
        })
        .collect();
    scored.sort_by(best_first);
    scored.truncate(profile.trigram_limit.max(0) as usize);
    // At the budget only the first `budget` matches (in physical order) were
    // scored: the step returned the limit, but not known to be the best.
    Ok((scored, rows.len() as i64 >= budget))
}

/// The words pg_trgm takes trigrams of: runs of letters and digits.
fn trigram_words(text: &str) -> Vec<&str> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect()
}

/// Whether a query is long enough for the trigram arm to start at its floor
/// (see [`trigram`]).
fn trigram_long_query(query: &str, profile: &RetrievalProfile) -> bool {
    query.split_whitespace().count() as i64 >= profile.trigram_floor_first_words
}

/// Trigram arm: a threshold cascade. Each step is the full top-`limit`
/// query (eligibility inside, ORDER BY similarity) at one
/// `pg_trgm.word_similarity_threshold`.
///
/// * The cascade runs strictest first and relaxes to the next threshold only
///   while it holds fewer than `trigram_enough` candidates. A strict
///   threshold lets the GIN index drop most candidates before the costly
///   recheck, so a close match (a typo of a brand and model) is served by a
///   cheap step, and only vague queries pay for the floor.
/// * Floor first: a query of `trigram_floor_first_words` words or more, or
///   a request filtered to a category or brand, starts at the floor. Every
///   step pays a GIN scan over all the query's trigrams; a long query (a
///   description) rarely reaches the stricter thresholds (mosaic bench, 100k
///   products: an eight-word description cost 7 + 14 + 18 ms for three empty
///   steps), and a category or brand slice bounds the floor's rechecks
///   (very selective filters at 100k: trigram arm p50 11.3 ms with the
///   cascade, 3.7 ms floor first). When the floor is not budget-cut its
///   answer is complete: every eligible match at the floor, best first,
///   never less than the cascade would serve.
/// * A long query whose floor is budget-cut (the physical-order budget may
///   have missed the closest matches) then runs the stricter steps as in
///   the cascade and merges their rows in. A short query in a slice keeps
///   its cut floor: there the floor of category words matches most of the
///   slice, and the strict step would be cut as well, at twice the cost.
/// * Perfect only (`trigram_spelled_perfect`): a query `spelled` as
///   written (the understanding step found no unknown word and no code,
///   and, unless `trigram_corrected_perfect`, corrected nothing; the arm
///   then searches for the corrected words) takes the perfect step below alone, under
///   any filter, and the arm ends there (`full` when it filled the limit,
///   otherwise `exhausted`). The relaxed thresholds admit texts that hold
///   only part of the query ("running shoes" of "extra-wide running
///   shoes"), which serves a misspelt word or code and, for words spelled
///   right, only votes in fusion for products that lack the query's other
///   words; the lexical arm already matches the words themselves.
/// * Codes alone (`trigram_identifier_steps`): for a query that names a
///   product line's code (`codes`: its identifiers, space-separated, see
///   [`crate::search::understand::Understanding::line_codes`]) the relaxed steps
///   match the codes alone; their rows are still scored for the whole
///   query, so the order among them is the query's. At a relaxed
///   threshold the query's other words ("PXLT-3353 Mini") admit every
///   identity text that shares them and a few digits: thousands of
///   rechecks for rows the lexical arm matches better, and under a filter
///   that excludes the code's own line the step then rechecks them all.
///   The perfect step keeps the whole query; and when the codes alone
///   match nothing down to the floor (a code garbled beyond it), the
///   relaxed steps run again for the whole query, as without the setting.
///   A request filtered to a category or brand keeps the whole query: the
///   slice already bounds its rechecks, and a code's near spellings are
///   seldom in it, so the codes would mostly match nothing and the floor
///   would run twice.
/// * Perfect first (`trigram_perfect_first`): a short query first takes
///   `limit` matches at similarity 1.0, scoring only those. When they fill
///   the limit the arm is done, with the best possible scores: a query of
///   common words ("air fryer") no longer scores a whole budget of matches
///   that all tie at 1.0. Otherwise its rows are kept and the arm goes on as
///   above; a query with no perfect match pays one GIN scan that the 1.0
///   threshold makes cheap (every trigram must be present). A request
///   filtered to a category, brand or domain skips it. A slice's floor is
///   bounded by the slice, and the perfect step's scan is not (very
///   selective filters at 100k: arm p50 9.3 -> 13.8 ms with it). A domain
///   filter can exclude every perfect match ("air fryer" in office
///   products), and the step then rechecks all of them to find none
///   (anti-correlated filters at 100k: arm p95 50.5 -> 60.0 ms with it).
///
/// `mode` is `threshold_<t>`, the threshold that served last; the setting is
/// left at it for the rest of the transaction (no other arm reads it). With
/// `matched_codes` set, the threshold and the verdict are about the codes'
/// similarity, and a row's score (for the whole query) can be lower. The
/// verdict is about that threshold: `exhausted` means fewer eligible matches
/// at `<t>` than the limit, `budget_cut` that a step met the safety budget
/// (`trigram_scan_budget` matches scored, in physical order).
pub async fn trigram<C: GenericClient>(
    db: &C,
    elig: &Eligibility,
    query: &str,
    (spelled, codes): (bool, Option<&str>),
    profile: &RetrievalProfile,
) -> Result<ArmResult, tokio_postgres::Error> {
    let t = std::time::Instant::now();
    let chars = profile.trigram_query_chars;
    let (q, cut_query) = first_chars(&query.to_lowercase(), chars);
    let scorer = WordSimilarity::new(&q);
    let scorer = scorer.as_ref();
    let limit = profile.trigram_limit;
    let enough = profile.trigram_enough.min(limit).max(1) as usize;
    let floor = profile.trigram_floor;
    let mut merged: Vec<(String, f64)> = Vec::new();
    let mut served = floor;
    let mut cut = false;
    let long = trigram_long_query(&q, profile);
    let budget = profile.trigram_scan_budget;
    let slice = elig.category_key.is_some() || elig.brand.is_some();
    // The codes the relaxed steps match first, unless they are all the
    // query's words.
    let (codes, cut_codes) = match codes {
        Some(c) => {
            let (c, cut) = first_chars(&c.to_lowercase(), chars);
            (Some(c), cut)
        }
        None => (None, false),
    };
    let codes = codes.filter(|c| {
        profile.trigram_identifier_steps == 1 && !slice && trigram_words(c) != trigram_words(&q)
    });
    let read_chars = (cut_query || cut_codes).then_some(chars as usize);
    let perfect_only = spelled && profile.trigram_spelled_perfect == 1;
    let perfect_first =
        !long && !slice && elig.domain.is_none() && profile.trigram_perfect_first == 1;
    if perfect_only || perfect_first {
        let (rows, _) = trigram_step(db, elig, (&q, &q), scorer, 1.0, limit, profile).await?;
        if perfect_only || rows.len() as i64 >= limit {
            let v = verdict(rows.len(), limit);
            let mut arm = ArmResult::new(rows, limit, v, Some(ArmMode::Trigram(1.0)), ms_since(t));
            arm.read_chars = read_chars;
            return Ok(arm);
        }
        merged = rows;
    }
    // The relaxed steps match the codes alone first; when those match
    // nothing (a code garbled beyond the floor, "NVS-2039 Plus" of
    // "NVSW-1039 Plus"), the whole query.
    let mut matched_codes = None;
    for text in codes.iter().chain([&q]) {
        let find = (text.as_str(), q.as_str());
        // Whether this pass's own steps matched anything.
        let mut matched = false;
        if long || slice {
            let (rows, floor_cut) =
                trigram_step(db, elig, find, scorer, floor, budget, profile).await?;
            matched |= !rows.is_empty();
            merge_step(&mut merged, rows, limit);
            cut = floor_cut;
            if floor_cut && long {
                for th in trigram_steps(profile).into_iter().filter(|th| *th > floor) {
                    let (rows, step_cut) =
                        trigram_step(db, elig, find, scorer, th, budget, profile).await?;
                    let found = rows.len();
                    matched |= found > 0;
                    merge_step(&mut merged, rows, limit);
                    served = th;
                    if found >= enough || step_cut {
                        break;
                    }
                }
            }
        } else {
            for th in trigram_steps(profile) {
                let (rows, step_cut) =
                    trigram_step(db, elig, find, scorer, th, budget, profile).await?;
                matched |= !rows.is_empty();
                merge_step(&mut merged, rows, limit);
                served = th;
                cut = step_cut;
                // A cut step holds the limit, so the cascade stops at it.
                if merged.len() >= enough || cut {
                    break;
                }
            }
        }
        if matched {
            matched_codes = (*text != q).then(|| text.clone());
            break;
        }
    }
    let mut arm = ArmResult::ranked(merged, limit, cut, ArmMode::Trigram(served), t);
    arm.matched_codes = matched_codes;
    arm.read_chars = read_chars;
    Ok(arm)
}

/// The first `max` characters of `text` (all of it when `max` is 0), and
/// whether that cut anything: whole words while they fit, or the first
/// word's first `max` characters when even it does not. The trigram arm's
/// cost grows with the distinct trigrams of what it matches: every step's
/// GIN scan reads one posting list per trigram and every recheck compares
/// them all, and past a few hundred of them the planner prefers computing
/// the similarity of every row (`trigram_query_chars`).
pub fn first_chars(text: &str, max: i64) -> (String, bool) {
    let max = max.max(0) as usize;
    if max == 0 || text.chars().count() <= max {
        return (text.to_string(), false);
    }
    let mut out = String::new();
    for word in text.split_whitespace() {
        let len = out.chars().count() + usize::from(!out.is_empty()) + word.chars().count();
        if len > max {
            break;
        }
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
    }
    if out.is_empty() {
        out = text.trim_start().chars().take(max).collect();
    }
    (out, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_trigram_arm_reads_whole_words_up_to_its_bound() {
        assert_eq!(
            first_chars("pxlt-3353 mini", 128),
            ("pxlt-3353 mini".into(), false)
        );
        assert_eq!(
            first_chars("pxlt-3353 mini", 0),
            ("pxlt-3353 mini".into(), false)
        );
        // Whole words while they fit, the space between them counted.
        assert_eq!(
            first_chars("voltrix vxhp-1000s lite", 18),
            ("voltrix vxhp-1000s".into(), true)
        );
        assert_eq!(
            first_chars("voltrix vxhp-1000s lite", 17),
            ("voltrix".into(), true)
        );
        // A first word longer than the bound: its first characters.
        let long = "ab".repeat(100);
        assert_eq!(first_chars(&long, 5), ("ababa".into(), true));
        // Characters, not bytes.
        assert_eq!(first_chars("ééééé ü", 5), ("ééééé".into(), true));
    }

    #[test]
    fn the_trigram_cascade_runs_strictest_first_without_repeats() {
        let p = RetrievalProfile::default();
        assert_eq!(
            trigram_steps(&p),
            vec![
                p.trigram_strict_threshold,
                p.trigram_middle_threshold,
                p.trigram_floor
            ]
        );
        let one = RetrievalProfile {
            trigram_strict_threshold: 0.45,
            trigram_middle_threshold: 0.45,
            trigram_floor: 0.45,
            ..Default::default()
        };
        assert_eq!(trigram_steps(&one), vec![0.45]);
        let two = RetrievalProfile {
            trigram_middle_threshold: 0.45,
            trigram_floor: 0.45,
            ..Default::default()
        };
        assert_eq!(
            trigram_steps(&two),
            vec![two.trigram_strict_threshold, 0.45]
        );
    }

    #[test]
    fn a_relaxed_step_never_loses_what_a_stricter_step_found() {
        let mut merged = Vec::new();
        merge_step(&mut merged, vec![("p9".into(), 0.9)], 3);
        // A budget-cut relaxed step that missed p9 in physical order.
        merge_step(
            &mut merged,
            vec![("p1".into(), 0.5), ("p2".into(), 0.6), ("p3".into(), 0.5)],
            3,
        );
        let ids: Vec<&str> = merged.iter().map(|(id, _)| id.as_str()).collect();
        assert_eq!(ids, vec!["p9", "p2", "p1"]);
        // A relaxed step that found it again does not duplicate it.
        merge_step(
            &mut merged,
            vec![("p9".into(), 0.9), ("p4".into(), 0.95)],
            3,
        );
        let ids: Vec<&str> = merged.iter().map(|(id, _)| id.as_str()).collect();
        assert_eq!(ids, vec!["p4", "p9", "p2"]);
    }
}
