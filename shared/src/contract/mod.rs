//! The machine-readable contract (`shared/contract/tools.json`) and every
//! artefact projected from it.
//!
//! The contract file is the single source of the four operations: their
//! logical arguments (a flat JSON Schema per operation), outputs, HTTP
//! routes and where each argument sits in an HTTP request, plus the error
//! table. It is deserialised once into [`spec`]'s types ([`contract`]);
//! everything else is generated from it, never written by hand:
//!
//! - [`tools`]: the listings served at `GET /api/tools?surface=...`
//!   (`skill`, `mcp`, `agentcore`);
//! - [`openapi`]: an OpenAPI 3.1 document of the HTTP routes;
//! - [`markdown`]: the Markdown the skill folder ships (the operations
//!   table of SKILL.md, the HTTP reference);
//! - [`agentcore`]: the AgentCore Gateway targets, as JSON and in
//!   `template.yaml`;
//! - [`files`]: every committed artefact with its repo path, which
//!   `mosaic contract generate` writes and [`drifted`] checks.
//!
//! [`http`] maps logical arguments onto an HTTP request (path, body,
//! nested filters), for the generated documents and for callers.
//!
//! Maps in the output are written with sorted keys, so the artefacts do not
//! depend on how `serde_json` orders objects. Argument order comes from the
//! contract's `http.arguments` arrays.

pub mod agentcore;
pub mod files;
pub mod http;
pub mod markdown;
pub mod openapi;
pub mod spec;
pub mod tools;

pub use agentcore::{
    agentcore_targets, logical_function_id, splice_template, template_targets,
    BEGIN_TEMPLATE_TARGETS, END_TEMPLATE_TARGETS, TEMPLATE_YAML,
};
pub use files::{
    drifted, generated_files, generated_files_at, AGENTCORE_JSON, AGENTCORE_TARGETS_JSON,
    HTTP_API_MD, OPENAPI_JSON, SKILL_MD,
};
pub use http::{argument_locations, decode_segment, encode_segment, http_request};
pub use markdown::{
    http_api_md, required_summary, skill_operations_table, splice_skill_md, BEGIN_OPERATIONS,
    END_OPERATIONS,
};
pub use openapi::openapi;
pub use spec::{Contract, ErrorSpec, OperationSpec};
pub use tools::{agentcore_schema, tools, AGENTCORE_KEYWORDS, SURFACES};

use serde_json::Value;
use std::sync::OnceLock;

/// The contract, as committed.
pub const CONTRACT_JSON: &str = include_str!("../../contract/tools.json");

/// The parsed contract.
pub fn contract() -> &'static Contract {
    static CONTRACT: OnceLock<Contract> = OnceLock::new();
    CONTRACT.get_or_init(|| {
        serde_json::from_str(CONTRACT_JSON)
            .expect("shared/contract/tools.json is a valid contract (the contract tests parse it)")
    })
}

/// The operations, in contract order.
pub fn operations() -> &'static [OperationSpec] {
    &contract().operations
}

/// One operation by its logical name.
pub fn operation(name: &str) -> Option<&'static OperationSpec> {
    operations().iter().find(|op| op.name == name)
}

/// The error table: `{code, http_status, meaning}` rows.
pub fn errors() -> &'static [ErrorSpec] {
    &contract().errors
}

fn array(v: &Value) -> &[Value] {
    v.as_array().map(Vec::as_slice).unwrap_or(&[])
}

fn text(v: &Value) -> &str {
    v.as_str().unwrap_or("")
}

/// The `required` names of a JSON Schema.
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

/// Pretty JSON with sorted keys and a final newline, as the artefacts are
/// written.
fn pretty(v: &Value) -> String {
    // Serialising a `Value` cannot fail.
    let mut s = serde_json::to_string_pretty(&sorted(v)).unwrap_or_default();
    s.push('\n');
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_contract_parses_and_names_four_operations() {
        let names: Vec<&str> = operations().iter().map(|o| o.name.as_str()).collect();
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
    fn a_contract_field_the_types_do_not_know_is_refused() {
        let mut v: Value = serde_json::from_str(CONTRACT_JSON).unwrap();
        assert!(serde_json::from_value::<Contract>(v.clone()).is_ok());
        v["operations"][0]["http"]["surprise"] = Value::Bool(true);
        assert!(serde_json::from_value::<Contract>(v).is_err());
    }
}
