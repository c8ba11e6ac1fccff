//! The tool listings of the operations, one per surface: `skill`
//! (operations with their logical arguments), `mcp` (the MCP `tools/list`
//! result) and `agentcore` (the AgentCore Gateway Lambda-target inline tool
//! schema), served at `GET /api/tools?surface=...`.

use super::{alternatives, array, contract, operations, required, text};
use crate::error::Error;
use serde_json::{json, Map, Value};

/// The surfaces [`tools`] projects to.
pub const SURFACES: &[&str] = &["skill", "mcp", "agentcore"];

/// The JSON Schema keywords an AgentCore Gateway inline tool schema accepts.
pub const AGENTCORE_KEYWORDS: &[&str] = &["type", "description", "properties", "required", "items"];

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
                "name": op.name,
                "capability": op.capability,
                "title": op.title,
                "description": op.description,
                "read_only": op.read_only,
                "idempotent": op.idempotent,
                "route": op.route(),
                "required_arguments": required(&op.input_schema),
                "required_one_of": alternatives(&op.input_schema).concat(),
                "input_schema": op.input_schema,
                "output_schema": op.output_schema,
            })
        })
        .collect();
    json!({
        "surface": "skill",
        "service": c.service.name,
        "contract_version": c.contract_version,
        "operations": ops,
        "errors": c.errors,
    })
}

fn mcp_tools() -> Value {
    let tools: Vec<Value> = operations()
        .iter()
        .map(|op| {
            json!({
                "name": op.name,
                "title": op.title,
                "description": op.description,
                "inputSchema": op.input_schema,
                "outputSchema": op.output_schema,
                "annotations": {
                    "title": op.title,
                    "readOnlyHint": op.read_only,
                    "idempotentHint": op.idempotent,
                    "destructiveHint": false,
                    "openWorldHint": false,
                },
            })
        })
        .collect();
    json!({ "tools": tools })
}

/// The AgentCore tools: one per operation, its input schema projected by
/// [`agentcore_schema`].
pub(super) fn agentcore_tools() -> Value {
    Value::Array(
        operations()
            .iter()
            .map(|op| {
                json!({
                    "name": op.name,
                    "description": op.description,
                    "inputSchema": agentcore_schema(&op.input_schema),
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
