//! Validation and normalisation of `search_products` arguments.
//!
//! Requests arrive as JSON objects in two shapes that differ only in where
//! the filters sit: nested under `filters` (HTTP) or flat beside the query
//! (AgentCore tools, the skill). Both are checked field by field so that
//! every bad input is a 400 that names the field, before anything runs.

use crate::error::Error;
use crate::profile::RetrievalProfile;
use serde::Serialize;
use serde_json::{Map, Value};

/// Filter fields, in contract order.
pub const FILTER_FIELDS: &[&str] = &[
    "domain",
    "category_key",
    "brand",
    "availability",
    "in_stock_only",
    "min_price_cents",
    "max_price_cents",
    "min_rating",
    "attributes",
];

/// Hard eligibility constraints. `None` means "not constrained".
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Filters {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub domain: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub category_key: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub brand: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub availability: Option<Vec<String>>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub in_stock_only: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_price_cents: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_price_cents: Option<i64>,
    #[serde(
        skip_serializing_if = "Option::is_none",
        serialize_with = "rating_as_written"
    )]
    pub min_rating: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attributes: Option<Map<String, Value>>,
}

impl Filters {
    pub fn is_empty(&self) -> bool {
        *self == Filters::default()
    }
}

/// A validated, normalised search request.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SearchRequest {
    /// The query as received (trimmed), if any.
    pub query: Option<String>,
    /// The text the arms match on: whitespace collapsed.
    pub normalized_query: Option<String>,
    pub filters: Filters,
    pub limit: i64,
    pub authorized_limit: i64,
    pub include_diagnostics: bool,
    pub rerank: bool,
    pub session_id: Option<String>,
}

/// Where the filter fields sit in the request object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// HTTP: `{"query": ..., "filters": {...}}`.
    Nested,
    /// AgentCore and the skill: filter fields beside the query.
    Flat,
}

const TOP_FIELDS: &[&str] = &[
    "query",
    "limit",
    "authorized_limit",
    "include_diagnostics",
    "rerank",
    "session_id",
];

/// What a string field may hold besides printable text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TextKind {
    /// Free text a person typed (a query, a question): tab, line feed and
    /// carriage return are whitespace and are allowed (they are collapsed);
    /// every other control character is refused.
    Prose,
    /// An identifier or a label (ids, session ids, filter values, attribute
    /// keys and values): no control character at all, and none of the
    /// Unicode bidirectional formatting characters, which make a value
    /// display differently from what it is.
    Token,
}

/// Whether `c` is a Unicode bidirectional formatting character (embedding,
/// override, isolate or mark).
pub fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{200E}' | '\u{200F}' | '\u{061C}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

/// Whether `s` holds characters its kind does not allow ([`check_text`]).
pub fn holds_refused(s: &str, kind: TextKind) -> bool {
    match kind {
        TextKind::Prose => s
            .chars()
            .any(|c| c.is_control() && !matches!(c, '\t' | '\n' | '\r')),
        TextKind::Token => s.chars().any(|c| c.is_control() || is_bidi_control(c)),
    }
}

/// Refuses a string that holds characters its kind does not allow, with a
/// 400 `invalid_argument` naming `field`. Every string argument of every
/// operation passes through here before anything runs, so no value can
/// reach the database that it would reject (PostgreSQL refuses NUL in
/// text).
pub fn check_text(field: &str, s: &str, kind: TextKind) -> Result<(), Error> {
    match holds_refused(s, kind) {
        true => Err(Error::invalid(
            field,
            format!("`{field}` contains control characters"),
        )),
        false => Ok(()),
    }
}

/// An optional string: trimmed, at most `max` characters, `None` when null
/// or without a visible character (whitespace and invisible characters
/// alone, as [`normalize_query`] drops them: the contract's patterns say
/// the same).
pub(crate) fn string(
    v: &Value,
    field: &str,
    max: usize,
    kind: TextKind,
) -> Result<Option<String>, Error> {
    match v {
        Value::Null => Ok(None),
        Value::String(s) => {
            check_text(field, s, kind)?;
            let t = s.trim();
            if t.chars().count() > max {
                return Err(Error::invalid(
                    field,
                    format!("`{field}` is longer than {max} characters"),
                ));
            }
            Ok((!normalize_query(t).is_empty()).then(|| t.to_string()))
        }
        _ => Err(Error::invalid(field, format!("`{field}` must be a string"))),
    }
}

/// An optional whole number in `min..=max`. A number written with a
/// fraction of zero (`5.0`, `-0`, `1e3`) is that whole number, as JSON
/// Schema's `integer` (the contract's type) counts it; `2.5` is not.
pub(crate) fn integer(v: &Value, field: &str, min: i64, max: i64) -> Result<Option<i64>, Error> {
    // Past 2^53 a double no longer holds every whole number exactly.
    const EXACT: f64 = 9_007_199_254_740_992.0;
    let whole = |n: &serde_json::Number| {
        n.as_i64().or_else(|| {
            n.as_f64()
                .filter(|f| f.fract() == 0.0 && f.abs() < EXACT)
                .map(|f| f as i64)
        })
    };
    match v {
        Value::Null => Ok(None),
        Value::Number(n) => match whole(n) {
            Some(i) if (min..=max).contains(&i) => Ok(Some(i)),
            _ => Err(Error::invalid(
                field,
                format!("`{field}` must be a whole number from {min} to {max}"),
            )),
        },
        _ => Err(Error::invalid(field, format!("`{field}` must be a number"))),
    }
}

fn boolean(v: &Value, field: &str) -> Result<Option<bool>, Error> {
    match v {
        Value::Null => Ok(None),
        Value::Bool(b) => Ok(Some(*b)),
        _ => Err(Error::invalid(
            field,
            format!("`{field}` must be true or false"),
        )),
    }
}

fn parse_filter(filters: &mut Filters, key: &str, v: &Value, path: &str) -> Result<(), Error> {
    match key {
        "domain" => filters.domain = string(v, path, 64, TextKind::Token)?,
        "category_key" => filters.category_key = string(v, path, 64, TextKind::Token)?,
        "brand" => filters.brand = string(v, path, 128, TextKind::Token)?,
        "availability" => filters.availability = availability(v, path)?,
        "in_stock_only" => filters.in_stock_only = boolean(v, path)?.unwrap_or(false),
        "min_price_cents" => filters.min_price_cents = integer(v, path, 0, 1_000_000_000_000)?,
        "max_price_cents" => filters.max_price_cents = integer(v, path, 0, 1_000_000_000_000)?,
        "min_rating" => filters.min_rating = rating(v, path)?,
        "attributes" => filters.attributes = attributes(v, path)?,
        _ => return Err(Error::unknown_field(path)),
    }
    Ok(())
}

/// The `availability` filter: one catalog availability or a list of 1 to 6,
/// each exactly as the contract spells it (an empty or padded value is
/// unknown, as the contract's enumeration has it).
fn availability(v: &Value, path: &str) -> Result<Option<Vec<String>>, Error> {
    let value = |i: &Value| match i {
        Value::String(s) => {
            check_text(path, s, TextKind::Token)?;
            Ok(s.clone())
        }
        _ => Err(Error::invalid(
            path,
            format!("`{path}` must be a string or a list of 1 to 6 strings"),
        )),
    };
    let values = match v {
        Value::Null => None,
        Value::String(_) => Some(vec![value(v)?]),
        Value::Array(items) if !items.is_empty() && items.len() <= 6 => {
            Some(items.iter().map(value).collect::<Result<Vec<_>, _>>()?)
        }
        _ => {
            return Err(Error::invalid(
                path,
                format!("`{path}` must be a string or a list of 1 to 6 strings"),
            ))
        }
    };
    if let Some(vals) = &values {
        if let Some(bad) = vals
            .iter()
            .find(|s| !crate::catalog::AVAILABILITY.contains(&s.as_str()))
        {
            return Err(Error::invalid(
                path,
                format!(
                    "unknown availability `{}`; use one of {}",
                    crate::error::shown_key(bad),
                    crate::catalog::AVAILABILITY.join(", ")
                ),
            ));
        }
    }
    Ok(values)
}

/// A rating as the caller wrote it (4.95, not the single-precision
/// 4.949999809265137 it is compared as; 0 for -0).
fn rating_as_written<S: serde::Serializer>(r: &Option<f32>, s: S) -> Result<S::Ok, S::Error> {
    match r {
        Some(r) => {
            let written: f64 = (r + 0.0).to_string().parse().unwrap_or(f64::from(*r));
            s.serialize_some(&written)
        }
        None => s.serialize_none(),
    }
}

/// The `min_rating` filter: a number from 0 to 5.
fn rating(v: &Value, path: &str) -> Result<Option<f32>, Error> {
    match v {
        Value::Null => Ok(None),
        Value::Number(n) => match n.as_f64() {
            Some(r) if (0.0..=5.0).contains(&r) => Ok(Some(r as f32)),
            _ => Err(Error::invalid(
                path,
                format!("`{path}` must be between 0 and 5"),
            )),
        },
        _ => Err(Error::invalid(path, format!("`{path}` must be a number"))),
    }
}

/// The `attributes` filter: at most 16 scalar values by key.
fn attributes(v: &Value, path: &str) -> Result<Option<Map<String, Value>>, Error> {
    match v {
        Value::Null => Ok(None),
        Value::Object(m) if m.len() <= 16 => {
            for (k, val) in m {
                check_text(path, k, TextKind::Token)?;
                // A key is checked before it is named in a message.
                if k.is_empty() || k.chars().count() > 64 {
                    return Err(Error::invalid(
                        path,
                        format!("`{path}` keys are 1 to 64 characters"),
                    ));
                }
                let ok_val = match val {
                    Value::String(s) => {
                        check_text(&format!("{path}.{k}"), s, TextKind::Token)?;
                        s.chars().count() <= 256
                    }
                    Value::Number(n) => n.as_f64().is_some_and(f64::is_finite),
                    Value::Bool(_) => true,
                    _ => false,
                };
                if !ok_val {
                    return Err(Error::invalid(
                        path,
                        format!("`{path}.{k}` must be a string (at most 256 characters), number or boolean"),
                    ));
                }
            }
            Ok((!m.is_empty()).then(|| m.clone()))
        }
        Value::Object(_) => Err(Error::invalid(
            path,
            format!("`{path}` holds at most 16 attributes"),
        )),
        _ => Err(Error::invalid(path, format!("`{path}` must be an object"))),
    }
}

impl SearchRequest {
    /// Validates a request object of the given shape.
    pub fn from_json(
        body: &Value,
        shape: Shape,
        profile: &RetrievalProfile,
    ) -> Result<Self, Error> {
        let obj = body
            .as_object()
            .ok_or_else(|| Error::invalid_json("the request body must be a JSON object"))?;
        let (filters, top) = split_fields(obj, shape)?;
        let null = Value::Null;
        let get = |k: &str| top.get(k).unwrap_or(&null);

        let (query, normalized_query) = query(get("query"), profile)?;
        if normalized_query.is_none() && filters.is_empty() {
            return Err(Error::invalid(
                "query",
                "`query` is required unless a filter is given",
            ));
        }
        if let (Some(lo), Some(hi)) = (filters.min_price_cents, filters.max_price_cents) {
            if lo > hi {
                // Named as every other filter error of this shape names it.
                let field = match shape {
                    Shape::Nested => "filters.max_price_cents",
                    Shape::Flat => "max_price_cents",
                };
                return Err(Error::invalid(
                    field,
                    "`max_price_cents` must not be below `min_price_cents`",
                ));
            }
        }
        let limit = integer(get("limit"), "limit", 1, 50)?.unwrap_or(profile.default_limit);
        let authorized_limit =
            integer(get("authorized_limit"), "authorized_limit", 0, 50)?.unwrap_or(limit);
        if authorized_limit > limit {
            return Err(Error::invalid(
                "authorized_limit",
                "`authorized_limit` must not exceed `limit`",
            ));
        }
        let session_id = string(get("session_id"), "session_id", 128, TextKind::Token)?;
        Ok(SearchRequest {
            query,
            normalized_query,
            filters,
            limit,
            authorized_limit,
            include_diagnostics: boolean(get("include_diagnostics"), "include_diagnostics")?
                .unwrap_or(false),
            rerank: boolean(get("rerank"), "rerank")?.unwrap_or(true),
            session_id,
        })
    }
}

/// The request's filters, parsed, and its other fields, still JSON; a key
/// that is neither (in `shape`) is an unknown field.
fn split_fields(
    obj: &Map<String, Value>,
    shape: Shape,
) -> Result<(Filters, Map<String, Value>), Error> {
    let mut filters = Filters::default();
    let mut top = Map::new();
    for (key, v) in obj {
        if TOP_FIELDS.contains(&key.as_str()) {
            top.insert(key.clone(), v.clone());
        } else if shape == Shape::Nested && key == "filters" {
            match v {
                Value::Null => {}
                Value::Object(f) => {
                    for (fk, fv) in f {
                        parse_filter(&mut filters, fk, fv, &format!("filters.{fk}"))?;
                    }
                }
                _ => return Err(Error::invalid("filters", "`filters` must be an object")),
            }
        } else if shape == Shape::Flat && FILTER_FIELDS.contains(&key.as_str()) {
            parse_filter(&mut filters, key, v, key)?;
        } else if FILTER_FIELDS.contains(&key.as_str()) {
            // The tools' flat arguments, sent to the HTTP route.
            return Err(Error::misplaced_field(
                key,
                &format!("a filter goes inside `filters`, as in {{\"filters\": {{\"{key}\": …}}}}"),
            ));
        } else {
            return Err(Error::unknown_field(key));
        }
    }
    Ok((filters, top))
}

/// The query as received (trimmed) and normalised; the number of negated
/// words is bounded by the profile.
fn query(v: &Value, profile: &RetrievalProfile) -> Result<(Option<String>, Option<String>), Error> {
    let query = string(v, "query", profile.max_query_chars, TextKind::Prose)?;
    let normalized_query = query
        .as_deref()
        .map(normalize_query)
        .filter(|q| !q.is_empty());
    if let Some(q) = &normalized_query {
        let negated = crate::search::arms::lexical_terms(q).negated.len();
        if negated > profile.max_negated_terms {
            return Err(Error::invalid(
                "query",
                format!(
                    "`query` excludes {negated} words; at most {} negated words (`-word`) are allowed",
                    profile.max_negated_terms
                ),
            ));
        }
    }
    Ok((query, normalized_query))
}

/// Whether `c` is invisible and means nothing to a match: the zero-width
/// space, the word joiner, the byte-order mark, the soft hyphen, and the
/// bidirectional formatting characters. Text pasted from a web page or a
/// document carries them unseen. The zero-width non-joiner and joiner are
/// not among them: inside a word they are part of its spelling (Persian,
/// Indic scripts, emoji).
fn is_invisible(c: char) -> bool {
    matches!(c, '\u{200B}' | '\u{2060}' | '\u{FEFF}' | '\u{00AD}') || is_bidi_control(c)
}

/// The zero-width non-joiner and joiner: a word of nothing else is empty.
fn is_joiner(c: char) -> bool {
    matches!(c, '\u{200C}' | '\u{200D}')
}

/// Drops the invisible characters ([`is_invisible`]: "blue\u{200B}tooth"
/// is "bluetooth") and the words made of joiners alone ([`is_joiner`]),
/// and collapses whitespace; case and punctuation are left to each arm. A
/// query of invisible characters alone normalises to nothing, as one of
/// spaces does.
pub fn normalize_query(q: &str) -> String {
    q.split_whitespace()
        .map(|w| w.chars().filter(|&c| !is_invisible(c)).collect::<String>())
        .filter(|w| !w.chars().all(is_joiner))
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(v: Value) -> Result<SearchRequest, Error> {
        SearchRequest::from_json(&v, Shape::Nested, &RetrievalProfile::default())
    }

    #[test]
    fn a_whole_number_may_be_written_with_a_zero_fraction() {
        for (written, want) in [
            (json!(5), Some(5)),
            (json!(5.0), Some(5)),
            (json!(-0.0), Some(0)),
            (serde_json::from_str::<Value>("1e1").unwrap(), Some(10)),
            (Value::Null, None),
        ] {
            assert_eq!(
                integer(&written, "limit", 0, 50).unwrap(),
                want,
                "{written}"
            );
        }
        for refused in [
            json!(2.5),
            json!(-1.0),
            json!(51.0),
            json!(1e300),
            json!(9_007_199_254_740_994.0),
            json!("5"),
        ] {
            let e = integer(&refused, "limit", 0, i64::MAX).map(|_| ()).err();
            let e = e.or_else(|| integer(&refused, "limit", 0, 50).err());
            assert!(e.is_some(), "{refused}");
        }
        let r = parse(json!({"query": "x", "limit": 5.0,
            "filters": {"max_price_cents": 5000.0}}))
        .unwrap();
        assert_eq!(r.limit, 5);
        assert_eq!(r.filters.max_price_cents, Some(5000));
    }

    #[test]
    fn defaults_and_normalisation() {
        let r = parse(json!({"query": "  noise   cancelling\theadphones "})).unwrap();
        assert_eq!(
            r.normalized_query.as_deref(),
            Some("noise cancelling headphones")
        );
        assert_eq!((r.limit, r.authorized_limit, r.rerank), (10, 10, true));
        let r = parse(json!({"query": "x", "limit": 5})).unwrap();
        assert_eq!(r.authorized_limit, 5);
    }

    #[test]
    fn control_characters_are_refused_with_the_field_named() {
        let field = |v: Value| {
            parse(v).unwrap_err().body()["error"]["field"]
                .as_str()
                .unwrap()
                .to_string()
        };
        assert_eq!(field(json!({"query": "a\u{0}b"})), "query");
        assert_eq!(
            field(json!({"query": "a", "filters": {"attributes": {"k": "v\u{0}"}}})),
            "filters.attributes.k"
        );
        assert_eq!(
            field(json!({"query": "a", "filters": {"attributes": {"k\u{1}": 1}}})),
            "filters.attributes"
        );
        assert_eq!(
            field(json!({"query": "a", "session_id": "s\u{202e}"})),
            "session_id"
        );
        assert_eq!(
            field(json!({"query": "a", "session_id": "s\t1"})),
            "session_id"
        );
        // In prose, tab and line breaks are whitespace.
        let r = parse(json!({"query": "a\tb\r\nc"})).unwrap();
        assert_eq!(r.normalized_query.as_deref(), Some("a b c"));
        // Invisible characters are dropped: a query of them alone is no
        // query, as one of spaces is (a 400 without a filter, a
        // filters-only search with one).
        let r = parse(json!({"query": "blue\u{200B}tooth \u{202E}\u{FEFF} head\u{00AD}phones"}))
            .unwrap();
        assert_eq!(r.normalized_query.as_deref(), Some("bluetooth headphones"));
        // A joiner inside a word is part of its spelling ("mi\u{200C}khaham").
        let word = "\u{0645}\u{06CC}\u{200C}\u{062E}\u{0648}\u{0627}\u{0647}\u{0645}";
        let r = parse(json!({ "query": word })).unwrap();
        assert_eq!(r.normalized_query.as_deref(), Some(word));
        for q in ["\u{200B}", "\u{200B} \u{2060}\u{200D}", "   "] {
            assert_eq!(field(json!({ "query": q })), "query", "{q:?}");
            let r = parse(json!({"query": q, "filters": {"domain": "office"}})).unwrap();
            assert_eq!(r.normalized_query, None, "{q:?}");
        }
        assert!(check_text("x", "mañana 漢字 🙂", TextKind::Token).is_ok());
    }

    #[test]
    fn negated_words_are_limited_by_the_profile() {
        let profile = RetrievalProfile::default();
        let words = |n: usize| {
            (0..n)
                .map(|i| format!("-w{i}"))
                .collect::<Vec<_>>()
                .join(" ")
        };
        let q = format!("kettle {}", words(profile.max_negated_terms));
        assert!(parse(json!({ "query": q })).is_ok());
        let q = format!("kettle {}", words(profile.max_negated_terms + 1));
        assert_eq!(parse(json!({ "query": q })).unwrap_err().status(), 400);
    }

    #[test]
    fn a_rating_is_echoed_as_written() {
        for (sent, echoed) in [
            (json!(4.95), json!(4.95)),
            (json!(-0.0), json!(0.0)),
            (json!(3), json!(3.0)),
        ] {
            let r = parse(json!({"query": "x", "filters": {"min_rating": sent}})).unwrap();
            assert_eq!(
                serde_json::to_value(&r.filters).unwrap()["min_rating"],
                echoed
            );
        }
    }

    #[test]
    fn a_filter_string_without_a_visible_character_is_no_filter() {
        // As the contract's patterns have it: whitespace and invisible
        // characters alone are no filter, so alone they are no search.
        for blank in ["", " ", "\u{FEFF}", "\u{200B}", "\u{2060} \u{00AD}"] {
            for key in ["domain", "category_key", "brand"] {
                let r = parse(json!({"query": "kettle", "filters": {key: blank}})).unwrap();
                assert_eq!(r.filters, Filters::default(), "{key}={blank:?}");
                let e = parse(json!({"filters": {key: blank}})).unwrap_err();
                assert_eq!(
                    e.code(),
                    crate::error::Code::InvalidArgument,
                    "{key}={blank:?}"
                );
            }
        }
        let r = parse(json!({"filters": {"brand": " Acme "}})).unwrap();
        assert_eq!(r.filters.brand.as_deref(), Some("Acme"));
    }

    #[test]
    fn availability_is_one_of_the_contracts_values_exactly() {
        for written in [json!("in_stock"), json!(["in_stock", "preorder"])] {
            let r = parse(json!({"query": "x", "filters": {"availability": written}})).unwrap();
            assert!(r.filters.availability.is_some(), "{written}");
        }
        for refused in [
            json!(""),
            json!(" in_stock "),
            json!("\u{FEFF}in_stock"),
            json!(["in_stock", ""]),
            json!([" in_stock"]),
            json!([1]),
            json!([]),
        ] {
            let e = parse(json!({"query": "x", "filters": {"availability": refused}})).unwrap_err();
            assert_eq!(
                e.body()["error"]["field"],
                "filters.availability",
                "{refused}"
            );
        }
    }

    #[test]
    fn an_attribute_key_too_long_is_not_repeated_back() {
        let long = "k".repeat(5_000);
        let e = parse(json!({"query": "x", "filters": {"attributes": {long.clone(): "v"}}}))
            .unwrap_err();
        let body = e.body();
        assert_eq!(body["error"]["field"], "filters.attributes");
        assert!(!body.to_string().contains(&long[..65]), "{body}");
        let e = parse(json!({"query": "x", "filters": {"attributes": {"": 1}}})).unwrap_err();
        assert_eq!(e.body()["error"]["field"], "filters.attributes");
    }

    #[test]
    fn a_price_range_upside_down_names_the_field_as_its_shape_does() {
        let profile = RetrievalProfile::default();
        let field = |v: Value, shape: Shape| {
            let e = SearchRequest::from_json(&v, shape, &profile).unwrap_err();
            e.body()["error"]["field"].as_str().unwrap().to_string()
        };
        assert_eq!(
            field(
                json!({"query": "x", "filters": {"min_price_cents": 500, "max_price_cents": 100}}),
                Shape::Nested
            ),
            "filters.max_price_cents"
        );
        assert_eq!(
            field(
                json!({"query": "x", "min_price_cents": 500, "max_price_cents": 100}),
                Shape::Flat
            ),
            "max_price_cents"
        );
    }

    #[test]
    fn a_filter_beside_the_query_over_http_says_where_it_goes() {
        let profile = RetrievalProfile::default();
        let e = SearchRequest::from_json(
            &json!({"query": "kettle", "max_price_cents": 100}),
            Shape::Nested,
            &profile,
        )
        .unwrap_err();
        let body = e.body();
        assert_eq!(
            (
                body["error"]["code"].as_str(),
                body["error"]["field"].as_str()
            ),
            (Some("unknown_field"), Some("max_price_cents"))
        );
        assert_eq!(
            body["error"]["message"],
            "unknown field `max_price_cents`: a filter goes inside `filters`, as in \
             {\"filters\": {\"max_price_cents\": …}}"
        );
        // Any other key is unknown, without a hint.
        let e = SearchRequest::from_json(
            &json!({"query": "kettle", "maxprice": 1}),
            Shape::Nested,
            &profile,
        )
        .unwrap_err();
        assert_eq!(e.body()["error"]["message"], "unknown field `maxprice`");
    }

    #[test]
    fn flat_and_nested_shapes_agree() {
        let nested = parse(
            json!({"query": "kettle", "filters": {"max_price_cents": 5000, "in_stock_only": true}}),
        )
        .unwrap();
        let flat = SearchRequest::from_json(
            &json!({"query": "kettle", "max_price_cents": 5000, "in_stock_only": true}),
            Shape::Flat,
            &RetrievalProfile::default(),
        )
        .unwrap();
        assert_eq!(nested, flat);
        let err = parse(json!({"query": "kettle", "max_price_cents": 5000})).unwrap_err();
        assert_eq!(err.code().as_str(), "unknown_field");
    }
}
