//! The Markdown the skill folder ships: the operations table spliced into
//! SKILL.md between its markers, and the fully generated HTTP reference
//! (`references/http-api.md`).

use super::http::{argument_locations, http_request, location};
use super::spec::MetaRoute;
use super::OperationSpec;
use super::{alternatives, array, contract, errors, operations, pretty, required, text};
use serde_json::{json, Value};

/// The markers around the generated operations table in SKILL.md.
pub const BEGIN_OPERATIONS: &str = "<!-- BEGIN GENERATED: operations -->";
pub const END_OPERATIONS: &str = "<!-- END GENERATED: operations -->";

fn yes_no(b: bool) -> &'static str {
    if b {
        "yes"
    } else {
        "no"
    }
}

/// An anyOf over arguments (search: `query` or any filter) as the first
/// branch's arguments and the alternative in words ("a filter").
fn alternative(op: &OperationSpec) -> Option<(Vec<&str>, String)> {
    let alts = alternatives(&op.input_schema);
    let (first, rest) = alts.split_first()?;
    let rest: Vec<&str> = rest.iter().flatten().copied().collect();
    let all_filters = rest
        .iter()
        .all(|a| matches!(location(op, a), Some(("body.filters", _))));
    let words = if all_filters {
        "a filter".to_string()
    } else {
        rest.join(", ")
    };
    Some((first.clone(), words))
}

/// The required arguments of an operation, in Markdown: "`a`, `b`", or
/// "`query` (or a filter)" for an anyOf.
pub fn required_summary(op: &OperationSpec) -> String {
    let mut out: Vec<String> = required(&op.input_schema)
        .iter()
        .map(|r| format!("`{r}`"))
        .collect();
    if let Some((first, words)) = alternative(op) {
        let names: Vec<String> = first.iter().map(|r| format!("`{r}`")).collect();
        out.push(format!("{} (or {words})", names.join(", ")));
    }
    out.join(", ")
}

fn md_cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

/// The operations table of SKILL.md.
pub fn skill_operations_table() -> String {
    let mut s = String::from(
        "| Operation | Capability | Route | Required arguments | Read-only |\n|---|---|---|---|---|\n",
    );
    for op in operations() {
        s.push_str(&format!(
            "| `{}` | `{}` | `{}` | {} | {} |\n",
            op.name,
            op.capability,
            op.route(),
            required_summary(op),
            yes_no(op.read_only),
        ));
    }
    s
}

/// A JSON Schema type in words.
fn type_words(schema: &Value) -> String {
    match &schema["type"] {
        Value::String(t) if t == "array" => format!("array of {}", type_words(&schema["items"])),
        Value::String(t) => t.clone(),
        Value::Array(ts) => ts.iter().map(text).collect::<Vec<_>>().join(" or "),
        _ => array(&schema["anyOf"])
            .iter()
            .map(type_words)
            .collect::<Vec<_>>()
            .join(" or "),
    }
}

/// The validation keywords of a schema in words.
fn constraint_words(schema: &Value) -> String {
    let mut parts: Vec<String> = Vec::new();
    let n = |k: &str| schema[k].as_f64().map(|v| v.to_string());
    match (n("minimum"), n("maximum")) {
        (Some(lo), Some(hi)) => parts.push(format!("{lo} to {hi}")),
        (Some(lo), None) => parts.push(format!("at least {lo}")),
        (None, Some(hi)) => parts.push(format!("at most {hi}")),
        _ => {}
    }
    match (n("minLength"), n("maxLength")) {
        (Some(lo), Some(hi)) => parts.push(format!("{lo} to {hi} characters")),
        (None, Some(hi)) => parts.push(format!("at most {hi} characters")),
        _ => {}
    }
    match (n("minItems"), n("maxItems")) {
        (Some(lo), Some(hi)) => parts.push(format!("{lo} to {hi} items")),
        (None, Some(hi)) => parts.push(format!("at most {hi} items")),
        _ => {}
    }
    if schema["uniqueItems"] == true {
        parts.push("distinct".into());
    }
    if let Some(hi) = n("maxProperties") {
        parts.push(format!("at most {hi} entries"));
    }
    if let Some(f) = schema["format"].as_str() {
        parts.push(f.to_string());
    }
    let values = schema["enum"]
        .as_array()
        .or_else(|| schema["items"]["enum"].as_array())
        .or_else(|| {
            array(&schema["anyOf"])
                .iter()
                .find_map(|b| b["enum"].as_array())
        });
    if let Some(values) = values {
        let list: Vec<String> = values.iter().map(|v| format!("`{}`", text(v))).collect();
        parts.push(format!("one of {}", list.join(", ")));
    }
    if let Some(d) = schema.get("default") {
        parts.push(format!("default `{d}`"));
    }
    parts.join("; ")
}

/// The HTTP reference of the skill (fully generated).
pub fn http_api_md() -> String {
    let mut s = String::new();
    intro(&mut s);
    for op in operations() {
        operation_section(&mut s, op);
    }
    for meta in &contract().meta_routes {
        meta_section(&mut s, meta);
    }
    errors_section(&mut s);
    s
}

/// The header, the conventions and the table of routes.
fn intro(s: &mut String) {
    let c = contract();
    s.push_str("<!-- Generated by `mosaic contract generate` from shared/contract/tools.json: do not edit. Change the contract and regenerate. -->\n\n");
    s.push_str("# HTTP API\n\n");
    s.push_str(&format!(
        "Contract version {}. The operations take flat *logical* arguments (the skill, the MCP listing and the AgentCore tools use them as they are). Over HTTP each argument sits in the path or in the JSON body, as mapped below; search filters nest under `filters`.\n\n",
        c.contract_version
    ));
    s.push_str("- Requests and responses are JSON (`content-type: application/json`). Bodies over the configured limit (64 KiB by default) are refused with 413.\n");
    s.push_str("- Routes match from their `/api/` segment, so a stage prefix such as `/prod/api/search` works.\n");
    s.push_str("- Path parameters are percent-decoded. A body may repeat a path-bound argument only with the same value.\n");
    s.push_str("- The caller's principal comes from the deployment: `jwt:<issuer>#<sub>` or `iam:<arn>` from the API Gateway authorizer; over AgentCore, the gateway's identity interceptor; locally `local:<name>` from the `x-mosaic-principal` header, `anonymous` without it. Receipts are bound to it.\n\n");
    s.push_str("| Operation | Route | Read-only |\n|---|---|---|\n");
    for op in operations() {
        s.push_str(&format!(
            "| `{}` | `{}` | {} |\n",
            op.name,
            op.route(),
            yes_no(op.read_only)
        ));
    }
    for meta in &c.meta_routes {
        s.push_str(&format!(
            "| ({}) | `{} {}` | yes |\n",
            meta.name, meta.method, meta.route
        ));
    }
}

/// One operation: its arguments, where each sits, and an example call.
fn operation_section(s: &mut String, op: &OperationSpec) {
    let input = &op.input_schema;
    s.push_str(&format!("\n## `{}`: `{}`\n\n", op.name, op.route()));
    s.push_str(&format!("{}\n\n", op.description));
    s.push_str(
        "| Argument | HTTP location | Type | Required | Constraints |\n|---|---|---|---|---|\n",
    );
    let req = required(input);
    let alt = alternative(op);
    for (arg, place, hname) in argument_locations(op) {
        let schema = &input["properties"][arg];
        let at = match place {
            "path" => format!("path `{{{hname}}}`"),
            "body.filters" => format!("body `filters.{hname}`"),
            _ => format!("body `{hname}`"),
        };
        let required_cell = if req.contains(&arg) {
            "yes".to_string()
        } else if let Some((_, words)) = alt.as_ref().filter(|(f, _)| f.contains(&arg)) {
            format!("yes, unless {words} is given")
        } else {
            "no".to_string()
        };
        s.push_str(&format!(
            "| `{arg}` | {at} | {} | {required_cell} | {} |\n",
            md_cell(&type_words(schema)),
            md_cell(&constraint_words(schema)),
        ));
    }
    s.push('\n');
    for (arg, _, _) in argument_locations(op) {
        let d = text(&input["properties"][arg]["description"]);
        if !d.is_empty() {
            s.push_str(&format!("- `{arg}`: {d}\n"));
        }
    }
    if let Some(example) = &op.example {
        let (line, body) = http_request(op, example);
        s.push_str("\nExample: the logical arguments\n\n```json\n");
        s.push_str(&pretty(&Value::Object(example.clone())));
        s.push_str("```\n\nare sent as\n\n```http\n");
        s.push_str(&line);
        s.push('\n');
        if let Some(body) = body {
            s.push_str("content-type: application/json\n\n");
            s.push_str(&pretty(&body));
        }
        s.push_str("```\n");
    }
}

/// One meta route, with its query parameters.
fn meta_section(s: &mut String, meta: &MetaRoute) {
    s.push_str(&format!(
        "\n## `{} {}`\n\n{}\n",
        meta.method, meta.route, meta.description
    ));
    if let Some(query) = &meta.query {
        s.push_str("\n| Query parameter | Type | Constraints |\n|---|---|---|\n");
        for (qname, schema) in query {
            s.push_str(&format!(
                "| `{qname}` | {} | {} |\n",
                type_words(schema),
                md_cell(&constraint_words(schema))
            ));
        }
        for (qname, schema) in query {
            s.push_str(&format!("\n`{qname}`: {}\n", text(&schema["description"])));
        }
    }
}

/// The error envelope and the error table.
fn errors_section(s: &mut String) {
    s.push_str("\n## Errors\n\nEvery error has the same envelope; `field` is present only when one argument is at fault:\n\n```json\n");
    s.push_str(&pretty(&json!({ "error": {
        "code": "invalid_argument",
        "message": "`limit` must be a whole number from 1 to 50",
        "field": "limit",
    } })));
    s.push_str("```\n\n| Code | HTTP status | Meaning |\n|---|---|---|\n");
    for e in errors() {
        s.push_str(&format!(
            "| `{}` | {} | {} |\n",
            e.code,
            e.http_status,
            md_cell(&e.meaning)
        ));
    }
}

/// SKILL.md with the generated operations table spliced between the
/// markers of `prose`; `None` when the markers are missing or out of order.
pub fn splice_skill_md(prose: &str) -> Option<String> {
    let start = prose.find(BEGIN_OPERATIONS)? + BEGIN_OPERATIONS.len();
    let end = start + prose[start..].find(END_OPERATIONS)?;
    Some(format!(
        "{}\n\n{}\n{}",
        &prose[..start],
        skill_operations_table(),
        &prose[end..]
    ))
}
