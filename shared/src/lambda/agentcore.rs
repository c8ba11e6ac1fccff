//! AgentCore Gateway targets and direct invocations: the client context,
//! the tool name, the interceptor's principal and the tool call.

use super::*;

/// The client-context key of the AgentCore tool name.
pub const TOOL_NAME_KEY: &str = "bedrockAgentCoreToolName";
/// The client-context key of the headers an AgentCore gateway propagates.
pub const PROPAGATED_HEADERS_KEY: &str = "bedrockAgentCorePropagatedHeaders";
/// What every client-context key of an AgentCore gateway begins with
/// (lower-cased).
const GATEWAY_KEY_PREFIX: &str = "bedrockagentcore";
/// The separator between the gateway target and the tool in a tool name.
pub const TOOL_SEPARATOR: &str = "___";

/// The invocation kinds a function tells apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventKind {
    ApiGatewayV2,
    AgentCore,
    Direct,
}

impl EventKind {
    pub fn as_str(self) -> &'static str {
        match self {
            EventKind::ApiGatewayV2 => "apigw_v2",
            EventKind::AgentCore => "agentcore",
            EventKind::Direct => "direct",
        }
    }

    /// AgentCore when the client context carries any of the gateway's keys
    /// (`custom.bedrockAgentCore…`: its tool name, target, propagated
    /// headers), whether or not the tool name is usable; else API Gateway
    /// for the v2 envelope (`version` `"2.0"` and a `requestContext.http`
    /// object); else a direct invocation. An event body alone never makes
    /// an AgentCore call an API Gateway one, and neither does a gateway's
    /// context that lacks the tool name: the gateway passes a client's
    /// arguments through as the event, so an API-Gateway-shaped argument
    /// object must never be read as an authorizer's word.
    pub fn of(context: &AgentCoreContext, event: Option<&Value>) -> EventKind {
        if context.from_gateway {
            return EventKind::AgentCore;
        }
        let Some(event) = event else {
            return EventKind::Direct;
        };
        let http = event
            .pointer("/requestContext/http")
            .is_some_and(Value::is_object);
        if http && event.get("version").and_then(Value::as_str) == Some("2.0") {
            EventKind::ApiGatewayV2
        } else {
            EventKind::Direct
        }
    }
}

/// What the client context of an invocation says, read loosely.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AgentCoreContext {
    /// Whether `custom` holds any key of the gateway's
    /// (`bedrockAgentCore…`, any case), of any value.
    pub from_gateway: bool,
    /// `custom.bedrockAgentCoreToolName`: `None` when absent or null,
    /// `Some(Err(()))` when present but not a string.
    pub tool_name: Option<Result<String, ()>>,
    /// The propagated [`principal::HEADER`], when present (a value that is
    /// not one string reads as empty, which no check accepts).
    pub principal: Option<String>,
    /// The propagated [`principal::PROOF_HEADER`], likewise.
    pub proof: Option<String>,
}

impl AgentCoreContext {
    /// Reads a raw client context. Never fails: anything that is not the
    /// expected shape (not JSON, `custom` null or not an object, values of
    /// any type) reads as absent. Keys match case-insensitively, since the
    /// gateway's documentation spells them both `bedrockAgentCore...` and
    /// `bedrockagentcore...`.
    pub fn parse(raw: Option<&str>) -> AgentCoreContext {
        let context = raw
            .and_then(|s| serde_json::from_str::<Value>(s).ok())
            .unwrap_or(Value::Null);
        let Some(custom) = object(context.get("custom")) else {
            return AgentCoreContext::default();
        };
        let tool_name = match lookup(&custom, TOOL_NAME_KEY) {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(Ok(s.clone())),
            Some(_) => Some(Err(())),
        };
        let headers = object(lookup(&custom, PROPAGATED_HEADERS_KEY));
        let header = |name: &str| {
            headers.as_ref().and_then(|h| match lookup(h, name) {
                None | Some(Value::Null) => None,
                Some(Value::String(s)) => Some(s.clone()),
                Some(Value::Array(a)) if a.len() == 1 => {
                    Some(a[0].as_str().unwrap_or_default().to_string())
                }
                Some(_) => Some(String::new()),
            })
        };
        AgentCoreContext {
            from_gateway: custom.keys().any(|k| {
                k.get(..GATEWAY_KEY_PREFIX.len())
                    .is_some_and(|p| p.eq_ignore_ascii_case(GATEWAY_KEY_PREFIX))
            }),
            tool_name,
            principal: header(principal::HEADER),
            proof: header(principal::PROOF_HEADER),
        }
    }

    /// The tool part of a gateway tool name: after the first `___`, or the
    /// whole name when it has no target prefix.
    pub fn tool(full: &str) -> &str {
        full.split_once(TOOL_SEPARATOR)
            .map_or(full, |(_, tool)| tool)
    }
}

/// An object, or a JSON string that holds one (both shapes have been seen
/// for propagated values).
fn object(v: Option<&Value>) -> Option<Map<String, Value>> {
    match v? {
        Value::Object(m) => Some(m.clone()),
        Value::String(s) => match serde_json::from_str::<Value>(s) {
            Ok(Value::Object(m)) => Some(m),
            _ => None,
        },
        _ => None,
    }
}

fn lookup<'a>(m: &'a Map<String, Value>, key: &str) -> Option<&'a Value> {
    m.get(key).or_else(|| {
        m.iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(key))
            .map(|(_, v)| v)
    })
}

impl Handler {
    /// The principal of an AgentCore call: the interceptor's principal with
    /// its proof for this tool; when the call names none, anonymous (where
    /// allowed) only on a deployment without an interceptor (no proof key):
    /// behind one, every tool call it let through carries a principal.
    async fn agentcore_principal(
        &self,
        context: &AgentCoreContext,
        tool_name: &str,
        request_id: &str,
        budget: Duration,
    ) -> Result<Principal, Error> {
        let refuse = |reason: &str| {
            tracing::warn!(request_id, reason, "AgentCore principal refused");
            unauthenticated()
        };
        let Some(claimed) = &context.principal else {
            return match self.proof_key.expected() {
                true => Err(refuse(proof::Refusal::Missing.as_str())),
                false => self.anonymous(),
            };
        };
        let principal = Principal::parse(claimed).map_err(|_| refuse("malformed_principal"))?;
        // A key still to be read is read within the invocation's budget:
        // a slow Secrets Manager makes the call a 503 in time, never an
        // answer past the invocation's deadline.
        let key = tokio::time::timeout(budget, self.proof_key.get())
            .await
            .map_err(|_| {
                tracing::warn!(
                    request_id,
                    "principal proof key: the invocation's deadline passed"
                );
                Error::Unavailable("principal proof key".into())
            })??
            .ok_or_else(|| refuse(proof::Refusal::NoKey.as_str()))?;
        let proof = context
            .proof
            .as_deref()
            .ok_or_else(|| refuse(proof::Refusal::Missing.as_str()))?;
        key.verify(&principal, tool_name, proof, unix_now())
            .map_err(|r| refuse(r.as_str()))?;
        Ok(principal)
    }

    /// An AgentCore tool call or a direct invocation: the flat arguments of
    /// this function's operation.
    pub(super) async fn tool_call(
        &self,
        kind: EventKind,
        args: Result<Value, Error>,
        context: &AgentCoreContext,
        request_id: &str,
        budget: Duration,
    ) -> Result<Value, Error> {
        let started = Instant::now();
        let principal = match (kind, &context.tool_name) {
            (EventKind::AgentCore, Some(Ok(full))) => {
                let tool = AgentCoreContext::tool(full);
                if tool != self.op.name() {
                    return Err(Error::Invalid {
                        code: Code::InvalidArgument,
                        field: None,
                        message: format!(
                            "this function serves the tool `{}`, not `{}`",
                            self.op.name(),
                            crate::error::shown_key(tool),
                        ),
                    });
                }
                self.agentcore_principal(context, full, request_id, budget)
                    .await?
            }
            (EventKind::AgentCore, unusable) => {
                return Err(Error::Invalid {
                    code: Code::InvalidArgument,
                    field: None,
                    message: match unusable {
                        Some(_) => format!("the client context's `{TOOL_NAME_KEY}` is not a string"),
                        None => format!(
                            "the client context carries an AgentCore gateway's keys but no `{TOOL_NAME_KEY}`"
                        ),
                    },
                })
            }
            // A direct invocation names no one.
            _ => self.anonymous()?,
        };
        let args = match args? {
            Value::Object(m) => Value::Object(m),
            _ => {
                return Err(Error::invalid_json(
                    "the tool arguments must be a JSON object",
                ))
            }
        };
        // The same request deadline as the router's (API Gateway).
        let deadline = Duration::from_millis(self.ctx.profile.request_deadline_ms);
        let attempt = || {
            crate::db::within(
                deadline,
                "request",
                caught(self.op.call(&self.ctx, &principal, &args)),
            )
        };
        let unavailable = |r: &Result<Value, Error>| matches!(r, Err(Error::Unavailable(_)));
        // What the principal's check left of the budget.
        let budget = budget.saturating_sub(started.elapsed());
        let out = self
            .within_budget(budget, request_id, attempt, unavailable)
            .await
            .unwrap_or_else(|| Err(Error::Unavailable("invocation deadline reached".into())));
        if let Err(e @ (Error::Internal(_) | Error::Unavailable(_))) = &out {
            tracing::error!(request_id, operation = self.op.name(), error = %e, "operation failed");
        }
        out
    }
}
