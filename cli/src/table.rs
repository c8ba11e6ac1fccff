//! Cells of the readable tables the commands print.

use serde_json::Value;

/// A value as text: `-` for null, strings without quotes.
pub fn text(v: &Value) -> String {
    match v {
        Value::Null => "-".into(),
        Value::String(x) => x.clone(),
        other => other.to_string(),
    }
}

/// [`text`], with numbers as whole numbers or to three decimals.
pub fn number(v: &Value) -> String {
    match v {
        Value::Number(n) => n.as_f64().map_or_else(
            || n.to_string(),
            |f| {
                if f.fract() == 0.0 {
                    format!("{f:.0}")
                } else {
                    format!("{f:.3}")
                }
            },
        ),
        other => text(other),
    }
}

/// At most `n` characters, the last one an ellipsis when cut.
pub fn cut(x: &str, n: usize) -> String {
    if x.chars().count() <= n {
        x.to_string()
    } else {
        format!("{}…", x.chars().take(n - 1).collect::<String>())
    }
}

/// A number to `places` decimals; `-` when it is not a number.
pub fn fixed(v: &Value, places: usize) -> String {
    v.as_f64()
        .map_or_else(|| "-".into(), |f| format!("{f:.places$}"))
}
