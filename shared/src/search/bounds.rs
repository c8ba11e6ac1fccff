//! Stated bounds: the numeric limits a query writes in words ("under $50",
//! "under 220 grams", "rated 4.5 stars or higher"), read once and used by
//! the rerank stage to put the pool members that keep them first.
//!
//! A bound is a comparison (at most, at least), a number and what it
//! limits:
//!
//! * **price**, when the number is written with a currency (`$120`, `fifty
//!   dollars`, `80 usd`): the product's `price_cents`;
//! * **rating**, for stars (`4 stars`) or a number after "rated" (`rated
//!   4.5+`, `rated 4.5 or better`): the product's rating;
//! * **an attribute**, for a unit of mass, length, time, power or capacity
//!   (`220 grams`, `1 kg`, `30 hours`, `8 mm`): every numeric attribute
//!   whose key ends in a unit of the same kind (`weight_g`, `battery_hours`,
//!   `drop_mm`), the bound converted into the key's unit.
//!
//! Only a number with both a comparison and a unit is a bound: "under 220
//! grams" and "220 grams or less" are, "a 300-pound person" and "8-hour
//! workdays" are not (nothing says which way they limit), nor is "under the
//! stars". The words before the number that say "at most" are under,
//! below, less than, lighter than, cheaper than, at most, up to, no more
//! than, max, maximum and within; "at least" is over, above, more than, at
//! least, min and minimum; after the number or its unit, "or less" and "or
//! under" say at most, "or more", "or higher", "or better", "or above" and
//! a `+` say at least.
//!
//! What the rerank stage does with them (`search::rerank_with`): a member
//! that breaks fewer of the bounds comes first, then one that keeps more of
//! them; within that, the reranker's order stands. A member without the
//! field a bound reads (no weight attribute) neither keeps nor breaks it,
//! and when no member has it the bound changes nothing. The bounds are soft:
//! a member that breaks one stays in the pool, behind the ones that do not;
//! a hard limit is a filter. Nothing here has a weight to choose.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Which way a bound limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Comparison {
    AtMost,
    AtLeast,
}

/// What a bound limits.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Limited {
    /// The price, in cents.
    Price,
    /// The average rating.
    Rating,
    /// Numeric attributes whose key ends in a unit of this quantity; the
    /// bound is in `unit`.
    Attribute { quantity: Quantity, unit: String },
}

/// A kind of unit: attribute keys that end in one of its units are
/// compared with a bound in another of them after conversion.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Quantity {
    Mass,
    Length,
    Time,
    Power,
    Capacity,
}

/// One bound the query states.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Bound {
    /// The words it was read from, as written.
    pub text: String,
    pub comparison: Comparison,
    pub value: f64,
    #[serde(flatten)]
    pub limits: Limited,
}

/// Units: how each is written, its quantity, how many of the quantity's
/// base unit it holds, and the key suffixes that name it
/// (`weight_g`, `battery_hours`).
struct Unit {
    words: &'static [&'static str],
    quantity: Quantity,
    base: f64,
    suffixes: &'static [&'static str],
}

const UNITS: &[Unit] = &[
    Unit {
        words: &["g", "gram", "grams", "gr"],
        quantity: Quantity::Mass,
        base: 1.0,
        suffixes: &["g", "gram", "grams"],
    },
    Unit {
        words: &["kg", "kgs", "kilo", "kilos", "kilogram", "kilograms"],
        quantity: Quantity::Mass,
        base: 1000.0,
        suffixes: &["kg", "kilograms"],
    },
    Unit {
        words: &["lb", "lbs", "pound", "pounds"],
        quantity: Quantity::Mass,
        base: 453.592_37,
        suffixes: &["lb", "lbs", "pounds"],
    },
    Unit {
        words: &["oz", "ounce", "ounces"],
        quantity: Quantity::Mass,
        base: 28.349_523_125,
        suffixes: &["oz", "ounces"],
    },
    Unit {
        words: &[
            "mm",
            "millimeter",
            "millimeters",
            "millimetre",
            "millimetres",
        ],
        quantity: Quantity::Length,
        base: 1.0,
        suffixes: &["mm"],
    },
    Unit {
        words: &[
            "cm",
            "centimeter",
            "centimeters",
            "centimetre",
            "centimetres",
        ],
        quantity: Quantity::Length,
        base: 10.0,
        suffixes: &["cm"],
    },
    Unit {
        words: &["inch", "inches"],
        quantity: Quantity::Length,
        base: 25.4,
        suffixes: &["in", "inch", "inches"],
    },
    Unit {
        words: &["minute", "minutes", "mins"],
        quantity: Quantity::Time,
        base: 1.0 / 60.0,
        suffixes: &["min", "mins", "minutes"],
    },
    Unit {
        words: &["h", "hr", "hrs", "hour", "hours"],
        quantity: Quantity::Time,
        base: 1.0,
        suffixes: &["h", "hr", "hrs", "hours"],
    },
    Unit {
        words: &["day", "days"],
        quantity: Quantity::Time,
        base: 24.0,
        suffixes: &["days"],
    },
    Unit {
        words: &["w", "watt", "watts"],
        quantity: Quantity::Power,
        base: 1.0,
        suffixes: &["w", "watts"],
    },
    Unit {
        words: &["mah"],
        quantity: Quantity::Capacity,
        base: 1.0,
        suffixes: &["mah"],
    },
];

const CURRENCY_WORDS: &[&str] = &["dollar", "dollars", "usd", "bucks"];
const STAR_WORDS: &[&str] = &["star", "stars"];

/// Words before a number that make it an upper bound ("less than" is
/// matched as "than" after "less": see [`comparison_before`]).
const AT_MOST_BEFORE: &[&str] = &[
    "under", "below", "max", "maximum", "within", "beneath", "<", "<=", "≤",
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
    query
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
        .collect()
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

/// A number written in words: "fifty", "twenty-five", "two hundred" is
/// not read (one word at a time), "hundred" is 100 ("a hundred").
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
    if let Some(value) = digits(rest) {
        return Some(Number {
            value,
            currency,
            unit: None,
            plus,
        });
    }
    if let Some(value) = number_word(rest) {
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

/// The comparison the words just before the number at `i` make, skipping
/// one article ("at least a five-year"): "under", "less than", "at most",
/// "up to", "no more than"; with the position of its first word.
fn comparison_before(tokens: &[Token<'_>], i: usize) -> Option<(Comparison, usize)> {
    let mut j = i;
    if j > 0 && matches!(tokens[j - 1].word.as_str(), "a" | "an" | "$") {
        j -= 1;
    }
    let w = |k: usize| (k < j).then(|| tokens[j - 1 - k].word.as_str());
    let (one, two) = (Some(j.checked_sub(1)?), j.checked_sub(2));
    let (comparison, start) = match (w(1), w(0)?) {
        (_, x) if AT_MOST_BEFORE.contains(&x) => (Comparison::AtMost, one),
        (_, x) if AT_LEAST_BEFORE.contains(&x) => (Comparison::AtLeast, one),
        (Some(x), "than") if AT_MOST_THAN.contains(&x) => (Comparison::AtMost, two),
        (Some(x), "than") if AT_LEAST_THAN.contains(&x) => (Comparison::AtLeast, two),
        (Some("at"), "most") | (Some("up"), "to") => (Comparison::AtMost, two),
        (Some("at"), "least") => (Comparison::AtLeast, two),
        _ => return None,
    };
    Some((comparison, start?))
}

/// The comparison the words after position `i` make: "or less", "or
/// under", "or more", "or higher", "or better", "or above".
fn comparison_after(tokens: &[Token<'_>], i: usize) -> Option<Comparison> {
    let (or, what) = (tokens.get(i)?, tokens.get(i + 1)?);
    if or.word != "or" {
        return None;
    }
    match what.word.as_str() {
        "less" | "under" | "lower" | "below" | "fewer" | "cheaper" | "lighter" => {
            Some(Comparison::AtMost)
        }
        "more" | "higher" | "better" | "above" | "over" | "greater" => Some(Comparison::AtLeast),
        _ => None,
    }
}

/// The bounds `query` states, in query order (see the module documentation).
pub fn stated(query: &str) -> Vec<Bound> {
    let tokens = tokens(query);
    let mut out = Vec::new();
    let mut i = 0;
    while i < tokens.len() {
        let Some(n) = number(&tokens[i].word) else {
            i += 1;
            continue;
        };
        // The unit: on the number ("200g", "$120"), or the next word.
        let mut end = i + 1;
        let unit_word = match &n.unit {
            Some(u) => Some(u.clone()),
            None => tokens.get(i + 1).map(|t| t.word.clone()),
        };
        let limits = if n.currency {
            Some(Limited::Price)
        } else if let Some(u) = unit_word.as_deref() {
            let on_number = n.unit.is_some();
            let found = if CURRENCY_WORDS.contains(&u) {
                Some(Limited::Price)
            } else if STAR_WORDS.contains(&u) {
                Some(Limited::Rating)
            } else {
                unit_of(u).map(|unit| Limited::Attribute {
                    quantity: unit.quantity,
                    unit: unit.words[0].to_string(),
                })
            };
            if found.is_some() && !on_number {
                end = i + 2;
            }
            found
        } else {
            None
        };
        let rated = i > 0 && tokens[i - 1].word == "rated";
        let limits = match (limits, rated) {
            (Some(l), _) => Some(l),
            (None, true) => Some(Limited::Rating),
            (None, false) => None,
        };
        let before = comparison_before(&tokens, i);
        let comparison = before
            .map(|(c, _)| c)
            .or_else(|| n.plus.then_some(Comparison::AtLeast))
            .or_else(|| comparison_after(&tokens, end))
            .or_else(|| rated.then_some(Comparison::AtLeast));
        if let (Some(limits), Some(comparison)) = (limits, comparison) {
            let mut value = n.value;
            if limits == Limited::Price {
                value = (value * 100.0).round();
            }
            let start = before.map_or(i, |(_, start)| start);
            let text = tokens[start..end]
                .iter()
                .map(|t| t.written)
                .collect::<Vec<_>>()
                .join(" ");
            out.push(Bound {
                text,
                comparison,
                value,
                limits,
            });
        }
        i = end;
    }
    out
}

/// What a product holds that a bound may read.
pub struct Facts<'a> {
    pub price_cents: i64,
    pub rating: Option<f64>,
    pub attributes: &'a Map<String, Value>,
}

/// Whether the product keeps the bound: `None` when it holds nothing the
/// bound reads.
pub fn keeps(bound: &Bound, facts: &Facts<'_>) -> Option<bool> {
    let holds = |x: f64, limit: f64| match bound.comparison {
        Comparison::AtMost => x <= limit,
        Comparison::AtLeast => x >= limit,
    };
    match &bound.limits {
        Limited::Price => Some(holds(facts.price_cents as f64, bound.value)),
        Limited::Rating => facts.rating.map(|r| holds(r, bound.value)),
        Limited::Attribute { quantity, unit } => {
            let from = UNITS.iter().find(|u| u.words[0] == unit)?;
            let mut verdict = None;
            for (key, v) in facts.attributes {
                let Some(x) = v.as_f64() else { continue };
                let Some(to) = key_unit(key).filter(|u| u.quantity == *quantity) else {
                    continue;
                };
                let limit = bound.value * from.base / to.base;
                // Kept by any attribute of the kind: "under 220 grams" asks
                // for the product's weight, whichever key holds it.
                let kept = holds(x, limit);
                verdict = Some(verdict.unwrap_or(false) || kept);
            }
            verdict
        }
    }
}

/// The unit an attribute key ends in (`weight_g` → grams), if any.
fn key_unit(key: &str) -> Option<&'static Unit> {
    let last = key.rsplit(['_', '-']).next()?.to_lowercase();
    if last.len() == key.len() {
        return None;
    }
    UNITS.iter().find(|u| u.suffixes.contains(&last.as_str()))
}

/// How a product stands against the bounds: how many it breaks and how
/// many it keeps. Ordering by (breaks ascending, keeps descending) puts
/// the products that keep them first.
pub fn standing(bounds: &[Bound], facts: &Facts<'_>) -> (usize, usize) {
    let (mut broken, mut kept) = (0, 0);
    for b in bounds {
        match keeps(b, facts) {
            Some(true) => kept += 1,
            Some(false) => broken += 1,
            None => {}
        }
    }
    (broken, kept)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn one(q: &str) -> Bound {
        let b = stated(q);
        assert_eq!(b.len(), 1, "{q}: {b:?}");
        b.into_iter().next().unwrap()
    }

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
    fn a_product_keeps_breaks_or_cannot_tell() {
        let attrs = json!({"weight_g": 245, "battery_hours": 30, "colour": "red"});
        let attrs = attrs.as_object().unwrap();
        let facts = Facts {
            price_cents: 4999,
            rating: Some(4.6),
            attributes: attrs,
        };
        assert_eq!(keeps(&one("under 220 grams"), &facts), Some(false));
        assert_eq!(keeps(&one("under 1 kg"), &facts), Some(true));
        assert_eq!(keeps(&one("under 9 oz"), &facts), Some(true)); // 255 g
        assert_eq!(keeps(&one("under $50"), &facts), Some(true));
        assert_eq!(keeps(&one("over $50"), &facts), Some(false));
        assert_eq!(keeps(&one("rated 4.5 or better"), &facts), Some(true));
        assert_eq!(
            keeps(&one("at least 2 days of battery"), &facts),
            Some(false)
        );
        assert_eq!(keeps(&one("at least 1 day of battery"), &facts), Some(true));
        assert_eq!(keeps(&one("under 8 mm"), &facts), None);
        let bounds = stated("under 220 grams, under $50, under 8 mm");
        assert_eq!(standing(&bounds, &facts), (1, 1));
        let unrated = Facts {
            rating: None,
            ..facts
        };
        assert_eq!(keeps(&one("rated 4.5+"), &unrated), None);
    }
}
