//! Whether a product keeps a bound, from the fields it holds, and its
//! standing against all of them.

use super::*;
use serde_json::{Map, Value};

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
