//! The lexical arm: PostgreSQL full-text search over the weighted document,
//! the query as written first, then, when that matches nothing, relaxed
//! steps over its terms (all but one, half of them, any one), each ranked
//! within a budget.

use super::*;

/// The query split for the lexical back-off: substantive positive terms and
/// negated terms (`-word`), which stay excluded in every step.
#[derive(Debug, Clone, PartialEq)]
pub struct LexicalTerms {
    pub positive: Vec<String>,
    pub negated: Vec<String>,
}

pub fn lexical_terms(query: &str) -> LexicalTerms {
    let mut positive = Vec::new();
    let mut negated = Vec::new();
    for raw in query.split_whitespace() {
        let (neg, word) = match raw.strip_prefix('-') {
            Some(w) if !w.is_empty() => (true, w),
            _ => (false, raw),
        };
        let cleaned: String = word
            .chars()
            .filter(|c| c.is_alphanumeric() || *c == '-' || *c == '.')
            .collect();
        let cleaned = cleaned.trim_matches(|c| c == '-' || c == '.').to_string();
        if cleaned.is_empty() || (!neg && cleaned.eq_ignore_ascii_case("or")) {
            continue;
        }
        if neg {
            negated.push(format!("-{cleaned}"));
        } else {
            positive.push(cleaned);
        }
    }
    LexicalTerms { positive, negated }
}

/// The relaxed steps' required counts of the `m` informative terms, most
/// first: all of them (only when `all_first`: other terms were set aside,
/// so the strict query was not this one), all but one, half, any one
/// (repeats dropped). A level whose tsquery would need more than
/// [`MAX_COMBINATIONS`] combinations is left out.
pub fn relaxed_levels(m: usize, all_first: bool) -> Vec<usize> {
    let mut levels: Vec<usize> = Vec::with_capacity(4);
    let first = if all_first { m } else { m.saturating_sub(1) };
    for k in [first, m.saturating_sub(1), m.div_ceil(2), 1] {
        let fits = combinations(m, k) <= MAX_COMBINATIONS;
        let below = k < m || (all_first && k == m);
        if k >= 1 && below && fits && levels.last().is_none_or(|last| k < *last) {
            levels.push(k);
        }
    }
    levels
}

/// The most k-term combinations one relaxed step may stand for (its
/// tsquery, factored, is smaller, but grows with them).
pub const MAX_COMBINATIONS: usize = 200;

fn combinations(n: usize, k: usize) -> usize {
    if k > n {
        return 0;
    }
    (1..=k.min(n - k)).fold(1usize, |acc, i| acc.saturating_mul(n + 1 - i) / i)
}

/// The tsquery (text) of the documents holding at least `k` of `terms`
/// (each a term's own tsquery text, as PostgreSQL printed it); empty when
/// `k` is 0 or more than there are terms.
///
/// Written factored, "(a & at least k-1 of the rest) | at least k of the
/// rest", rather than as the disjunction of every k-term combination: the
/// same documents, but the GIN scan evaluates the query for every document
/// holding any of the terms, and the factored form is about half the size,
/// and a document that lacks a term skips every branch that needs it. At
/// 100k products, "at least 4 of 7" under a domain filter took 18-25 ms as
/// 35 combinations and 8-9 ms factored (BENCHMARKS.md, "The lexical
/// back-off's steps, factored").
pub fn at_least(terms: &[String], k: usize) -> String {
    let n = terms.len();
    if k == 0 || k > n {
        return String::new();
    }
    let each = |ts: &[String]| -> Vec<String> { ts.iter().map(|t| format!("({t})")).collect() };
    if k == n {
        return format!("({})", each(terms).join(" & "));
    }
    if k == 1 {
        return format!("({})", each(terms).join(" | "));
    }
    let (first, rest) = (&terms[0], &terms[1..]);
    format!(
        "((({first}) & {}) | {})",
        at_least(rest, k - 1),
        at_least(rest, k)
    )
}

/// A price filter's estimated share of the catalog and the catalog's rows,
/// from the planner's statistics ([`PriceStats`]).
///
/// Under a price filter the planner ANDs the price index's bitmap into each
/// lexical step: it reads the index entry of every product in the range to
/// save fetching the text matches that lie outside it. Its cost model
/// leaves out the step's scoring budget: a step stops after `budget`
/// eligible matches, about `budget / share` fetched documents when the
/// price checks each one on its row, against `share * rows` index entries
/// for the bitmap. Under a broad range over a large catalog the bitmap is
/// the dearer (a million products, the cheaper half: 2-3x), under a narrow
/// band the row checks are (4-6x at 2% of the catalog). [`checks_rows`](Self::checks_rows)
/// compares the two, and the lexical arm then writes the price conditions
/// so that no index serves them ([`price_on_rows`]). A search reads the
/// share from the statistics its context keeps
/// ([`crate::PriceStatsCache::share`]). Both plans read the
/// matches in the table's physical order, so each step keeps the same
/// matches either way: only the time changes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PriceShare {
    /// The share of the catalog the price range admits, 0 to 1.
    pub share: f64,
    /// The catalog's rows, as the planner counts them.
    pub rows: f64,
}

/// How many index entries of the price bitmap cost as much as one fetched
/// document whose price is checked on its row. See [`PriceShare`]. Set
/// from where the two ways cost the same (BENCHMARKS.md, "A broad price
/// filter in the lexical arm"): at a million products, four lexical steps
/// under a maximum price admitting 2% to 50% of the catalog broke even
/// between 10% and 15% (this factor: 14%); at 100,000 products between
/// 20% and 50% (this factor: 45%).
pub const PRICE_ENTRIES_PER_ROW_CHECK: f64 = 10.0;

impl PriceShare {
    /// The fewest catalog rows at which [`checks_rows`](Self::checks_rows)
    /// can hold for `budget` (a range admitting the whole catalog).
    pub fn least_rows(budget: i64) -> i64 {
        (PRICE_ENTRIES_PER_ROW_CHECK * budget.max(1) as f64) as i64
    }

    /// Whether checking the price on each fetched match (at most
    /// `budget / share` of them for a step) costs less than the price
    /// index's bitmap (`share * rows` entries).
    pub fn checks_rows(&self, budget: i64) -> bool {
        let fetched = budget.max(1) as f64 / self.share.max(f64::MIN_POSITIVE);
        self.share * self.rows >= PRICE_ENTRIES_PER_ROW_CHECK * fetched
    }
}

/// The price column's statistics, as ANALYZE left them
/// (`sql/price_stats.sql`): a price range's share of the catalog is
/// estimated from them as the planner would, without a statement per
/// search.
#[derive(Clone, Debug, PartialEq)]
pub struct PriceStats {
    /// The share of products without a price.
    pub null_frac: f64,
    /// The most common prices and the share of products at each.
    pub common: Vec<(i64, f64)>,
    /// The histogram's bounds over the other prices, lowest first: equal
    /// shares of them between neighbouring bounds.
    pub bounds: Vec<i64>,
    /// The catalog's rows, as the planner counts them.
    pub rows: f64,
}

impl PriceStats {
    /// Reads the statistics; `None` when the column has none yet (a
    /// catalog never analysed).
    pub async fn read<C: GenericClient>(
        db: &C,
    ) -> Result<Option<PriceStats>, tokio_postgres::Error> {
        let row = db.query_typed_one(PRICE_STATS_SQL, &[]).await?;
        let Some(null_frac) = row.get::<_, Option<f64>>(0) else {
            return Ok(None);
        };
        let prices: Vec<i64> = row.get::<_, Option<Vec<i64>>>(1).unwrap_or_default();
        let freqs: Vec<f64> = row.get::<_, Option<Vec<f64>>>(2).unwrap_or_default();
        Ok(Some(PriceStats {
            null_frac,
            common: prices.into_iter().zip(freqs).collect(),
            bounds: row.get::<_, Option<Vec<i64>>>(3).unwrap_or_default(),
            rows: row.get(4),
        }))
    }

    /// `elig`'s price range's share of the catalog: the common prices'
    /// shares within it, plus the other prices' share times the share of
    /// the histogram's bounds within it (within a bucket of the histogram,
    /// 1% of the rest at the default statistics target).
    pub fn share(&self, elig: &Eligibility) -> PriceShare {
        let within =
            |p: i64| elig.min_price.is_none_or(|m| p >= m) && elig.max_price.is_none_or(|m| p <= m);
        let common: f64 = self
            .common
            .iter()
            .filter(|(p, _)| within(*p))
            .map(|(_, f)| f)
            .sum();
        let rest = 1.0 - self.null_frac - self.common.iter().map(|(_, f)| f).sum::<f64>();
        let hist = match self.bounds.len() {
            0 => 0.0,
            n => self.bounds.iter().filter(|p| within(**p)).count() as f64 / n as f64,
        };
        PriceShare {
            share: (common + rest.max(0.0) * hist).clamp(0.0, 1.0),
            rows: self.rows,
        }
    }
}

/// `sql` with the eligibility predicate's price conditions written so that
/// no index serves them (`pp.price_cents + 0`): the same conditions,
/// checked on each row the statement's other conditions fetch.
pub fn price_on_rows(sql: &str) -> String {
    sql.replace("pp.price_cents >= $6", "pp.price_cents + 0 >= $6")
        .replace("pp.price_cents <= $7", "pp.price_cents + 0 <= $7")
}

/// The lexical statements (strict, relaxed) with the price checked on the
/// rows ([`price_on_rows`]).
pub(super) static LEXICAL_PRICE_ON_ROWS: std::sync::LazyLock<[String; 2]> =
    std::sync::LazyLock::new(|| {
        [
            price_on_rows(LEXICAL_SQL),
            price_on_rows(LEXICAL_RELAXED_SQL),
        ]
    });

/// Lexical arm: the strict websearch query, then (only when it matches
/// nothing) relaxed steps over the query's informative terms (those some
/// products hold, but not more than half of them: past half a term's BM25
/// weight is nil, "easy" in a catalog of easy-to-use things), until the
/// matches reach `lexical_enough`: the documents holding all of them, all
/// but one, half of them, any one; then, if still short, any one of every
/// term the catalog holds (the back-off of old). Each step is a tsquery the
/// GIN index answers, so only documents holding enough of the query are
/// fetched (at most `lexical_scan_budget` of them) and ranked by
/// `ts_rank_cd` against any term (in a step any one term satisfies, past
/// `lexical_rank_budget` matches, `ts_rank` chooses which are ranked). A
/// stricter step's rows stay ahead of a looser step's.
pub async fn lexical<C: GenericClient>(
    db: &C,
    elig: &Eligibility,
    query: &str,
    profile: &RetrievalProfile,
) -> Result<ArmResult, tokio_postgres::Error> {
    lexical_understood(db, elig, query, query, profile).await
}

/// The lexical arm for a query that query understanding corrected: the
/// strict step searches for the corrected `query`, and the relaxed steps,
/// when it matches nothing, take their terms from the query `as_written`,
/// where a misspelt word matches nothing and so drops out of every step. A
/// correction is trusted when the corrected query matches as a whole;
/// otherwise no corrected word outweighs the caller's own. Where `elig`
/// carries its price filter's share of the catalog and that share makes
/// the price index's bitmap the dearer way, every step checks the price on
/// its matches' rows ([`PriceShare::checks_rows`]).
pub async fn lexical_understood<C: GenericClient>(
    db: &C,
    elig: &Eligibility,
    query: &str,
    as_written: &str,
    profile: &RetrievalProfile,
) -> Result<ArmResult, tokio_postgres::Error> {
    let t = std::time::Instant::now();
    let budget = profile.lexical_scan_budget;
    let limit = profile.lexical_limit;
    let rank_budget = profile.lexical_rank_budget;
    let on_rows = elig.price_share.is_some_and(|s| s.checks_rows(budget));
    let (strict_sql, relaxed_sql): (&'static str, &'static str) = match on_rows {
        true => (&LEXICAL_PRICE_ON_ROWS[0], &LEXICAL_PRICE_ON_ROWS[1]),
        false => (LEXICAL_SQL, LEXICAL_RELAXED_SQL),
    };
    // A relaxed step also takes its ranking budget and the terms it ranks
    // against.
    let run = |sql: &'static str, text: String, relaxed: Option<(i64, Vec<String>)>| async move {
        let mut extra: Vec<Typed> = vec![
            (&text, Type::TEXT),
            (&budget, Type::INT8),
            (&limit, Type::INT8),
        ];
        if let Some((bound, terms)) = relaxed.as_ref() {
            extra.push((bound, Type::INT8));
            extra.push((terms, Type::TEXT_ARRAY));
        }
        let rows = db.query_typed(sql, &elig.typed(&extra)).await?;
        let matched: i64 = rows.first().map_or(0, |r| r.get(2));
        Ok::<_, tokio_postgres::Error>((scored(&rows), matched))
    };
    // Strict: the query as written (websearch syntax: quotes, -negation, or).
    let (mut cands, mut matched) = run(strict_sql, query.to_string(), None).await?;
    let mut most = 0;
    let mut mode = LexicalMode::Strict;
    let positive = lexical_terms(as_written).positive;
    if cands.is_empty() && positive.len() > 1 {
        // Negated terms stay excluded through the eligibility predicate.
        let relax = Relaxation::of(db, &positive, budget, elig).await?;
        let enough = profile.lexical_enough.max(1) as usize;
        for (step_mode, tsquery) in relax.steps() {
            // Only a step any one term satisfies ranks within the budget.
            let any_term = matches!(step_mode, LexicalMode::Backoff { required: 1, .. });
            let bound = if any_term { rank_budget } else { 0 };
            let step = run(relaxed_sql, tsquery, Some((bound, relax.present.clone())));
            let (step, step_matched) = step.await?;
            for c in step {
                if !cands.iter().any(|(id, _)| *id == c.0) {
                    cands.push(c);
                }
            }
            cands.truncate(limit.max(0) as usize);
            matched = step_matched;
            if bound > 0 {
                most = most.max(step_matched);
            }
            mode = step_mode;
            if cands.len() >= enough {
                break;
            }
        }
    }
    // At the budget, only the first `budget` matches were ranked.
    let cut = matched >= budget;
    let mut result = ArmResult::ranked(cands, limit, cut, ArmMode::Lexical(mode), t);
    result.price_checked_on_rows = on_rows.then_some(true);
    result.prescored_matches = (rank_budget > 0 && most > rank_budget).then_some(most);
    Ok(result)
}

/// A term's tsquery text in a relaxed step when no product the filters
/// admit holds the term (by its holders' prices and domains), followed by
/// the term's place in the query ("'no eligible holder 2'"): a lexeme with
/// spaces, which no document holds (the parser splits words at spaces), so
/// the GIN index answers it from one empty entry; each term keeps a text of
/// its own, as the steps tell terms apart by their text.
pub const NO_ELIGIBLE_HOLDER: &str = "no eligible holder";

/// The terms the lexical arm's relaxed steps work with, each as its own
/// tsquery text (stop words dropped, repeats once).
#[derive(Debug, Clone, PartialEq)]
pub struct Relaxation {
    /// Terms some products hold, at most half of them.
    pub informative: Vec<String>,
    /// The informative terms that are product-line codes
    /// ([`crate::search::understand::identifier_stem`]: "smsb-1504", not "4k" or
    /// "ip67").
    pub codes: Vec<String>,
    /// The informative terms fewer products hold than the arm's scan
    /// budget (`lexical_scan_budget`): a step over one of them alone ranks
    /// every match rather than the first the index returns.
    pub narrow: Vec<String>,
    /// Terms some products hold.
    pub present: Vec<String>,
    /// Every term with a lexeme.
    pub terms: usize,
}

impl Relaxation {
    /// Reads the terms' product counts from the catalog statistics;
    /// `budget` is the arm's scan budget (`lexical_scan_budget`).
    ///
    /// A term that no product `elig`'s price range admits holds (its
    /// holders' price bounds, migration 0022), or none of whose holders
    /// lies in `elig`'s domain (its holders' domains, migration 0025),
    /// stands in every step as a [`NO_ELIGIBLE_HOLDER`] lexeme, which no
    /// document holds: the steps, their order and their modes are those of
    /// the catalog's counts, and each step matches the same eligible
    /// products, but the index no longer reads the term's holders only to
    /// find each one too dear or in another domain, and a step that needs
    /// more terms than the eligible products hold ends at the stand-ins'
    /// empty entries.
    pub async fn of<C: GenericClient>(
        db: &C,
        positive: &[String],
        budget: i64,
        elig: &Eligibility,
    ) -> Result<Relaxation, tokio_postgres::Error> {
        let rows = db
            .query_typed(
                LEXICAL_TERMS_SQL,
                &[(&positive, Type::TEXT_ARRAY), (&elig.domain, Type::TEXT)],
            )
            .await?;
        struct Term {
            query: String,
            products: i64,
            informative: bool,
            code: bool,
            held_eligible: bool,
        }
        let mut terms: Vec<Term> = Vec::new();
        for r in rows {
            let word: String = r.get(0);
            let query: String = r.get(1);
            let (products, catalog): (i64, i64) = (r.get(2), r.get(3));
            let held = (r.get::<_, Option<i64>>(4), r.get::<_, Option<i64>>(5));
            let in_domain: bool = r.get(6);
            if !query.is_empty() && !terms.iter().any(|t| t.query == query) {
                terms.push(Term {
                    query,
                    products,
                    informative: products > 0 && products * 2 <= catalog,
                    code: crate::search::understand::identifier_stem(&word).is_some(),
                    held_eligible: elig.admits_some_price(held) && in_domain,
                });
            }
        }
        let pick = |keep: &dyn Fn(&Term) -> bool| -> Vec<String> {
            // A term's place in `terms` numbers its stand-in.
            terms
                .iter()
                .enumerate()
                .filter(|(_, t)| keep(t))
                .map(|(place, t)| match t.held_eligible {
                    true => t.query.clone(),
                    false => format!("'{NO_ELIGIBLE_HOLDER} {place}'"),
                })
                .collect()
        };
        Ok(Relaxation {
            informative: pick(&|t| t.informative),
            codes: pick(&|t| t.informative && t.code),
            narrow: pick(&|t| t.informative && t.products < budget),
            present: pick(&|t| t.products > 0),
            terms: terms.len(),
        })
    }

    /// The steps in order: each step's mode and tsquery.
    ///
    /// Without a product-line code: at least k of the informative terms
    /// ([`relaxed_levels`]), then any term the catalog holds.
    ///
    /// A query naming a product-line code the catalog holds is after that
    /// product or its line: the first steps keep the code (any of them,
    /// when it names several) and relax only the other informative terms,
    /// down to the code alone; then, if still short, at least k of the
    /// other terms or the code, two of them at least; then any one of them
    /// (or the code) only among the [`narrow`](Self::narrow) terms. A
    /// word held by more products than the arm ranks is, beside a code,
    /// a variant ("Plus", "Pro": a quarter of a catalog), not what the
    /// query names, and its step would rank only the first products the
    /// index returns: when the code's products are not eligible (a price
    /// filter), the arm returns none rather than thousands that merely say
    /// "Plus". A brand's name, held by a few hundred, still serves.
    pub fn steps(&self) -> Vec<(LexicalMode, String)> {
        let all_first = self.informative.len() < self.terms;
        if !self.codes.is_empty() {
            let code = at_least(&self.codes, 1);
            let others: Vec<String> = self
                .informative
                .iter()
                .filter(|t| !self.codes.contains(t))
                .cloned()
                .collect();
            let of = others.len();
            // With two codes, "any code and every other term" is not the
            // strict query either.
            let all_first = all_first || self.codes.len() > 1;
            let mut steps: Vec<(LexicalMode, String)> = relaxed_levels(of, all_first)
                .into_iter()
                .map(|k| {
                    let mode = LexicalMode::CodeBackoff { required: k, of };
                    (mode, format!("({code} & {})", at_least(&others, k)))
                })
                .collect();
            steps.push((LexicalMode::CodeBackoff { required: 0, of }, code.clone()));
            steps.extend(
                relaxed_levels(of, true)
                    .into_iter()
                    .filter(|k| *k >= 2)
                    .map(|k| {
                        let mode = LexicalMode::Backoff { required: k, of };
                        (mode, format!("({code} | {})", at_least(&others, k)))
                    }),
            );
            let narrow: Vec<String> = others
                .iter()
                .filter(|t| self.narrow.contains(t))
                .cloned()
                .collect();
            if !narrow.is_empty() {
                let mode = LexicalMode::Backoff {
                    required: 1,
                    of: narrow.len(),
                };
                steps.push((mode, format!("({code} | {})", at_least(&narrow, 1))));
            }
            return steps;
        }
        let over = |terms: &[String], k: usize| {
            let mode = LexicalMode::Backoff {
                required: k,
                of: terms.len(),
            };
            (mode, at_least(terms, k))
        };
        let mut steps: Vec<(LexicalMode, String)> =
            relaxed_levels(self.informative.len(), all_first)
                .into_iter()
                .map(|k| over(&self.informative, k))
                .collect();
        if self.present.len() > self.informative.len() {
            steps.push(over(&self.present, 1));
        }
        steps
    }

    /// The tsquery of the step a lexical arm's `mode` names.
    pub fn tsquery(&self, mode: LexicalMode) -> Option<String> {
        self.steps()
            .into_iter()
            .find(|(step, _)| *step == mode)
            .map(|(_, tsquery)| tsquery)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relaxed_steps_go_from_all_terms_but_one_to_any_one() {
        assert_eq!(relaxed_levels(0, true), Vec::<usize>::new());
        assert_eq!(relaxed_levels(1, false), Vec::<usize>::new());
        assert_eq!(relaxed_levels(1, true), vec![1]);
        assert_eq!(relaxed_levels(2, false), vec![1]);
        assert_eq!(relaxed_levels(3, false), vec![2, 1]);
        assert_eq!(relaxed_levels(3, true), vec![3, 2, 1]);
        assert_eq!(relaxed_levels(5, false), vec![4, 3, 1]);
        // C(12, 6) = 924 combinations is too many for one tsquery.
        assert_eq!(relaxed_levels(12, false), vec![11, 1]);
        assert_eq!(combinations(5, 2), 10);
        assert_eq!(combinations(12, 11), 12);
        let t = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            at_least(&t(&["'a'", "'b'", "'c'"]), 2),
            "((('a') & (('b') | ('c'))) | (('b') & ('c')))"
        );
        assert_eq!(at_least(&t(&["'a'", "'b'"]), 1), "(('a') | ('b'))");
        assert_eq!(at_least(&t(&["'a'", "'b'"]), 2), "(('a') & ('b'))");
        assert_eq!(at_least(&t(&["'a'"]), 2), "");
        assert_eq!(at_least(&t(&["'a'"]), 0), "");
    }

    #[test]
    fn a_code_stays_in_the_back_off_and_a_lone_variant_word_never_serves() {
        let t = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        // Every informative term but 'p' ("plus") held by few products.
        let relax = |informative: &[&str], codes: &[&str], present: &[&str], terms| Relaxation {
            informative: t(informative),
            codes: t(codes),
            narrow: t(informative).into_iter().filter(|w| w != "'p'").collect(),
            present: t(present),
            terms,
        };
        let modes = |r: &Relaxation| -> Vec<String> {
            r.steps()
                .into_iter()
                .map(|(m, _)| ArmMode::Lexical(m).to_string())
                .collect()
        };
        // "SMSB-1504 Plus": the code alone, never "plus" alone.
        let plus = relax(&["'s'", "'p'"], &["'s'"], &["'s'", "'p'"], 2);
        assert_eq!(modes(&plus), ["backoff_code_only"]);
        assert_eq!(plus.steps()[0].1, "(('s'))");
        // "Pixelon PXLT-1075": the brand's few products after the code's.
        let brand = relax(&["'b'", "'s'"], &["'s'"], &["'b'", "'s'"], 2);
        assert_eq!(modes(&brand), ["backoff_code_only", "backoff_any_term"]);
        assert_eq!(brand.steps()[1].1, "((('s')) | (('b')))");
        // Without the code's statistics it is any query: down to any term.
        let plain = relax(&["'s'", "'p'"], &[], &["'s'", "'p'"], 2);
        assert_eq!(modes(&plain), ["backoff_any_term"]);
        // A code and three words: the code with fewer of them, then the
        // code alone, then the words (or the code), two at least.
        let three = relax(
            &["'c'", "'x'", "'y'", "'z'"],
            &["'c'"],
            &["'c'", "'x'", "'y'", "'z'"],
            4,
        );
        assert_eq!(
            modes(&three),
            [
                "backoff_code_and_2_of_3_terms",
                "backoff_code_and_1_of_3_terms",
                "backoff_code_only",
                "backoff_3_of_3_terms",
                "backoff_2_of_3_terms",
                "backoff_any_term"
            ]
        );
        let steps = three.steps();
        assert_eq!(
            steps[0].1,
            format!("((('c')) & {})", at_least(&t(&["'x'", "'y'", "'z'"]), 2))
        );
        assert_eq!(steps[3].1, "((('c')) | (('x') & ('y') & ('z')))");
        // Each mode names its own step.
        for (mode, tsquery) in &steps {
            assert_eq!(three.tsquery(*mode).as_ref(), Some(tsquery));
        }
        // Two codes: either of them stands for the code.
        let two = relax(
            &["'c'", "'d'", "'x'"],
            &["'c'", "'d'"],
            &["'c'", "'d'", "'x'"],
            3,
        );
        assert_eq!(
            modes(&two),
            [
                "backoff_code_and_1_of_1_terms",
                "backoff_code_only",
                "backoff_any_term"
            ]
        );
        assert_eq!(two.steps()[1].1, "(('c') | ('d'))");
    }

    /// Every subset of the terms, as the set of terms a document holds:
    /// the factored tsquery must hold exactly when the subset has `k` or
    /// more of them. Evaluated here by a small parser of its `&`, `|` and
    /// parentheses (the terms are single letters, spaces removed first).
    #[test]
    fn at_least_holds_exactly_for_documents_with_k_of_the_terms() {
        type Held<'a> = &'a dyn Fn(u8) -> bool;
        // or := and ('|' and)*; and := atom ('&' atom)*; atom := '(' or ')' | 'x'
        fn or(q: &[u8], i: &mut usize, held: Held) -> bool {
            let mut v = and(q, i, held);
            while q.get(*i) == Some(&b'|') {
                *i += 1;
                v |= and(q, i, held);
            }
            v
        }
        fn and(q: &[u8], i: &mut usize, held: Held) -> bool {
            let mut v = atom(q, i, held);
            while q.get(*i) == Some(&b'&') {
                *i += 1;
                v &= atom(q, i, held);
            }
            v
        }
        fn atom(q: &[u8], i: &mut usize, held: Held) -> bool {
            if q[*i] == b'(' {
                *i += 1;
                let v = or(q, i, held);
                assert_eq!(q[*i], b')');
                *i += 1;
                v
            } else {
                // 'x'
                let v = held(q[*i + 1]);
                *i += 3;
                v
            }
        }
        let letters = b"abcdefg";
        for n in 1..=letters.len() {
            let terms: Vec<String> = letters[..n]
                .iter()
                .map(|c| format!("'{}'", *c as char))
                .collect();
            for k in 1..=n {
                let q = at_least(&terms, k);
                let bytes: Vec<u8> = q.bytes().filter(|b| *b != b' ').collect();
                for subset in 0u32..(1 << n) {
                    let held = |c: u8| subset & (1 << (c - b'a')) != 0;
                    let mut i = 0;
                    let holds = or(&bytes, &mut i, &held);
                    assert_eq!(i, bytes.len(), "{q}: parsed to the end");
                    assert_eq!(
                        holds,
                        subset.count_ones() as usize >= k,
                        "at least {k} of {n}: {q} for {subset:b}"
                    );
                }
            }
        }
    }

    #[test]
    fn the_price_on_rows_differs_from_the_predicate_in_its_two_price_conditions_alone() {
        for (sql, derived) in [
            (LEXICAL_SQL, &LEXICAL_PRICE_ON_ROWS[0]),
            (LEXICAL_RELAXED_SQL, &LEXICAL_PRICE_ON_ROWS[1]),
        ] {
            // Each price condition once, in the predicate, and nothing else.
            assert_eq!(sql.matches("pp.price_cents").count(), 2);
            assert_eq!(derived.matches("pp.price_cents + 0 >= $6").count(), 1);
            assert_eq!(derived.matches("pp.price_cents + 0 <= $7").count(), 1);
            let back = derived.replace("pp.price_cents + 0", "pp.price_cents");
            assert_eq!(back, sql);
        }
    }

    #[test]
    fn the_price_is_checked_on_rows_only_where_its_bitmap_would_cost_more() {
        let at = |share, rows| PriceShare { share, rows };
        let budget = RetrievalProfile::default().lexical_scan_budget;
        assert_eq!(budget, 2_000);
        // A million products: the cheaper half yes, a 0.5% band no.
        assert!(at(0.5, 1e6).checks_rows(budget));
        assert!(!at(0.005, 1e6).checks_rows(budget));
        // The break-even share: share^2 * rows = factor * budget.
        let even = (PRICE_ENTRIES_PER_ROW_CHECK * budget as f64 / 1e6).sqrt();
        assert!(at(even * 1.01, 1e6).checks_rows(budget));
        assert!(!at(even * 0.99, 1e6).checks_rows(budget));
        // A small catalog's bitmap is cheap at any share.
        assert!(!at(1.0, 5_000.0).checks_rows(budget));
        // An empty range, or no statistics (no rows), never.
        assert!(!at(0.0, 1e6).checks_rows(budget));
        assert!(!at(0.5, 0.0).checks_rows(budget));
    }

    #[test]
    fn a_price_ranges_share_counts_its_common_prices_and_its_part_of_the_histogram() {
        let stats = PriceStats {
            null_frac: 0.1,
            common: vec![(1_000, 0.2), (5_000, 0.1)],
            bounds: (0..=10).map(|i| i * 1_000).collect(),
            rows: 1e6,
        };
        let share = |min, max| {
            stats
                .share(&Eligibility::new(&Filters {
                    min_price_cents: min,
                    max_price_cents: max,
                    ..Filters::default()
                }))
                .share
        };
        let near = |a: f64, b: f64| (a - b).abs() < 1e-9;
        // Everything priced: the common prices and all the rest.
        assert!(near(share(Some(0), None), 0.9));
        // At most 1,000: that common price, two bounds of eleven.
        assert!(near(share(None, Some(1_000)), 0.2 + 0.6 * 2.0 / 11.0));
        // Exactly 5,000: that common price, one bound.
        assert!(near(share(Some(5_000), Some(5_000)), 0.1 + 0.6 / 11.0));
        // Between two bounds and no common price: nothing.
        assert!(near(share(Some(1_001), Some(1_999)), 0.0));
        assert_eq!(
            stats.share(&Eligibility::new(&Filters::default())).rows,
            1e6
        );
        // No histogram (every price a common one).
        let common_only = PriceStats {
            bounds: Vec::new(),
            ..stats.clone()
        };
        let elig = Eligibility::new(&Filters {
            max_price_cents: Some(1_000),
            ..Filters::default()
        });
        assert!(near(common_only.share(&elig).share, 0.2));
        assert_eq!(PriceShare::least_rows(2_000), 20_000);
    }

    #[test]
    fn only_a_price_range_wholly_outside_the_filter_admits_nothing() {
        let elig = |min, max| {
            Eligibility::new(&Filters {
                min_price_cents: min,
                max_price_cents: max,
                ..Filters::default()
            })
        };
        let band = elig(Some(1_000), Some(5_000));
        assert!(band.admits_some_price((Some(4_000), Some(9_000))));
        assert!(band.admits_some_price((Some(5_000), Some(5_000))));
        assert!(band.admits_some_price((Some(10), Some(1_000))));
        assert!(!band.admits_some_price((Some(5_001), Some(9_000))));
        assert!(!band.admits_some_price((Some(10), Some(999))));
        assert!(!band.admits_some_price((Some(5_001), None)));
        assert!(!band.admits_some_price((None, Some(999))));
        // Unknown bounds admit.
        assert!(band.admits_some_price((None, None)));
        // No price filter admits any range.
        assert!(elig(None, None).admits_some_price((Some(i64::MAX), Some(i64::MAX))));
    }

    #[test]
    fn negated_terms_are_kept_apart() {
        let t = lexical_terms("wireless headphones -earbuds \"noise cancelling\" or cheap");
        assert_eq!(
            t.positive,
            vec!["wireless", "headphones", "noise", "cancelling", "cheap"]
        );
        assert_eq!(t.negated, vec!["-earbuds"]);
    }
}
