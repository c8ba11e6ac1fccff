//! Reading the bounds a query states from its words (the comparison, the
//! number, the unit or currency), as the module above describes.

use super::*;

const CURRENCY_WORDS: &[&str] = &["dollar", "dollars", "usd", "bucks"];
const STAR_WORDS: &[&str] = &["star", "stars"];

/// Words before a number that make it an upper bound ("less than" is
/// matched as "than" after "less": see [`comparison_before`]).
const AT_MOST_BEFORE: &[&str] = &[
    "under", "below", "max", "maximum", "beneath", "<", "<=", "≤",
];
const AT_LEAST_BEFORE: &[&str] = &[">", ">=", "≥", "over", "above", "min", "minimum"];
/// Words before "than" (or after "at", "up", "no more"): "less than",
/// "lighter than", "at most", "up to".
const AT_MOST_THAN: &[&str] = &["less", "lighter", "cheaper", "fewer", "smaller", "shorter"];
const AT_LEAST_THAN: &[&str] = &["more", "heavier", "longer", "bigger", "larger", "greater"];

const NUMBER_WORDS: &[(&str, f64)] = &[
    ("zero", 0.0),
    ("one", 1.0),
    ("two", 2.0),
    ("three", 3.0),
    ("four", 4.0),
    ("five", 5.0),
    ("six", 6.0),
    ("seven", 7.0),
    ("eight", 8.0),
    ("nine", 9.0),
    ("ten", 10.0),
    ("eleven", 11.0),
    ("twelve", 12.0),
    ("thirteen", 13.0),
    ("fourteen", 14.0),
    ("fifteen", 15.0),
    ("sixteen", 16.0),
    ("seventeen", 17.0),
    ("eighteen", 18.0),
    ("nineteen", 19.0),
    ("twenty", 20.0),
    ("thirty", 30.0),
    ("forty", 40.0),
    ("fifty", 50.0),
    ("sixty", 60.0),
    ("seventy", 70.0),
    ("eighty", 80.0),
    ("ninety", 90.0),
    ("hundred", 100.0),
];

/// A token of the query: its lower-case text without the punctuation
/// around it, and the token as written.
struct Token<'a> {
    word: String,
    written: &'a str,
}

fn tokens(query: &str) -> Vec<Token<'_>> {
    let words: Vec<Token<'_>> = query
        .split_whitespace()
        .filter_map(|t| {
            let word = t
                .trim_matches(|c: char| {
                    matches!(c, ',' | ';' | ':' | '!' | '?' | '(' | ')' | '"' | '\'')
                })
                .trim_end_matches('.')
                .to_lowercase();
            let written = t.trim_end_matches([',', ';', ':', '!', '?', '.']);
            (!word.is_empty()).then_some(Token { word, written })
        })
        .collect();
    // "two hundred", "5 thousand": one number, written as both words.
    let mut out: Vec<Token<'_>> = Vec::with_capacity(words.len());
    let mut it = words.into_iter().peekable();
    while let Some(t) = it.next() {
        let times = match it.peek().map(|n| n.word.as_str()) {
            Some("hundred") => 100.0,
            Some("thousand") => 1000.0,
            _ => 0.0,
        };
        let (dollar, bare) = match t.word.strip_prefix('$') {
            Some(rest) => ("$", rest),
            None => ("", t.word.as_str()),
        };
        let plain = digits(bare).or_else(|| number_word(bare));
        match plain.filter(|_| times > 0.0 && bare != "hundred") {
            Some(v) => {
                let next = it.next().expect("peeked");
                let from = t.written.as_ptr() as usize - query.as_ptr() as usize;
                let to =
                    next.written.as_ptr() as usize - query.as_ptr() as usize + next.written.len();
                out.push(Token {
                    word: format!("{dollar}{}", v * times),
                    written: &query[from..to],
                });
            }
            None => out.push(t),
        }
    }
    out
}

/// A number as written in digits (`120`, `1,299.99`, `4.5`).
fn digits(s: &str) -> Option<f64> {
    let plain: String = s.chars().filter(|&c| c != ',').collect();
    let ok = !plain.is_empty()
        && plain.chars().all(|c| c.is_ascii_digit() || c == '.')
        && plain.chars().next().is_some_and(|c| c.is_ascii_digit())
        && plain.len() <= 12;
    ok.then(|| plain.parse().ok()).flatten()
}

/// A number written in words: "fifty", "twenty-five"; "hundred" is 100 ("a
/// hundred"); "two hundred" is read as one number by [`tokens`].
fn number_word(s: &str) -> Option<f64> {
    let word = |w: &str| NUMBER_WORDS.iter().find(|(n, _)| *n == w).map(|(_, v)| *v);
    match s.split_once('-') {
        Some((tens, ones)) => {
            let (t, o) = (word(tens)?, word(ones)?);
            ((20.0..100.0).contains(&t) && t % 10.0 == 0.0 && (1.0..10.0).contains(&o))
                .then_some(t + o)
        }
        None => word(s),
    }
}

/// A number token and, when written on it, its unit and a trailing `+`:
/// `$120` (currency), `200g`, `4.5+`, `8-hour`, `fifty`.
struct Number {
    value: f64,
    currency: bool,
    unit: Option<String>,
    plus: bool,
}

fn number(word: &str) -> Option<Number> {
    let (currency, rest) = match word.strip_prefix('$') {
        Some(r) => (true, r),
        None => (false, word),
    };
    let (rest, plus) = match rest.strip_suffix('+') {
        Some(r) => (r, true),
        None => (rest, false),
    };
    if let Some(value) = digits(rest).or_else(|| number_word(rest)) {
        return Some(Number {
            value,
            currency,
            unit: None,
            plus,
        });
    }
    // Digits with a unit on them: "200g", "8-hour", "30h".
    let split = rest.find(|c: char| !(c.is_ascii_digit() || c == '.' || c == ','))?;
    let (num, unit) = rest.split_at(split);
    let value = digits(num)?;
    let unit = unit.trim_start_matches('-');
    (!unit.is_empty()).then(|| Number {
        value,
        currency,
        unit: Some(unit.to_string()),
        plus,
    })
}

/// The unit a word names ("grams", "kg", "hours"), if any.
fn unit_of(word: &str) -> Option<&'static Unit> {
    UNITS.iter().find(|u| u.words.contains(&word))
}

/// What a unit word after a number limits: the price ("dollars"), the
/// rating ("stars") or an attribute ("grams").
fn limited_by(word: &str) -> Option<Limited> {
    if CURRENCY_WORDS.contains(&word) {
        Some(Limited::Price)
    } else if STAR_WORDS.contains(&word) {
        Some(Limited::Rating)
    } else {
        unit_of(word).map(|unit| Limited::Attribute {
            quantity: unit.quantity,
            unit: unit.words[0].to_string(),
        })
    }
}

impl Comparison {
    fn flipped(self) -> Self {
        match self {
            Comparison::AtMost => Comparison::AtLeast,
            Comparison::AtLeast => Comparison::AtMost,
        }
    }
}

/// The comparison the words just before the number at `i` make, skipping
/// one article or a detached `$` ("at least a five-year", "under $ 50"),
/// with the position of its first word: "under", "less than", "at most",
/// "at least"; "up to" and "within" for a price only (of a battery, "up
/// to 40 hours" is what it lasts at best, not a limit); "Max" or "Min"
/// written with a capital is a name ("AirPods Max 20 hours"), not a
/// comparison. After "no", "not" or "nothing" the comparison turns round:
/// "no more than $50", "nothing over $50" are at most $50.
fn comparison_before(tokens: &[Token<'_>], i: usize, price: bool) -> Option<(Comparison, usize)> {
    let mut j = i;
    if j > 0 && matches!(tokens[j - 1].word.as_str(), "a" | "an" | "$") {
        j -= 1;
    }
    let last = tokens.get(j.checked_sub(1)?)?;
    let prev = j.checked_sub(2).map(|k| tokens[k].word.as_str());
    let named = last.written.starts_with(char::is_uppercase);
    let (comparison, start) = match (prev, last.word.as_str()) {
        (_, "max" | "maximum" | "min" | "minimum") if named => return None,
        (_, x) if AT_MOST_BEFORE.contains(&x) => (Comparison::AtMost, j - 1),
        (_, "within") if price => (Comparison::AtMost, j - 1),
        (_, x) if AT_LEAST_BEFORE.contains(&x) => (Comparison::AtLeast, j - 1),
        (Some(x), "than") if AT_MOST_THAN.contains(&x) => (Comparison::AtMost, j - 2),
        (Some(x), "than") if AT_LEAST_THAN.contains(&x) => (Comparison::AtLeast, j - 2),
        (Some("at"), "most") => (Comparison::AtMost, j - 2),
        (Some("up"), "to") if price => (Comparison::AtMost, j - 2),
        (Some("at"), "least") => (Comparison::AtLeast, j - 2),
        _ => return None,
    };
    match start.checked_sub(1).map(|k| tokens[k].word.as_str()) {
        Some("no" | "not" | "nothing") => Some((comparison.flipped(), start - 1)),
        _ => Some((comparison, start)),
    }
}

/// The comparison the words after position `i` make: "or less", "or
/// under", "or more", "or higher", "or better", "or above", "and up", "&
/// up".
fn comparison_after(tokens: &[Token<'_>], i: usize) -> Option<Comparison> {
    let (or, what) = (tokens.get(i)?, tokens.get(i + 1)?);
    match (or.word.as_str(), what.word.as_str()) {
        ("or", "less" | "under" | "lower" | "below" | "fewer" | "cheaper" | "lighter") => {
            Some(Comparison::AtMost)
        }
        ("or", "more" | "higher" | "better" | "above" | "over" | "greater")
        | ("and" | "&", "up") => Some(Comparison::AtLeast),
        _ => None,
    }
}

/// A price written as a number: `$120`, `$1,299.99`, `$1k`; `None` for a
/// number with another unit on it.
fn dollars(word: &str) -> Option<f64> {
    let n = number(word)?;
    match n.unit.as_deref() {
        None => Some(n.value),
        Some("k") => Some(n.value * 1000.0),
        Some(_) => None,
    }
}

/// A price range starting at `i`: "$50-$100", "$50-100", "$50 to $100",
/// "between $50 and $100", "between 50 and 100 dollars": its two ends in
/// dollars and the position after it.
fn price_range(tokens: &[Token<'_>], i: usize) -> Option<(f64, f64, usize)> {
    let word = |k: usize| tokens.get(k).map(|t| t.word.as_str());
    let currency_after = |k: usize| word(k).is_some_and(|w| CURRENCY_WORDS.contains(&w));
    let first = word(i)?;
    let (lo, hi, end) = if first == "between" {
        let (a, and, b) = (word(i + 1)?, word(i + 2)?, word(i + 3)?);
        if !matches!(and, "and" | "&") {
            return None;
        }
        let marked = a.starts_with('$') || b.starts_with('$') || currency_after(i + 4);
        if !marked {
            return None;
        }
        // `dollars` reads a number with or without its `$`.
        let end = i + 4 + usize::from(currency_after(i + 4));
        (dollars(a)?, dollars(b)?, end)
    } else {
        let rest = first.strip_prefix('$')?;
        if let Some((a, b)) = rest.split_once('-') {
            (dollars(a)?, dollars(b)?, i + 1)
        } else if word(i + 1) == Some("to") {
            (dollars(rest)?, dollars(word(i + 2)?)?, i + 3)
        } else {
            return None;
        }
    };
    (lo <= hi).then_some((lo, hi, end))
}

/// The most bounds read from one query: a query is a few sentences, and
/// each bound is checked against every pool member.
pub const MAX_BOUNDS: usize = 8;

/// The bounds `query` states, in query order, each once, at most
/// [`MAX_BOUNDS`] (see the module documentation).
pub fn stated(query: &str) -> Vec<Bound> {
    let tokens = tokens(query);
    let text = |from: usize, to: usize| {
        tokens[from..to]
            .iter()
            .map(|t| t.written)
            .collect::<Vec<_>>()
            .join(" ")
    };
    let mut out: Vec<Bound> = Vec::new();
    let mut push = |b: Bound| {
        let same =
            |o: &Bound| o.comparison == b.comparison && o.value == b.value && o.limits == b.limits;
        if out.len() < MAX_BOUNDS && !out.iter().any(same) {
            out.push(b);
        }
    };
    let mut i = 0;
    while i < tokens.len() {
        if let Some((lo, hi, end)) = price_range(&tokens, i) {
            for (comparison, value) in [(Comparison::AtLeast, lo), (Comparison::AtMost, hi)] {
                push(Bound {
                    text: text(i, end),
                    comparison,
                    value: (value * 100.0).round(),
                    limits: Limited::Price,
                    set_aside: false,
                });
            }
            i = end;
            continue;
        }
        let Some(n) = number(&tokens[i].word) else {
            i += 1;
            continue;
        };
        let detached = i > 0 && tokens[i - 1].word == "$";
        let mut end = i + 1;
        let (limits, value) = if n.currency || detached {
            let value = dollars(&tokens[i].word);
            (value.map(|_| Limited::Price), value.unwrap_or(n.value))
        } else {
            let found = match &n.unit {
                Some(u) => limited_by(u),
                None => {
                    let next = tokens.get(i + 1).and_then(|t| limited_by(&t.word));
                    if next.is_some() {
                        end = i + 2;
                    }
                    next
                }
            };
            (found, n.value)
        };
        // A bare number after "rated" is a rating ("rated 4.5", "rated
        // 4.5+"); "rated 4k" is not.
        let rated = i > 0 && tokens[i - 1].word == "rated" && n.unit.is_none();
        let limits = limits.or_else(|| rated.then_some(Limited::Rating));
        let price = limits == Some(Limited::Price);
        let before = comparison_before(&tokens, i, price);
        let after = comparison_after(&tokens, end);
        let comparison = before
            .map(|(c, _)| c)
            .or_else(|| n.plus.then_some(Comparison::AtLeast))
            .or(after)
            .or_else(|| rated.then_some(Comparison::AtLeast));
        if let (Some(limits), Some(comparison)) = (limits, comparison) {
            let value = match limits {
                Limited::Price => (value * 100.0).round(),
                _ => value,
            };
            let start = before.map_or(i.saturating_sub(usize::from(rated || detached)), |(_, s)| s);
            let stop = match (before, n.plus, after) {
                (None, false, Some(_)) => end + 2,
                _ => end,
            };
            push(Bound {
                text: text(start, stop),
                comparison,
                value,
                limits,
                set_aside: false,
            });
        }
        i = end;
    }
    out
}

/// The query's words that may name an attribute ("lightweight", "battery"):
/// letters only, three or more, lower case.
pub fn words(query: &str) -> Vec<String> {
    query
        .split(|c: char| !c.is_alphabetic())
        .filter(|w| w.chars().count() >= 3)
        .map(str::to_lowercase)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prices_are_read_with_a_currency_and_a_comparison() {
        let b = one("foldable headphones under $120 rated well");
        assert_eq!(
            (b.comparison, b.value, &b.limits),
            (Comparison::AtMost, 12000.0, &Limited::Price)
        );
        assert_eq!(b.text, "under $120");
        let b = one("cheap headphones for my teenager, nothing fancy, under fifty dollars");
        assert_eq!((b.value, b.text.as_str()), (5000.0, "under fifty dollars"));
        let b = one("anything under $400?");
        assert_eq!((b.value, b.text.as_str()), (40000.0, "under $400"));
        let b = one("a desk for less than 1,299.99 usd");
        assert_eq!((b.comparison, b.value), (Comparison::AtMost, 129999.0));
        assert_eq!(b.text, "less than 1,299.99 usd");
        let b = one("a chair under two hundred dollars");
        assert_eq!(
            (b.value, b.text.as_str()),
            (20000.0, "under two hundred dollars")
        );
        assert_eq!(one("under 5 thousand dollars").value, 500000.0);
        let b = one("a sofa under $2 thousand");
        assert_eq!((b.value, b.text.as_str()), (200000.0, "under $2 thousand"));
        assert_eq!(one("under a hundred dollars").value, 10000.0);
        let b = one("at least $50 please");
        assert_eq!(b.comparison, Comparison::AtLeast);
        let b = one("chairs $300 or less");
        assert_eq!((b.comparison, b.value), (Comparison::AtMost, 30000.0));
    }

    #[test]
    fn units_and_ratings_are_read() {
        let b = one("lightweight headphones under 220 grams that won't squeeze");
        assert_eq!(
            b.limits,
            Limited::Attribute {
                quantity: Quantity::Mass,
                unit: "g".into()
            }
        );
        assert_eq!((b.comparison, b.value), (Comparison::AtMost, 220.0));
        assert_eq!(one("a race-day shoe, under 215 g").value, 215.0);
        assert_eq!(one("a shoe under 200g").value, 200.0);
        let b = one("at least twenty-five hours of battery");
        assert_eq!((b.comparison, b.value), (Comparison::AtLeast, 25.0));
        let b = one("headphones rated 4.5 stars or higher");
        assert_eq!(
            (b.comparison, b.value, &b.limits),
            (Comparison::AtLeast, 4.5, &Limited::Rating)
        );
        assert_eq!(one("an office chair, rated 4.5+").limits, Limited::Rating);
        assert_eq!(
            one("multipoint rated 4.5 or better").comparison,
            Comparison::AtLeast
        );
    }

    #[test]
    fn a_number_without_a_comparison_or_a_unit_is_no_bound() {
        for q in [
            "office chair for a 300-pound person",
            "full 8-hour workdays",
            "sleeping under the stars",
            "headphones I can rinse under the tap, IP67",
            "racing shoe for 5K races",
            "3D or 4D armrests",
            "under 200",
            "wh-1000xm5",
            "at least a five-year warranty",
        ] {
            assert!(stated(q).is_empty(), "{q}: {:?}", stated(q));
        }
    }

    #[test]
    fn comparisons_turn_round_after_no_and_some_are_for_prices_only() {
        let b = one("no more than $50");
        assert_eq!(
            (b.comparison, b.text.as_str()),
            (Comparison::AtMost, "no more than $50")
        );
        assert_eq!(one("nothing over $50").comparison, Comparison::AtMost);
        assert_eq!(one("no heavier than 250 g").comparison, Comparison::AtMost);
        assert_eq!(one("not under 4 stars").comparison, Comparison::AtLeast);
        assert_eq!(one("up to $80").comparison, Comparison::AtMost);
        assert_eq!(one("within $80").comparison, Comparison::AtMost);
        for q in [
            "up to 40 hours battery",
            "ships within 2 days",
            "AirPods Max 20 hours",
            "top rated 4k tv",
            "kids 5 and up",
            "usb-c charger 65w",
            "100% cotton",
            "over-ear headphones",
        ] {
            assert!(stated(q).is_empty(), "{q}: {:?}", stated(q));
        }
        assert_eq!(one("max 200g").value, 200.0);
        assert_eq!(one("4 stars & up").comparison, Comparison::AtLeast);
    }

    #[test]
    fn prices_in_other_spellings_and_ranges() {
        assert_eq!(one("less than $ 50").value, 5000.0);
        assert_eq!(one("a laptop under $1k").value, 100000.0);
        assert_eq!(one("2-in-1 laptop under $1,000").value, 100000.0);
        assert_eq!(one("size 10 shoes under $100").value, 10000.0);
        for q in [
            "$50-$100",
            "$50-100",
            "$50 to $100",
            "between $50 and $100",
            "between 50 and 100 dollars",
        ] {
            let b = stated(q);
            assert_eq!(b.len(), 2, "{q}: {b:?}");
            assert_eq!(
                (b[0].comparison, b[0].value),
                (Comparison::AtLeast, 5000.0),
                "{q}"
            );
            assert_eq!(
                (b[1].comparison, b[1].value),
                (Comparison::AtMost, 10000.0),
                "{q}"
            );
        }
        assert!(stated("between 50 and 100").is_empty());
        // Each once, and no more than MAX_BOUNDS from a long query.
        assert_eq!(stated("under $50 under $50").len(), 1);
        let long: String = (0..250).map(|i| format!("< {i}g ")).collect();
        assert_eq!(stated(&long).len(), MAX_BOUNDS);
    }
}
