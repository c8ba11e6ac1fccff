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
//!
//! `read.rs` reads the bounds from a query's words; `keep.rs` says whether a
//! product keeps one.

mod keep;
mod read;

pub use keep::{keeps, Facts};
pub use read::{stated, words, MAX_BOUNDS};

use serde::{Deserialize, Serialize};

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

/// The one bound `q` states (tests).
#[cfg(test)]
fn one(q: &str) -> Bound {
    let b = stated(q);
    assert_eq!(b.len(), 1, "{q}: {b:?}");
    b.into_iter().next().unwrap()
}
