//! The OpenAPI 3.1 document of the HTTP routes: one path per operation
//! (its request body split out of the logical arguments by where each one
//! sits over HTTP), the meta routes, and one response per error status.

use super::http::{argument_locations, location};
use super::spec::MetaRoute;
use super::{array, contract, errors, operations, required, OperationSpec};
use serde_json::{json, Map, Value};

/// Splits an operation's logical arguments into HTTP path parameters, the
/// top-level body and the nested `filters` body.
struct HttpShape {
    path: Vec<(String, Value)>,
    body: Map<String, Value>,
    filters: Map<String, Value>,
}

fn http_shape(op: &OperationSpec) -> HttpShape {
    let props = &op.input_schema["properties"];
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

/// The JSON request body schema of an operation (`None` for GET routes).
fn request_body_schema(op: &OperationSpec) -> Option<Value> {
    if op.http.method == "GET" {
        return None;
    }
    let input = &op.input_schema;
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
    let error_refs = error_responses();
    let mut paths = Map::new();
    let mut add = |route: &str, method: &str, operation: Value| {
        let entry = paths.entry(route.to_string()).or_insert_with(|| json!({}));
        entry[method.to_lowercase()] = operation;
    };
    for op in operations() {
        add(&op.http.route, &op.http.method, operation(op, &error_refs));
    }
    for meta in &c.meta_routes {
        add(&meta.route, &meta.method, meta_operation(meta, &error_refs));
    }
    let mut error_components = Map::new();
    for (status, _) in &error_refs {
        error_components.insert(format!("Error{status}"), error_response(status));
    }
    json!({
        "openapi": "3.1.0",
        "jsonSchemaDialect": "https://json-schema.org/draft/2020-12/schema",
        "info": {
            "title": c.service.title,
            "version": c.contract_version,
            "description": c.service.description,
        },
        "paths": paths,
        "components": {
            "schemas": schemas(),
            "responses": error_components,
        },
    })
}

/// The OpenAPI operation of one contract operation: its path parameters,
/// its request body (by reference), its result and every error response.
fn operation(op: &OperationSpec, error_refs: &[(String, Value)]) -> Value {
    let name = op.name.as_str();
    let parameters: Vec<Value> = http_shape(op)
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
    for (status, r) in error_refs {
        responses[status.as_str()] = r.clone();
    }
    let mut operation = json!({
        "operationId": name,
        "summary": op.title,
        "description": op.description,
        "x-mosaic-capability": op.capability,
        "x-mosaic-read-only": op.read_only,
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
    operation
}

/// The OpenAPI operation of a meta route: its query parameters, an object
/// result, and the 400 and 503 responses.
fn meta_operation(meta: &MetaRoute, error_refs: &[(String, Value)]) -> Value {
    let parameters: Vec<Value> = meta
        .query
        .iter()
        .flatten()
        .map(|(qname, schema)| parameter(qname, "query", schema))
        .collect();
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
    json!({
        "operationId": meta.name,
        "description": meta.description,
        "parameters": parameters,
        "responses": responses,
    })
}

/// The component schemas: the error envelope, and each operation's request
/// body and result.
fn schemas() -> Map<String, Value> {
    let mut schemas = Map::new();
    schemas.insert("ErrorEnvelope".into(), contract().error_envelope.clone());
    for op in operations() {
        let name = op.name.as_str();
        if let Some(body) = request_body_schema(op) {
            schemas.insert(format!("{name}_request"), body);
        }
        let mut out = op.output_schema.clone();
        if let Some(m) = out.as_object_mut() {
            m.remove("$schema");
        }
        schemas.insert(format!("{name}_result"), out);
    }
    schemas
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
    let mut statuses: Vec<String> = errors().iter().map(|e| e.http_status.to_string()).collect();
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
        .filter(|e| status.parse::<u16>().ok() == Some(e.http_status))
        .map(|e| format!("`{}`: {}", e.code, e.meaning))
        .collect();
    json!({
        "description": codes.join(" "),
        "content": { "application/json": { "schema": {
            "$ref": "#/components/schemas/ErrorEnvelope"
        } } },
    })
}
