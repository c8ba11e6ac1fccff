//! The AgentCore Gateway targets: one Lambda target per operation, whose
//! tool is that operation's AgentCore tool ([`super::tools`]), as
//! `CreateGatewayTarget` requests (`references/agentcore-targets.json`) and
//! as the `AWS::BedrockAgentCore::GatewayTarget` resources of
//! `template.yaml`, spliced between its markers.

use super::tools::agentcore_tools;
use super::{array, text};
use serde_json::{json, Map, Value};

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
