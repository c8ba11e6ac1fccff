//! What an attribute value is and when two agree.
//!
//! A product attribute holds a string, a number or a boolean, or a list of
//! them (a feed's `"connectivity": ["Bluetooth 5.3", "USB-C"]`). One rule
//! set, used wherever values are compared outside SQL (the evaluation's
//! independent filter check, the comparison matrix), and the same rules the
//! SQL eligibility predicate applies through the projection's list form
//! (migration 0011):
//!
//! - an equality filter matches a scalar that equals it, or a list with an
//!   item that equals it;
//! - numbers compare by value (`60` equals `60.0`);
//! - two lists agree when they hold the same items in any order.

use serde_json::Value;

/// Whether a value may be stored as an attribute.
pub fn is_valid(v: &Value) -> bool {
    match v {
        Value::Array(items) => items.iter().all(is_scalar),
        other => is_scalar(other),
    }
}

fn is_scalar(v: &Value) -> bool {
    v.is_string() || v.is_number() || v.is_boolean()
}

fn same_scalar(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        _ => a == b,
    }
}

/// An equality filter `want` against a product's value `have`.
pub fn matches(have: &Value, want: &Value) -> bool {
    match have {
        Value::Array(items) => items.iter().any(|i| same_scalar(i, want)),
        scalar => same_scalar(scalar, want),
    }
}

/// Whether two products' values of one attribute agree.
pub fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Array(x), Value::Array(y)) => {
            x.iter().all(|i| y.iter().any(|j| same_scalar(i, j)))
                && y.iter().all(|j| x.iter().any(|i| same_scalar(i, j)))
        }
        _ => same_scalar(a, b),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_list_matches_each_of_its_items_and_nothing_else() {
        let have = json!(["Bluetooth 5.3", "USB-C"]);
        assert!(matches(&have, &json!("USB-C")));
        assert!(matches(&have, &json!("Bluetooth 5.3")));
        assert!(!matches(&have, &json!("usb-c")));
        assert!(!matches(&have, &json!("Bluetooth")));
        assert!(matches(&json!([8, 10]), &json!(10.0)));
        assert!(matches(&json!("red"), &json!("red")));
        assert!(!matches(&json!(true), &json!("true")));
    }

    #[test]
    fn lists_agree_in_any_order_and_numbers_by_value() {
        assert!(same(&json!(["a", "b"]), &json!(["b", "a"])));
        assert!(!same(&json!(["a", "b"]), &json!(["a"])));
        assert!(same(&json!(60), &json!(60.0)));
        assert!(!same(&json!("a"), &json!(["a"])));
    }

    #[test]
    fn values_are_scalars_or_lists_of_scalars() {
        assert!(is_valid(&json!(["a", 1, true])));
        assert!(is_valid(&json!([])));
        assert!(!is_valid(&json!([["a"]])));
        assert!(!is_valid(&json!({"a": 1})));
        assert!(!is_valid(&json!(null)));
        assert!(!is_valid(&json!([null])));
    }
}
