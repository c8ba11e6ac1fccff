//! Logical arguments over HTTP: where each argument of an operation sits
//! (path, body, or the body's nested `filters`), the request a logical
//! argument object becomes, and path-segment escaping.

use super::OperationSpec;
use serde_json::{Map, Value};

/// `(argument, location, HTTP name)` of an operation, in contract order.
pub fn argument_locations(op: &OperationSpec) -> Vec<(&str, &str, &str)> {
    op.http
        .arguments
        .iter()
        .map(|a| (a.argument.as_str(), a.place.as_str(), a.name.as_str()))
        .collect()
}

/// Where one logical argument goes over HTTP: `(location, name)`.
pub(super) fn location<'a>(op: &'a OperationSpec, arg: &str) -> Option<(&'a str, &'a str)> {
    argument_locations(op)
        .into_iter()
        .find(|(a, _, _)| *a == arg)
        .map(|(_, place, name)| (place, name))
}

/// Percent-encodes a path segment (everything but RFC 3986 unreserved).
pub fn encode_segment(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// Decodes `%XX` escapes (a `+` stays a `+` in a path). `None` for a broken
/// escape or a result that is not UTF-8.
pub fn decode_segment(raw: &str) -> Option<String> {
    let bytes = raw.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = bytes.get(i + 1..i + 3)?;
            if !hex.iter().all(u8::is_ascii_hexdigit) {
                return None;
            }
            out.push(u8::from_str_radix(std::str::from_utf8(hex).ok()?, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// The HTTP request for a logical argument object: `(method path, body)`.
pub fn http_request(op: &OperationSpec, args: &Map<String, Value>) -> (String, Option<Value>) {
    let mut path = op.http.route.clone();
    let mut body = Map::new();
    let mut filters = Map::new();
    for (arg, place, name) in argument_locations(op) {
        let Some(v) = args.get(arg) else { continue };
        match place {
            "path" => {
                let raw = v.as_str().map_or_else(|| v.to_string(), str::to_string);
                path = path.replace(&format!("{{{name}}}"), &encode_segment(&raw));
            }
            "body.filters" => {
                filters.insert(name.to_string(), v.clone());
            }
            _ => {
                body.insert(name.to_string(), v.clone());
            }
        }
    }
    if !filters.is_empty() {
        body.insert("filters".into(), Value::Object(filters));
    }
    let method = op.http.method.as_str();
    let body = (method != "GET").then_some(Value::Object(body));
    (format!("{method} {path}"), body)
}

#[cfg(test)]
mod tests {
    use super::super::operation;
    use super::*;
    use serde_json::json;

    #[test]
    fn logical_arguments_map_to_http() {
        let op = operation("search_products").unwrap();
        let args = json!({"query": "kettle", "brand": "Acme", "limit": 3});
        let (line, body) = http_request(op, args.as_object().unwrap());
        assert_eq!(line, "POST /api/search");
        assert_eq!(
            body.unwrap(),
            json!({"query": "kettle", "limit": 3, "filters": {"brand": "Acme"}})
        );
        let op = operation("get_product_evidence").unwrap();
        let args = json!({"retrieval_scope_id": "e", "product_id": "a/b", "evidence_query": "q"});
        let (line, body) = http_request(op, args.as_object().unwrap());
        assert_eq!(line, "POST /api/products/a%2Fb/evidence");
        assert_eq!(
            body.unwrap(),
            json!({"retrieval_scope_id": "e", "evidence_query": "q"})
        );
        let op = operation("explain_retrieval").unwrap();
        let args = json!({"retrieval_scope_id": "e"});
        assert_eq!(
            http_request(op, args.as_object().unwrap()),
            ("GET /api/retrieval/events/e".to_string(), None)
        );
    }
}
