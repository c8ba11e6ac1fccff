//! The machine-readable contract (`shared/contract/tools.json`) and every
//! artefact projected from it.
//!
//! The contract file is the single source of the four operations: their
//! logical arguments (a flat JSON Schema per operation), outputs, HTTP
//! routes and where each argument sits in an HTTP request, plus the error
//! table. Everything else is generated here, never written by hand:
//!
//! - [`tools`]: the listings served at `GET /api/tools?surface=...`
//!   (`skill`, `mcp`, `agentcore`);
//! - [`openapi`]: an OpenAPI 3.1 document of the HTTP routes;
//! - [`skill_operations_table`] and [`http_api_md`]: the Markdown the skill
//!   folder ships;
//! - [`generated_files`]: every committed artefact with its repo path, which
//!   `mosaic contract generate` writes and [`drifted`] checks.
//!
//! Maps in the output are written with sorted keys, so the artefacts do not
//! depend on how `serde_json` orders objects. Argument order comes from the
//! contract's `http.arguments` arrays.

use crate::error::Error;
use serde_json::{json, Map, Value};
use std::path::Path;
use std::sync::OnceLock;

/// The contract, as committed.
pub const CONTRACT_JSON: &str = include_str!("../contract/tools.json");

/// The hand-written SKILL.md; only the part between the markers is generated.
const SKILL_PROSE: &str = include_str!("../../skills/mosaic-hybrid-retrieval/SKILL.md");

/// The surfaces [`tools`] projects to.
pub const SURFACES: &[&str] = &["skill", "mcp", "agentcore"];

/// Repo-relative paths of the generated artefacts.
pub const SKILL_MD: &str = "skills/mosaic-hybrid-retrieval/SKILL.md";
pub const HTTP_API_MD: &str = "skills/mosaic-hybrid-retrieval/references/http-api.md";
pub const AGENTCORE_JSON: &str = "skills/mosaic-hybrid-retrieval/references/agentcore-tools.json";
pub const OPENAPI_JSON: &str = "skills/mosaic-hybrid-retrieval/references/openapi.json";
/// One AgentCore Gateway `CreateGatewayTarget` request per function, with
/// `${GatewayId}` and `${<LogicalId>Arn}` placeholders for the deployment.
pub const AGENTCORE_TARGETS_JSON: &str =
    "skills/mosaic-hybrid-retrieval/references/agentcore-targets.json";

/// The markers around the generated operations table in SKILL.md.
pub const BEGIN_OPERATIONS: &str = "<!-- BEGIN GENERATED: operations -->";
pub const END_OPERATIONS: &str = "<!-- END GENERATED: operations -->";

/// The JSON Schema keywords an AgentCore Gateway inline tool schema accepts.
pub const AGENTCORE_KEYWORDS: &[&str] = &["type", "description", "properties", "required", "items"];

/// The parsed contract.
pub fn contract() -> &'static Value {
    static CONTRACT: OnceLock<Value> = OnceLock::new();
    CONTRACT.get_or_init(|| {
        serde_json::from_str(CONTRACT_JSON)
            .expect("shared/contract/tools.json is valid JSON (the contract tests parse it)")
    })
}

fn array(v: &Value) -> &[Value] {
    v.as_array().map(Vec::as_slice).unwrap_or(&[])
}

fn text(v: &Value) -> &str {
    v.as_str().unwrap_or("")
}

/// The operations, in contract order.
pub fn operations() -> &'static [Value] {
    array(&contract()["operations"])
}

/// One operation by its logical name.
pub fn operation(name: &str) -> Option<&'static Value> {
    operations().iter().find(|op| op["name"] == name)
}

/// The error table: `{code, http_status, meaning}` rows.
pub fn errors() -> &'static [Value] {
    array(&contract()["errors"])
}

/// `METHOD /route` of an operation.
fn route(op: &Value) -> String {
    format!(
        "{} {}",
        text(&op["http"]["method"]),
        text(&op["http"]["route"])
    )
}

/// `(argument, location, HTTP name)` of an operation, in contract order.
pub fn argument_locations(op: &Value) -> Vec<(&str, &str, &str)> {
    array(&op["http"]["arguments"])
        .iter()
        .map(|a| (text(&a["argument"]), text(&a["in"]), text(&a["name"])))
        .collect()
}

fn required(schema: &Value) -> Vec<&str> {
    array(&schema["required"]).iter().map(text).collect()
}

/// The alternatives of an `anyOf` over required arguments (search: `query`
/// or any filter), as the required names of each branch.
fn alternatives(schema: &Value) -> Vec<Vec<&str>> {
    array(&schema["anyOf"]).iter().map(required).collect()
}

/// Rebuilds every object with sorted keys (stable output whatever the map type).
fn sorted(v: &Value) -> Value {
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            Value::Object(
                keys.into_iter()
                    .map(|k| (k.clone(), sorted(&m[k])))
                    .collect(),
            )
        }
        Value::Array(a) => Value::Array(a.iter().map(sorted).collect()),
        other => other.clone(),
    }
}

fn pretty(v: &Value) -> String {
    // Serialising a `Value` cannot fail.
    let mut s = serde_json::to_string_pretty(&sorted(v)).unwrap_or_default();
    s.push('\n');
    s
}

// ---------------------------------------------------------------- surfaces

/// The tool listing for one surface: `skill` (operations with their logical
/// arguments), `mcp` (the MCP `tools/list` result) or `agentcore` (the
/// AgentCore Gateway Lambda-target inline tool schema).
pub fn tools(surface: &str) -> Result<Value, Error> {
    match surface {
        "skill" => Ok(skill_tools()),
        "mcp" => Ok(mcp_tools()),
        "agentcore" => Ok(agentcore_tools()),
        _ => Err(Error::invalid(
            "surface",
            format!("`surface` must be one of {}", SURFACES.join(", ")),
        )),
    }
}

fn skill_tools() -> Value {
    let c = contract();
    let ops: Vec<Value> = operations()
        .iter()
        .map(|op| {
            json!({
                "name": op["name"],
                "capability": op["capability"],
                "title": op["title"],
                "description": op["description"],
                "read_only": op["read_only"],
                "idempotent": op["idempotent"],
                "route": route(op),
                "required_arguments": required(&op["input_schema"]),
                "required_one_of": alternatives(&op["input_schema"]).concat(),
                "input_schema": op["input_schema"],
                "output_schema": op["output_schema"],
            })
        })
        .collect();
    json!({
        "surface": "skill",
        "service": c["service"]["name"],
        "contract_version": c["contract_version"],
        "operations": ops,
        "errors": c["errors"],
    })
}

fn mcp_tools() -> Value {
    let tools: Vec<Value> = operations()
        .iter()
        .map(|op| {
            json!({
                "name": op["name"],
                "title": op["title"],
                "description": op["description"],
                "inputSchema": op["input_schema"],
                "outputSchema": op["output_schema"],
                "annotations": {
                    "title": op["title"],
                    "readOnlyHint": op["read_only"],
                    "idempotentHint": op["idempotent"],
                    "destructiveHint": false,
                    "openWorldHint": false,
                },
            })
        })
        .collect();
    json!({ "tools": tools })
}

fn agentcore_tools() -> Value {
    Value::Array(
        operations()
            .iter()
            .map(|op| {
                json!({
                    "name": op["name"],
                    "description": op["description"],
                    "inputSchema": agentcore_schema(&op["input_schema"]),
                })
            })
            .collect(),
    )
}

/// Projects a JSON Schema onto the subset AgentCore accepts: one `type`,
/// `description`, `properties`, `required`, `items`. An `anyOf` collapses to
/// its most general branch (an array over a scalar); an `enum` moves into
/// the description; bounds stay in the (hand-written) description.
pub fn agentcore_schema(schema: &Value) -> Value {
    let mut s = schema.clone();
    if s.get("type").is_none() {
        let branches = array(&schema["anyOf"]);
        let pick = branches
            .iter()
            .find(|b| b["type"] == "array")
            .or_else(|| branches.first());
        if let Some(branch) = pick {
            let description = schema.get("description").cloned();
            s = branch.clone();
            if let Some(d) = description {
                s["description"] = d;
            }
        }
    }
    let mut out = Map::new();
    let ty = match &s["type"] {
        Value::Array(types) => types.iter().find(|t| *t != "null").cloned(),
        Value::Null => None,
        t => Some(t.clone()),
    };
    out.insert("type".into(), ty.unwrap_or_else(|| "string".into()));
    let mut description = text(&s["description"]).to_string();
    let values = s["enum"]
        .as_array()
        .or_else(|| s["items"]["enum"].as_array());
    if let Some(values) = values {
        let list: Vec<&str> = values.iter().map(text).collect();
        if !description.is_empty() {
            description.push(' ');
        }
        description.push_str(&format!("Allowed values: {}.", list.join(", ")));
    }
    if !description.is_empty() {
        out.insert("description".into(), description.into());
    }
    if let Some(props) = s["properties"].as_object() {
        let projected: Map<String, Value> = props
            .iter()
            .map(|(k, v)| (k.clone(), agentcore_schema(v)))
            .collect();
        out.insert("properties".into(), Value::Object(projected));
    }
    if !required(&s).is_empty() {
        out.insert("required".into(), s["required"].clone());
    }
    if s.get("items").is_some() {
        out.insert("items".into(), agentcore_schema(&s["items"]));
    }
    Value::Object(out)
}

// ----------------------------------------------------------------- OpenAPI

/// Splits an operation's logical arguments into HTTP path parameters, the
/// top-level body and the nested `filters` body.
struct HttpShape {
    path: Vec<(String, Value)>,
    body: Map<String, Value>,
    filters: Map<String, Value>,
}

fn http_shape(op: &Value) -> HttpShape {
    let props = &op["input_schema"]["properties"];
    let mut shape = HttpShape {
        path: Vec::new(),
        body: Map::new(),
        filters: Map::new(),
    };
    for (arg, place, name) in argument_locations(op) {
        let schema = props[arg].clone();
        match place {
            "path" => shape.path.push((name.to_string(), schema)),
            "body.filters" => {
                shape.filters.insert(name.to_string(), schema);
            }
            _ => {
                shape.body.insert(name.to_string(), schema);
            }
        }
    }
    shape
}

/// Where one logical argument goes over HTTP: `(location, name)`.
fn location<'a>(op: &'a Value, arg: &str) -> Option<(&'a str, &'a str)> {
    argument_locations(op)
        .into_iter()
        .find(|(a, _, _)| *a == arg)
        .map(|(_, place, name)| (place, name))
}

/// The JSON request body schema of an operation (`None` for GET routes).
fn request_body_schema(op: &Value) -> Option<Value> {
    if op["http"]["method"] == "GET" {
        return None;
    }
    let input = &op["input_schema"];
    let shape = http_shape(op);
    let in_place = |place: &str| -> Vec<Value> {
        required(input)
            .into_iter()
            .filter_map(|r| location(op, r).filter(|(p, _)| *p == place))
            .map(|(_, name)| Value::from(name))
            .collect()
    };
    let mut body = json!({
        "type": "object",
        "additionalProperties": false,
        "properties": shape.body,
    });
    if !shape.filters.is_empty() {
        let mut filters = json!({
            "type": "object",
            "additionalProperties": false,
            "description": "Hard eligibility constraints, applied inside SQL before any limit.",
            "properties": shape.filters,
        });
        let req = in_place("body.filters");
        if !req.is_empty() {
            filters["required"] = req.into();
        }
        body["properties"]["filters"] = filters;
    }
    let req = in_place("body");
    if !req.is_empty() {
        body["required"] = req.into();
    }
    // Each anyOf branch names one argument (with an optional refinement);
    // a branch on a path argument is always met, which voids the anyOf.
    let mut branches = Vec::new();
    let mut void = false;
    for branch in array(&input["anyOf"]) {
        let Some(arg) = required(branch).first().copied() else {
            continue;
        };
        let refine = &branch["properties"][arg];
        match location(op, arg) {
            Some((place @ ("body" | "body.filters"), name)) => {
                let mut inner = json!({ "required": [name] });
                if !refine.is_null() {
                    inner["properties"] = json!({ name: refine });
                }
                branches.push(if place == "body" {
                    inner
                } else {
                    json!({ "required": ["filters"], "properties": { "filters": inner } })
                });
            }
            _ => void = true,
        }
    }
    if !branches.is_empty() && !void {
        body["anyOf"] = Value::Array(branches);
    }
    Some(body)
}

/// The OpenAPI 3.1 document of the HTTP routes.
pub fn openapi() -> Value {
    let c = contract();
    let mut paths = Map::new();
    let error_refs = error_responses();
    for op in operations() {
        let shape = http_shape(op);
        let name = text(&op["name"]);
        let parameters: Vec<Value> = shape
            .path
            .iter()
            .map(|(pname, schema)| parameter(pname, "path", schema))
            .collect();
        let mut responses = json!({
            "200": {
                "description": format!("The {name} result."),
                "content": { "application/json": { "schema": {
                    "$ref": format!("#/components/schemas/{name}_result")
                } } },
            }
        });
        for (status, r) in &error_refs {
            responses[status.as_str()] = r.clone();
        }
        let mut operation = json!({
            "operationId": name,
            "summary": op["title"],
            "description": op["description"],
            "x-mosaic-capability": op["capability"],
            "x-mosaic-read-only": op["read_only"],
            "parameters": parameters,
            "responses": responses,
        });
        if request_body_schema(op).is_some() {
            operation["requestBody"] = json!({
                "required": true,
                "content": { "application/json": { "schema": {
                    "$ref": format!("#/components/schemas/{name}_request")
                } } },
            });
        }
        let method = text(&op["http"]["method"]).to_lowercase();
        let entry = paths
            .entry(text(&op["http"]["route"]).to_string())
            .or_insert_with(|| json!({}));
        entry[method] = operation;
    }
    for meta in array(&c["meta_routes"]) {
        let mut parameters = Vec::new();
        if let Some(query) = meta["query"].as_object() {
            for (qname, schema) in query {
                parameters.push(parameter(qname, "query", schema));
            }
        }
        let mut responses = json!({
            "200": {
                "description": "OK.",
                "content": { "application/json": { "schema": { "type": "object" } } },
            }
        });
        for status in ["400", "503"] {
            if let Some((_, r)) = error_refs.iter().find(|(s, _)| s == status) {
                responses[status] = r.clone();
            }
        }
        let method = text(&meta["method"]).to_lowercase();
        let entry = paths
            .entry(text(&meta["route"]).to_string())
            .or_insert_with(|| json!({}));
        entry[method] = json!({
            "operationId": meta["name"],
            "description": meta["description"],
            "parameters": parameters,
            "responses": responses,
        });
    }
    let mut schemas = Map::new();
    schemas.insert("ErrorEnvelope".into(), c["error_envelope"].clone());
    for op in operations() {
        let name = text(&op["name"]);
        if let Some(body) = request_body_schema(op) {
            schemas.insert(format!("{name}_request"), body);
        }
        let mut out = op["output_schema"].clone();
        if let Some(m) = out.as_object_mut() {
            m.remove("$schema");
        }
        schemas.insert(format!("{name}_result"), out);
    }
    let mut error_components = Map::new();
    for (status, _) in &error_refs {
        error_components.insert(format!("Error{status}"), error_response(status));
    }
    json!({
        "openapi": "3.1.0",
        "jsonSchemaDialect": "https://json-schema.org/draft/2020-12/schema",
        "info": {
            "title": c["service"]["title"],
            "version": c["contract_version"],
            "description": c["service"]["description"],
        },
        "paths": paths,
        "components": {
            "schemas": schemas,
            "responses": error_components,
        },
    })
}

/// An OpenAPI parameter; the schema's description becomes the parameter's.
/// Path parameters are required, query parameters optional.
fn parameter(name: &str, place: &str, schema: &Value) -> Value {
    let mut schema = schema.clone();
    let description = schema
        .as_object_mut()
        .and_then(|m| m.remove("description"))
        .unwrap_or(Value::Null);
    json!({
        "name": name,
        "in": place,
        "required": place == "path",
        "description": description,
        "schema": schema,
    })
}

/// `(status, $ref response)` for every status of the error table.
fn error_responses() -> Vec<(String, Value)> {
    let mut statuses: Vec<String> = errors()
        .iter()
        .map(|e| e["http_status"].to_string())
        .collect();
    statuses.sort();
    statuses.dedup();
    statuses
        .into_iter()
        .map(|s| {
            let r = json!({ "$ref": format!("#/components/responses/Error{s}") });
            (s, r)
        })
        .collect()
}

fn error_response(status: &str) -> Value {
    let codes: Vec<String> = errors()
        .iter()
        .filter(|e| status.parse::<u64>().ok() == e["http_status"].as_u64())
        .map(|e| format!("`{}`: {}", text(&e["code"]), text(&e["meaning"])))
        .collect();
    json!({
        "description": codes.join(" "),
        "content": { "application/json": { "schema": {
            "$ref": "#/components/schemas/ErrorEnvelope"
        } } },
    })
}

// ---------------------------------------------------------------- Markdown

/// An anyOf over arguments (search: `query` or any filter) as the first
/// branch's arguments and the alternative in words ("a filter").
fn alternative(op: &Value) -> Option<(Vec<&str>, String)> {
    let alts = alternatives(&op["input_schema"]);
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
pub fn required_summary(op: &Value) -> String {
    let mut out: Vec<String> = required(&op["input_schema"])
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
            text(&op["name"]),
            text(&op["capability"]),
            route(op),
            required_summary(op),
            if op["read_only"] == true { "yes" } else { "no" },
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
pub fn http_request(op: &Value, args: &Map<String, Value>) -> (String, Option<Value>) {
    let mut path = text(&op["http"]["route"]).to_string();
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
    let method = text(&op["http"]["method"]);
    let body = (method != "GET").then_some(Value::Object(body));
    (format!("{method} {path}"), body)
}

/// The HTTP reference of the skill (fully generated).
pub fn http_api_md() -> String {
    let c = contract();
    let mut s = String::new();
    s.push_str("<!-- Generated by `mosaic contract generate` from shared/contract/tools.json: do not edit. Change the contract and regenerate. -->\n\n");
    s.push_str("# HTTP API\n\n");
    s.push_str(&format!(
        "Contract version {}. The operations take flat *logical* arguments (the skill, the MCP listing and the AgentCore tools use them as they are). Over HTTP each argument sits in the path or in the JSON body, as mapped below; search filters nest under `filters`.\n\n",
        text(&c["contract_version"])
    ));
    s.push_str("- Requests and responses are JSON (`content-type: application/json`). Bodies over the configured limit (64 KiB by default) are refused with 413.\n");
    s.push_str("- Routes match from their `/api/` segment, so a stage prefix such as `/prod/api/search` works.\n");
    s.push_str("- Path parameters are percent-decoded. A body may repeat a path-bound argument only with the same value.\n");
    s.push_str("- The caller's principal comes from the deployment: `jwt:<issuer>#<sub>` or `iam:<arn>` from the API Gateway authorizer; over AgentCore, the gateway's identity interceptor; locally `local:<name>` from the `x-mosaic-principal` header, `anonymous` without it. Receipts are bound to it.\n\n");
    s.push_str("| Operation | Route | Read-only |\n|---|---|---|\n");
    for op in operations() {
        s.push_str(&format!(
            "| `{}` | `{}` | {} |\n",
            text(&op["name"]),
            route(op),
            if op["read_only"] == true { "yes" } else { "no" }
        ));
    }
    for meta in array(&c["meta_routes"]) {
        s.push_str(&format!(
            "| ({}) | `{} {}` | yes |\n",
            text(&meta["name"]),
            text(&meta["method"]),
            text(&meta["route"])
        ));
    }
    for op in operations() {
        let input = &op["input_schema"];
        let name = text(&op["name"]);
        s.push_str(&format!("\n## `{name}`: `{}`\n\n", route(op)));
        s.push_str(&format!("{}\n\n", text(&op["description"])));
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
        if let Some(example) = op["example"].as_object() {
            let (line, body) = http_request(op, example);
            s.push_str("\nExample: the logical arguments\n\n```json\n");
            s.push_str(&pretty(&op["example"]));
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
    for meta in array(&c["meta_routes"]) {
        s.push_str(&format!(
            "\n## `{} {}`\n\n{}\n",
            text(&meta["method"]),
            text(&meta["route"]),
            text(&meta["description"])
        ));
        if let Some(query) = meta["query"].as_object() {
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
            text(&e["code"]),
            e["http_status"],
            md_cell(text(&e["meaning"]))
        ));
    }
    s
}

// --------------------------------------------------------------- artefacts

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

/// The AgentCore Gateway targets: one Lambda target per operation, whose
/// tool is that operation's AgentCore tool. Each entry is a complete
/// `CreateGatewayTarget` request (`aws bedrock-agentcore-control
/// create-gateway-target --cli-input-json ...`) once the placeholders are
/// filled from the stack outputs: `${GatewayId}`, and
/// `${SearchProductsFunctionArn}` and its siblings. The gateway calls the
/// function with its own IAM role and propagates the principal and proof
/// headers the identity interceptor sets (`crate::principal`).
pub fn agentcore_targets() -> Value {
    let tools = agentcore_tools();
    let targets: Vec<Value> = array(&tools)
        .iter()
        .map(|tool| {
            let name = text(&tool["name"]);
            let logical = logical_function_id(name);
            json!({
                "gatewayIdentifier": "${GatewayId}",
                "name": format!("mosaic-{}", name.replace('_', "-")),
                "description": format!("Mosaic Hybrid Retrieval: the {name} tool"),
                "targetConfiguration": {"mcp": {"lambda": {
                    "lambdaArn": format!("${{{logical}Arn}}"),
                    "toolSchema": {"inlinePayload": [tool]},
                }}},
                "credentialProviderConfigurations": [
                    {"credentialProviderType": "GATEWAY_IAM_ROLE"}
                ],
                "metadataConfiguration": {"allowedRequestHeaders":
                    [crate::principal::HEADER, crate::principal::PROOF_HEADER]},
            })
        })
        .collect();
    Value::Array(targets)
}

/// The SAM template, whose AgentCore gateway targets are generated.
pub const TEMPLATE_YAML: &str = "template.yaml";
/// The markers around the generated gateway targets in `template.yaml`.
pub const BEGIN_TEMPLATE_TARGETS: &str = "  # BEGIN GENERATED: agentcore-targets";
pub const END_TEMPLATE_TARGETS: &str = "  # END GENERATED: agentcore-targets";

/// A JSON Schema of an AgentCore tool in CloudFormation's spelling
/// (`AWS::BedrockAgentCore::GatewayTarget` `SchemaDefinition`: `Type`,
/// `Description`, `Properties`, `Required`, `Items`).
fn cloudformation_schema(schema: &Value) -> Value {
    let mut out = Map::new();
    for (k, v) in schema.as_object().into_iter().flatten() {
        let (key, value) = match k.as_str() {
            "type" => ("Type", v.clone()),
            "description" => ("Description", v.clone()),
            "required" => ("Required", v.clone()),
            "items" => ("Items", cloudformation_schema(v)),
            "properties" => (
                "Properties",
                Value::Object(
                    v.as_object()
                        .into_iter()
                        .flatten()
                        .map(|(name, p)| (name.clone(), cloudformation_schema(p)))
                        .collect(),
                ),
            ),
            _ => continue,
        };
        out.insert(key.into(), value);
    }
    Value::Object(out)
}

/// The gateway targets of `template.yaml`: one
/// `AWS::BedrockAgentCore::GatewayTarget` per function, its tool schema the
/// contract's AgentCore tool, propagating the identity interceptor's
/// headers. YAML whose values are JSON (a YAML subset), between
/// [`BEGIN_TEMPLATE_TARGETS`] and [`END_TEMPLATE_TARGETS`].
pub fn template_targets() -> String {
    let mut s = String::new();
    for tool in array(&agentcore_tools()) {
        let name = text(&tool["name"]);
        let logical = logical_function_id(name);
        let definition = json!({
            "Name": name,
            "Description": tool["description"],
            "InputSchema": cloudformation_schema(&tool["inputSchema"]),
        });
        let target = logical.replace("Function", "GatewayTarget");
        s.push_str(&format!(
            "  {target}:\n    Type: AWS::BedrockAgentCore::GatewayTarget\n    Condition: AgentCore\n    Properties:\n      GatewayIdentifier: !Ref Gateway\n      Name: mosaic-{}\n      Description: {}\n      TargetConfiguration:\n        Mcp:\n          Lambda:\n            LambdaArn: !GetAtt {logical}.Arn\n            ToolSchema:\n              InlinePayload:\n                - {}\n      CredentialProviderConfigurations:\n        - CredentialProviderType: GATEWAY_IAM_ROLE\n      MetadataConfiguration:\n        AllowedRequestHeaders: {}\n",
            name.replace('_', "-"),
            Value::from(format!("Mosaic Hybrid Retrieval: the {name} tool")),
            definition,
            json!([crate::principal::HEADER, crate::principal::PROOF_HEADER]),
        ));
    }
    s
}

/// `template.yaml` with its generated gateway targets brought up to date;
/// `None` without the markers.
pub fn splice_template(template: &str) -> Option<String> {
    let start = template.find(BEGIN_TEMPLATE_TARGETS)?;
    let body = start + template[start..].find('\n')? + 1;
    let end = body + template[body..].find(END_TEMPLATE_TARGETS)?;
    Some(format!(
        "{}{}{}",
        &template[..body],
        template_targets(),
        &template[end..]
    ))
}

/// The function's logical id in `template.yaml` for an operation name
/// (`search_products` -> `SearchProductsFunction`).
pub fn logical_function_id(operation: &str) -> String {
    let mut id: String = operation
        .split('_')
        .map(|w| {
            let mut c = w.chars();
            c.next()
                .map(|f| f.to_ascii_uppercase().to_string() + c.as_str())
                .unwrap_or_default()
        })
        .collect();
    id.push_str("Function");
    id
}

fn files(skill_prose: &str) -> Vec<(&'static str, String)> {
    let skill = splice_skill_md(skill_prose)
        .or_else(|| splice_skill_md(SKILL_PROSE))
        .expect("the committed SKILL.md holds the generated-operations markers");
    let agentcore = tools("agentcore").unwrap_or(Value::Null);
    vec![
        (SKILL_MD, skill),
        (HTTP_API_MD, http_api_md()),
        (AGENTCORE_JSON, pretty(&agentcore)),
        (OPENAPI_JSON, pretty(&openapi())),
        (AGENTCORE_TARGETS_JSON, pretty(&agentcore_targets())),
    ]
}

/// Every generated artefact: `(repo-relative path, content)`. SKILL.md keeps
/// its committed prose (as compiled in) around the generated table.
pub fn generated_files() -> Vec<(&'static str, String)> {
    files(SKILL_PROSE)
}

/// [`generated_files`] for the checkout at `root`: SKILL.md keeps the prose
/// it has on disk, so a stale build never overwrites newer prose.
pub fn generated_files_at(root: &Path) -> Vec<(&'static str, String)> {
    let prose = std::fs::read_to_string(root.join(SKILL_MD)).unwrap_or_default();
    let mut out = files(&prose);
    // The template's gateway targets, where the checkout has a template.
    if let Some(t) = std::fs::read_to_string(root.join(TEMPLATE_YAML))
        .ok()
        .and_then(|t| splice_template(&t))
    {
        out.push((TEMPLATE_YAML, t));
    }
    out
}

/// The generated files under `root` that are missing or differ from what
/// the contract produces (repo-relative paths; empty when all agree).
pub fn drifted(root: &Path) -> Vec<String> {
    generated_files_at(root)
        .into_iter()
        .filter(|(path, want)| {
            std::fs::read_to_string(root.join(path)).map_or(true, |have| have != *want)
        })
        .map(|(path, _)| path.to_string())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_contract_parses_and_names_four_operations() {
        let names: Vec<&str> = operations().iter().map(|o| text(&o["name"])).collect();
        assert_eq!(
            names,
            [
                "search_products",
                "get_product_evidence",
                "compare_products",
                "explain_retrieval"
            ]
        );
    }

    #[test]
    fn the_skill_prose_has_its_markers() {
        assert!(splice_skill_md(SKILL_PROSE).is_some());
        assert!(splice_skill_md("no markers").is_none());
        let once = splice_skill_md(SKILL_PROSE).unwrap();
        assert_eq!(
            splice_skill_md(&once).unwrap(),
            once,
            "splicing is idempotent"
        );
    }

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
