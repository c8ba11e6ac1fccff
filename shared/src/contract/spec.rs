//! The contract document as types: `shared/contract/tools.json`
//! deserialised once. The JSON Schema fragments (each operation's input
//! and output schemas, the error envelope, the meta routes' query
//! parameters) stay JSON: they are published as they are written, and the
//! projections walk them as schemas.
//!
//! Unknown fields are refused, so a field added to the contract is either
//! typed here or the build's contract tests fail.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The whole contract.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Contract {
    /// What the file is, for its readers.
    #[serde(rename = "$comment")]
    pub comment: String,
    pub contract_version: String,
    pub service: Service,
    /// Routes that are not operations (the tool listing, the OpenAPI document).
    pub meta_routes: Vec<MetaRoute>,
    /// The four operations, in contract order.
    pub operations: Vec<OperationSpec>,
    /// The JSON Schema of every error body.
    pub error_envelope: Value,
    /// The error table.
    pub errors: Vec<ErrorSpec>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Service {
    pub name: String,
    pub title: String,
    pub description: String,
}

/// A route of the HTTP API that is not an operation.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MetaRoute {
    pub name: String,
    pub method: String,
    pub route: String,
    pub description: String,
    /// Query parameters by name, each a JSON Schema.
    pub query: Option<Map<String, Value>>,
}

/// One operation.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OperationSpec {
    /// The logical name (`search_products`).
    pub name: String,
    pub capability: String,
    pub title: String,
    pub description: String,
    pub read_only: bool,
    pub idempotent: bool,
    pub http: HttpRoute,
    /// The flat logical arguments, as a JSON Schema.
    pub input_schema: Value,
    pub output_schema: Value,
    /// Logical arguments of an example call.
    pub example: Option<Map<String, Value>>,
}

/// An operation's HTTP route and where each logical argument sits in it.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HttpRoute {
    pub method: String,
    /// The route with `{name}` path parameters.
    pub route: String,
    /// Every logical argument, in contract order.
    pub arguments: Vec<ArgumentPlace>,
}

/// Where one logical argument sits in an HTTP request.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ArgumentPlace {
    /// The logical argument.
    pub argument: String,
    /// `path`, `body` or `body.filters`.
    #[serde(rename = "in")]
    pub place: String,
    /// Its name there.
    pub name: String,
}

/// One row of the error table.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ErrorSpec {
    pub code: String,
    pub http_status: u16,
    pub meaning: String,
}

impl OperationSpec {
    /// `METHOD /route`.
    pub fn route(&self) -> String {
        format!("{} {}", self.http.method, self.http.route)
    }
}
