//! Stated bounds: the numeric limits a query writes in words ("under $50",
//! "under 220 grams", "rated 4.5 stars or higher"), read once and used by
//! the rerank stage to put the pool members that keep them first.
//!
//! A bound is a comparison (at most, at least; both inclusive), a number
//! and what it limits:
//!
//! * **price**, when the number is written with a currency (`$120`, `$ 120`,
//!   `$1k`, `fifty dollars`, `two hundred dollars`, `80 usd`): the
//!   product's `price_cents` when its currency is `USD` (the
//!   bound's value is in cents). A range, "$50-$100", "$50 to $100",
//!   "between $50 and $100", is two bounds;
//! * **rating**, for stars (`4 stars`) or a bare number after "rated"
//!   (`rated 4.5+`, `rated 4.5 or better`; not "rated 4k"): the product's
//!   rating as it shows it, to two decimals;
//! * **an attribute**, for a unit of mass, length, time, power or capacity
//!   (`220 grams`, `1 kg`, `30 hours`, `8 mm`): the numeric attributes
//!   whose key ends in a unit of the same kind (`weight_g`, `battery_hours`,
//!   `drop_mm`), the bound converted into the key's unit ([`keeps`] says
//!   which of them when a product has several).
//!
//! A bound needs a comparison and, but for "rated", a unit: "under 220
//! grams" and "220 grams or less" are bounds, "a 300-pound person" and
//! "8-hour workdays" are not (nothing says which way they limit), nor are
//! "under the stars" or "under 200". The words before the number that say
//! "at most" are under, below, beneath, less than (lighter, cheaper, fewer,
//! smaller, shorter than), at most, max and maximum, and for a price also
//! up to and within (of a battery, "up to 40 hours" is what it lasts at
//! best); "at least" is over, above, more than (heavier, longer, bigger,
//! larger, greater than), at least, min and minimum. "Max" or "Min" with a
//! capital is a name ("AirPods Max"). After "no", "not" or "nothing" the
//! comparison turns round ("no more than $50" is at most $50). After the
//! number or its unit, "or less" and "or under" say at most; "or more", "or
//! higher", "or better", "or above", "and up" and a `+` say at least. A
//! query yields at most [`MAX_BOUNDS`], each once.
//!
//! What the rerank stage does with them (`search::keep_bounds`): a bound no
//! pool member keeps is set aside (it would only put the members that lack
//! the field first); then a member that breaks fewer of the bounds comes
//! first, and among those one that keeps more of them, so a member without
//! the field a bound reads comes after those that keep it and before those
//! that break it; within that, the order the stage had (the reranker's, or
//! the fused order when the reranker failed or none is configured) stands.
//! The bounds are soft: nothing leaves the pool; a hard limit is a filter.
//! Nothing here has a weight to choose.

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
    /// No pool member kept it, so it ordered nothing.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub set_aside: bool,
}

/// How a product stands against the bounds in effect: how many it breaks
/// and how many it keeps (the rest it holds no field for).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Standing {
    pub broken: u16,
    pub kept: u16,
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

/// What a product holds that a bound may read.
pub struct Facts<'a> {
    pub price_cents: i64,
    /// The price's currency: a price bound is in dollars and reads only a
    /// price in `USD`.
    pub currency: &'a str,
    /// The rating as the product shows it (two decimals).
    pub rating: Option<f64>,
    pub attributes: &'a Map<String, Value>,
}

/// Whether the product keeps the bound: `None` when it holds nothing the
/// bound reads. An attribute bound reads the numeric attributes whose key
/// ends in a unit of its kind: those whose name the query's `words` hold
/// ("lightweight" holds the `weight` of `weight_g`, "battery" names
/// `battery_hours`), else, but for a duration, the one such attribute the
/// product has; with several and none named, or a duration naming none,
/// which one the bound means is unknown (`None`). A product keeps it when
/// one of the attributes read does.
pub fn keeps(bound: &Bound, facts: &Facts<'_>, words: &[String]) -> Option<bool> {
    let holds = |x: f64, limit: f64| match bound.comparison {
        Comparison::AtMost => x <= limit,
        Comparison::AtLeast => x >= limit,
    };
    match &bound.limits {
        Limited::Price => facts
            .currency
            .eq_ignore_ascii_case("USD")
            .then(|| holds(facts.price_cents as f64, bound.value)),
        Limited::Rating => facts.rating.map(|r| holds(r, bound.value)),
        Limited::Attribute { quantity, unit } => {
            let from = UNITS.iter().find(|u| u.words[0] == unit)?;
            let of_kind: Vec<(&str, f64, &Unit)> = facts
                .attributes
                .iter()
                .filter_map(|(key, v)| {
                    let to = key_unit(key).filter(|u| u.quantity == *quantity)?;
                    Some((key.as_str(), v.as_f64()?, to))
                })
                .collect();
            let named: Vec<&(&str, f64, &Unit)> = of_kind
                .iter()
                .filter(|(k, _, _)| named_by(k, words))
                .collect();
            // A duration alone says nothing of what lasts: "charges in under
            // 2 hours" is no bound on `battery_hours`, "delivered in under 3
            // days" none at all. A time bound reads only the attributes the
            // query names; a mass or a length reads the product's one
            // attribute of its kind as well.
            let alone = *quantity != Quantity::Time;
            let read: Vec<&(&str, f64, &Unit)> = match (named.is_empty(), of_kind.len()) {
                (false, _) => named,
                (true, 1) if alone => of_kind.iter().collect(),
                (true, _) => return None,
            };
            Some(
                read.iter()
                    .any(|(_, x, to)| holds(*x, bound.value * from.base / to.base)),
            )
        }
    }
}

/// Whether the query's words name an attribute key: a part of its name
/// before the unit ("weight" of `weight_g`, "battery" of `battery_hours`),
/// three letters or more, is in one of them.
fn named_by(key: &str, words: &[String]) -> bool {
    let key = key.to_lowercase();
    let mut parts: Vec<&str> = key.split(['_', '-']).collect();
    parts.pop();
    parts
        .iter()
        .filter(|p| p.chars().count() >= 3)
        .any(|p| words.iter().any(|w| w.contains(p)))
}

/// The unit an attribute key ends in (`weight_g` → grams), if any.
fn key_unit(key: &str) -> Option<&'static Unit> {
    let (_, last) = key.rsplit_once(['_', '-'])?;
    UNITS
        .iter()
        .find(|u| u.suffixes.iter().any(|s| s.eq_ignore_ascii_case(last)))
}

impl Standing {
    /// A product's standing from its [`keeps`] answer to each bound.
    /// Ordering by (broken ascending, kept descending) puts the products
    /// that keep the bounds first.
    pub fn of(verdicts: impl IntoIterator<Item = Option<bool>>) -> Self {
        let mut s = Standing::default();
        for v in verdicts {
            match v {
                Some(true) => s.kept += 1,
                Some(false) => s.broken += 1,
                None => {}
            }
        }
        s
    }
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

    #[test]
    fn a_product_keeps_breaks_or_cannot_tell() {
        let attrs = json!({"weight_g": 245, "battery_hours": 30, "colour": "red"});
        let attrs = attrs.as_object().unwrap();
        let facts = Facts {
            price_cents: 4999,
            currency: "USD",
            rating: Some(4.6),
            attributes: attrs,
        };
        let keeps = |q: &str, f: &Facts<'_>| keeps(&one(q), f, &words(q));
        assert_eq!(keeps("under 220 grams", &facts), Some(false));
        assert_eq!(keeps("under 1 kg", &facts), Some(true));
        assert_eq!(keeps("under 9 oz", &facts), Some(true)); // 255 g
        assert_eq!(keeps("under $50", &facts), Some(true));
        assert_eq!(keeps("over $50", &facts), Some(false));
        assert_eq!(keeps("rated 4.6 or better", &facts), Some(true));
        assert_eq!(keeps("at least 2 days of battery", &facts), Some(false));
        assert_eq!(keeps("at least 1 day of battery", &facts), Some(true));
        // A duration the query does not tie to an attribute reads none, even
        // the product's only one of that kind.
        assert_eq!(keeps("charges in under 2 hours", &facts), None);
        assert_eq!(keeps("delivered in under 3 days", &facts), None);
        // A mass reads the product's only one (it weighs what it weighs).
        assert_eq!(keeps("a headset under 250 grams", &facts), Some(true));
        assert_eq!(keeps("under 8 mm", &facts), None);
        let q = "under 220 grams, under $50, under 8 mm";
        assert_eq!(
            Standing::of(stated(q).iter().map(|b| super::keeps(b, &facts, &words(q)))),
            Standing { broken: 1, kept: 1 }
        );
        let unrated = Facts {
            rating: None,
            ..facts
        };
        assert_eq!(keeps("rated 4.5+", &unrated), None);
        // A price bound is in dollars: a price in another currency cannot
        // tell.
        let euros = Facts {
            currency: "EUR",
            ..unrated
        };
        assert_eq!(keeps("under $50", &euros), None);
        // Several attributes of one kind: the one the query names, else
        // none can be told.
        let desk = json!({"width_cm": 140, "depth_cm": 60});
        let desk = Facts {
            price_cents: 0,
            currency: "USD",
            rating: None,
            attributes: desk.as_object().unwrap(),
        };
        assert_eq!(keeps("a desk under 120 cm", &desk), None);
        assert_eq!(
            keeps("a desk with a width under 120 cm", &desk),
            Some(false)
        );
        assert_eq!(keeps("a desk with a width under 150 cm", &desk), Some(true));
        let q = "lightweight headphones under 220 grams";
        let light = json!({"weight_g": 200, "max_load_kg": 100});
        let light = Facts {
            price_cents: 0,
            currency: "USD",
            rating: None,
            attributes: light.as_object().unwrap(),
        };
        assert_eq!(keeps(q, &light), Some(true));
    }
}
