//! The AgentCore Gateway REQUEST interceptor: an identity adapter, not an
//! operation (feature `lambda`; the `identity-interceptor` binary).
//!
//! The gateway's inbound JWT authorizer validates the caller's bearer token
//! but hands a Lambda target nothing of it. The gateway runs one REQUEST
//! interceptor Lambda before each target call, and with
//! `inputConfiguration.passRequestHeaders: true` that Lambda receives the
//! request headers, the bearer token included (AgentCore developer guide,
//! *Using interceptors with Gateway* → *Configuration*). This interceptor
//! checks the token's signature against the issuer's published keys
//! ([`crate::jwt`]), reads its `iss` and `sub`, makes the principal
//! `jwt:<iss>#<sub>` ([`Principal::jwt`]), and sets it for the target in the
//! propagated headers [`principal::HEADER`] and [`principal::PROOF_HEADER`]
//! — replacing whatever the client sent under those names — with a proof
//! only it and the functions can make ([`principal::proof`]).
//!
//! # The contract (AgentCore developer guide, *Types of interceptors*)
//!
//! Input (`interceptorInputVersion` `"1.0"`, MCP targets):
//!
//! ```json
//! {"interceptorInputVersion": "1.0",
//!  "mcp": {"rawGatewayRequest": {"body": "<raw request body>"},
//!          "gatewayRequest": {"path": "/mcp", "httpMethod": "POST",
//!                             "headers": {"Authorization": "Bearer <token>", ...},
//!                             "body": {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
//!                                      "params": {"name": "<target>___<tool>", "arguments": {...}}}}}}
//! ```
//!
//! (`headers` only with `passRequestHeaders: true`; header names may arrive
//! in any case, so they are matched case-insensitively.)
//!
//! Output: `interceptorOutputVersion` must be `"1.0"`; `mcp.transformedGatewayRequest`
//! (`headers`, `body`) is what the gateway sends on to the target, and when
//! the output holds `mcp.transformedGatewayResponse` (`statusCode`, `body`)
//! the gateway answers the caller with it at once, without calling the
//! target. Headers the interceptor sets reach a target when the target
//! allow-lists them (`metadataConfiguration.allowedRequestHeaders`; *Header
//! propagation with Gateway*: "the pre-allowlisted headers provided in the
//! invoke tool call to gateway or sent from custom interceptor lambda, will
//! be forwarded"). A Lambda target finds them in its client context,
//! `custom.bedrockAgentCorePropagatedHeaders`.
//!
//! # What it does
//!
//! * `tools/call` with a usable token: forwards the request body unchanged
//!   with the two headers set.
//! * `tools/call` without one (no `Authorization` bearer token, a token
//!   that does not decode, a signature that is not the issuer's, no
//!   `iss`/`sub`, a malformed one, an expired one, an issuer other than
//!   `MOSAIC_JWT_ISSUER`, an audience other than `MOSAIC_JWT_AUDIENCE`'s):
//!   answers
//!   at once with an MCP tool error (`isError: true`, the `unauthenticated`
//!   envelope as text); the target is not called.
//! * Any other method (`initialize`, `tools/list`, ...): forwarded
//!   unchanged; they reach no function.
//!
//! The gateway's inbound authorizer has checked the token before the
//! interceptor runs, and only the gateway's role may invoke this function
//! (its resource policy). The signature, issuer, audience and expiry are
//! checked again all the same: within one account an identity policy can let
//! others invoke it too, and a proof must need a token the issuer signed,
//! not merely claims someone wrote. The token is never logged.
//!
//! # Configuration
//!
//! | Variable | Meaning |
//! |---|---|
//! | `MOSAIC_PRINCIPAL_PROOF_SECRET_ARN` / `MOSAIC_PRINCIPAL_PROOF_KEY` | The proof key, as for the functions ([`crate::lambda`]); required. |
//! | `MOSAIC_PRINCIPAL_PROOF_TTL_SECONDS` | A proof's lifetime (default [`proof::DEFAULT_TTL`], 5..=900). |
//! | `MOSAIC_JWT_ISSUER` | The only issuer accepted; required. |
//! | `MOSAIC_JWT_AUDIENCE` | The audiences (or app clients) accepted, comma-separated, as the gateway's authorizer allows them; required. |
//! | `MOSAIC_JWT_AUDIENCE_CLAIM` | Which claim holds them: `aud` (default; a string or an array) or `client_id` (Amazon Cognito access tokens). |
//! | `MOSAIC_JWT_DISCOVERY_URL` | Where the issuer's keys are found: its OpenID discovery document (`jwks_uri`); default `<MOSAIC_JWT_ISSUER>/.well-known/openid-configuration`, the gateway authorizer's own. |
//! | `MOSAIC_JWT_JWKS_URL` | The issuer's JWK Set URL outright, instead of discovery. |

use crate::error::Error;
use crate::jwt::{Jwks, Source};
use crate::lambda::{self, Invocation, Invoke, ProofKeySetting, Reply};
use crate::principal::{self, proof, Principal};
use serde_json::{json, Map, Value};
use std::time::{SystemTime, UNIX_EPOCH};

/// The interceptor contract version this adapter reads and writes.
pub const VERSION: &str = "1.0";

/// The interceptor's settings, read once per container.
#[derive(Debug)]
pub struct Interceptor {
    key: proof::Key,
    ttl: u64,
    issuer: String,
    audience: Audience,
    keys: Jwks,
}

/// Which tokens of the issuer are for this gateway: the claim the gateway's
/// authorizer matches and the values it allows (its `allowedAudience` or
/// `allowedClients`). An issuer signs tokens for every application it
/// serves; a token another application was given is none of this one's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Audience {
    /// `aud` (a string or an array of strings) or `client_id` (a string).
    pub claim: AudienceClaim,
    pub allowed: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AudienceClaim {
    Aud,
    ClientId,
}

impl Audience {
    /// Whether `claims` name one of the allowed values in the claim.
    fn admits(&self, claims: &Map<String, Value>) -> bool {
        let allowed = |v: &Value| {
            v.as_str()
                .is_some_and(|a| self.allowed.iter().any(|x| x == a))
        };
        match (self.claim, claims.get(self.claim_name())) {
            (AudienceClaim::Aud, Some(Value::Array(values))) => values.iter().any(allowed),
            (_, Some(v)) => allowed(v),
            (_, None) => false,
        }
    }

    fn claim_name(&self) -> &'static str {
        match self.claim {
            AudienceClaim::Aud => "aud",
            AudienceClaim::ClientId => "client_id",
        }
    }
}

impl Interceptor {
    /// Accepts tokens of `issuer` for `audience` signed by one of `keys`.
    pub fn new(key: proof::Key, ttl: u64, issuer: String, audience: Audience, keys: Jwks) -> Self {
        Interceptor {
            key,
            ttl,
            issuer,
            audience,
            keys,
        }
    }

    /// Reads the environment and loads the key.
    pub async fn from_env() -> Result<Self, String> {
        let get = |k: &str| std::env::var(k).ok();
        let set = |k: &str| crate::profile::setting(get, k);
        let key = ProofKeySetting::from_lookup(get)?.load().await?.ok_or(
            "no principal proof key: set MOSAIC_PRINCIPAL_PROOF_SECRET_ARN (or \
             MOSAIC_PRINCIPAL_PROOF_KEY)",
        )?;
        let ttl = match set("MOSAIC_PRINCIPAL_PROOF_TTL_SECONDS") {
            None => proof::DEFAULT_TTL,
            Some(s) => s
                .parse::<u64>()
                .ok()
                .filter(|t| (5..=proof::MAX_TTL).contains(t))
                .ok_or_else(|| {
                    format!(
                        "MOSAIC_PRINCIPAL_PROOF_TTL_SECONDS={s:?}: use 5..{} seconds",
                        proof::MAX_TTL
                    )
                })?,
        };
        let issuer = set("MOSAIC_JWT_ISSUER").ok_or(
            "no issuer: set MOSAIC_JWT_ISSUER (the interceptor accepts only tokens its keys signed)",
        )?;
        crate::principal::validate(crate::principal::Part::Issuer, &issuer)
            .map_err(|_| format!("MOSAIC_JWT_ISSUER={issuer:?} is not an issuer URL"))?;
        let allowed: Vec<String> = set("MOSAIC_JWT_AUDIENCE")
            .unwrap_or_default()
            .split(',')
            .map(|a| a.trim().to_string())
            .filter(|a| !a.is_empty())
            .collect();
        if allowed.is_empty() {
            return Err(
                "no audience: set MOSAIC_JWT_AUDIENCE (the gateway authorizer's \
                        allowed audiences or clients, comma-separated)"
                    .into(),
            );
        }
        let claim = match set("MOSAIC_JWT_AUDIENCE_CLAIM").as_deref() {
            None | Some("aud") => AudienceClaim::Aud,
            Some("client_id") => AudienceClaim::ClientId,
            Some(other) => {
                return Err(format!(
                    "MOSAIC_JWT_AUDIENCE_CLAIM={other:?}: use aud or client_id"
                ))
            }
        };
        let source = match (set("MOSAIC_JWT_JWKS_URL"), set("MOSAIC_JWT_DISCOVERY_URL")) {
            (Some(url), _) => Source::Url(url),
            (None, url) => Source::Discovery {
                url: url.unwrap_or_else(|| {
                    format!(
                        "{}/.well-known/openid-configuration",
                        issuer.trim_end_matches('/')
                    )
                }),
                issuer: issuer.clone(),
            },
        };
        let keys = Jwks::remote(source)?;
        let audience = Audience { claim, allowed };
        Ok(Interceptor::new(key, ttl, issuer, audience, keys))
    }

    /// The interceptor's answer to one gateway request, at Unix time `now`.
    /// `Err` only for input that is not the interceptor contract at all.
    pub async fn intercept(&self, input: &Value, now: u64) -> Result<Value, String> {
        let request = input
            .pointer("/mcp/gatewayRequest")
            .filter(|r| r.is_object())
            .ok_or("not an AgentCore interceptor input: no mcp.gatewayRequest")?;
        let body = request.get("body").cloned().unwrap_or(Value::Null);
        // One JSON-RPC request: a batch (an array) would carry tool calls
        // past the identity this sets for one.
        if !body.is_object() {
            tracing::warn!("request refused: the body is not one JSON-RPC request");
            return Ok(refuse(&body));
        }
        if body.get("method").and_then(Value::as_str) != Some("tools/call") {
            return Ok(forward(body, None));
        }
        let tool = body
            .pointer("/params/name")
            .and_then(Value::as_str)
            .filter(|t| !t.is_empty() && t.len() <= 256 && !t.contains('\n'));
        let identity = match tool {
            None => Err("no tool name"),
            Some(tool) => {
                self.principal(request.get("headers"), now)
                    .await
                    .map(|(principal, exp)| {
                        // No longer than the token itself is good for.
                        let proof = self.key.sign(&principal, tool, (now + self.ttl).min(exp));
                        (principal, proof)
                    })
            }
        };
        match identity {
            Ok((principal, proof)) => {
                let mut headers = Map::new();
                headers.insert(principal::HEADER.into(), principal.as_str().into());
                headers.insert(principal::PROOF_HEADER.into(), proof.into());
                Ok(forward(body, Some(headers)))
            }
            Err(reason) => {
                tracing::warn!(reason, "tool call refused: no usable caller identity");
                Ok(refuse(&body))
            }
        }
    }

    /// `jwt:<iss>#<sub>` from the request's bearer token, once its
    /// signature is found to be the issuer's, with the token's expiry.
    async fn principal(
        &self,
        headers: Option<&Value>,
        now: u64,
    ) -> Result<(Principal, u64), &'static str> {
        let headers = headers
            .and_then(Value::as_object)
            .ok_or("no request headers (passRequestHeaders)")?;
        // Exactly one: with two spellings of the name the gateway's
        // authorizer may have checked the other one.
        let mut named = headers
            .iter()
            .filter(|(k, _)| k.eq_ignore_ascii_case("authorization"));
        let auth = match (named.next(), named.next()) {
            (Some((_, v)), None) => v
                .as_str()
                .ok_or("the Authorization header is not a string")?,
            (None, _) => return Err("no Authorization header"),
            (Some(_), Some(_)) => return Err("more than one Authorization header"),
        };
        let token = auth
            .strip_prefix("Bearer ")
            .or_else(|| auth.strip_prefix("bearer "))
            .ok_or("the Authorization header is not a bearer token")?;
        let claims = self
            .keys
            .verify(token.trim())
            .await
            .map_err(|r| r.reason())?;
        let text = |k: &str| claims.get(k).and_then(Value::as_str);
        let iss = text("iss").ok_or("the token has no iss")?;
        let sub = text("sub").ok_or("the token has no sub")?;
        if iss != self.issuer {
            return Err("the token's issuer is not MOSAIC_JWT_ISSUER");
        }
        if !self.audience.admits(&claims) {
            return Err("the token is not for this gateway's audience");
        }
        let exp = match claims.get("exp").and_then(Value::as_u64) {
            Some(exp) if exp <= now => return Err("the token has expired"),
            Some(exp) => exp,
            None => return Err("the token has no exp"),
        };
        // Absent, or a time no later than the clock allows for.
        if let Some(nbf) = claims.get("nbf") {
            if nbf.as_u64().is_none_or(|nbf| nbf > now + proof::CLOCK_SKEW) {
                return Err("the token is not valid yet");
            }
        }
        let principal =
            Principal::jwt(iss, sub).map_err(|_| "the token's iss or sub is malformed")?;
        Ok((principal, exp))
    }
}

/// Sends the request on to the target, with `headers` when given.
fn forward(body: Value, headers: Option<Map<String, Value>>) -> Value {
    let mut request = json!({ "body": body });
    if let Some(h) = headers {
        request["headers"] = Value::Object(h);
    }
    json!({
        "interceptorOutputVersion": VERSION,
        "mcp": { "transformedGatewayRequest": request },
    })
}

/// Answers the caller at once with an MCP tool error: the `unauthenticated`
/// envelope as the result's text, `isError: true`.
fn refuse(body: &Value) -> Value {
    let envelope = Error::unauthenticated("the caller's identity could not be established").body();
    json!({
        "interceptorOutputVersion": VERSION,
        "mcp": { "transformedGatewayResponse": {
            "statusCode": 200,
            "body": {
                "jsonrpc": "2.0",
                "id": body.get("id").cloned().unwrap_or(Value::Null),
                "result": {
                    "isError": true,
                    "content": [{"type": "text", "text": envelope.to_string()}],
                },
            },
        }},
    })
}

#[async_trait::async_trait]
impl Invoke for Interceptor {
    async fn invoke(&self, inv: &Invocation) -> Reply {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        let out = serde_json::from_slice::<Value>(&inv.event)
            .map_err(|e| format!("the event is not JSON: {e}"));
        let out = match out {
            Ok(input) => self.intercept(&input, now).await,
            Err(e) => Err(e),
        };
        let reply = match out {
            Ok(v) => Reply::Response(v),
            // Not the contract: fail the invocation, so the gateway cannot
            // call the target without this interceptor's headers.
            Err(message) => Reply::Failure {
                error_type: "InvalidInterceptorInput".into(),
                error_message: message,
            },
        };
        let outcome = match &reply {
            Reply::Response(v) if v.pointer("/mcp/transformedGatewayResponse").is_some() => {
                "refused"
            }
            Reply::Response(_) => "forwarded",
            Reply::Failure { .. } => "failed",
        };
        tracing::info!(request_id = %inv.request_id, outcome, "interception");
        reply
    }
}

/// The `identity-interceptor` binary: serves the interceptor until the
/// Runtime API goes away.
pub async fn run() -> Result<(), lambda::BoxError> {
    lambda::serve("identity-interceptor", async {
        let interceptor = Interceptor::from_env().await?;
        tracing::info!(
            ttl_seconds = interceptor.ttl,
            issuer = %interceptor.issuer,
            audience_claim = interceptor.audience.claim_name(),
            keys = ?interceptor.keys.source(),
            "ready"
        );
        Ok(interceptor)
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    const ISS: &str = "https://cognito-idp.us-east-1.amazonaws.com/us-east-1_Mosaic0Ex";

    fn key() -> proof::Key {
        proof::Key::new("interceptor-unit-test-key-0123456789abcdef").unwrap()
    }

    /// A token the test issuer signed.
    fn token(claims: Value) -> String {
        crate::jwt::tests::signed(&claims)
    }

    /// The claims as a client would forge them: the issuer's header, no
    /// signature of the issuer's.
    fn unsigned(claims: Value) -> String {
        let enc = |v: &Value| {
            use base64::Engine as _;
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string())
        };
        format!(
            "{}.{}.c2lnbmF0dXJl",
            enc(&json!({"alg": "RS256", "kid": "test-rsa-1"})),
            enc(&claims)
        )
    }

    fn interceptor() -> Interceptor {
        let keys =
            crate::jwt::KeySet::from_jwks(&serde_json::from_str(crate::jwt::tests::JWKS).unwrap())
                .unwrap();
        let audience = Audience {
            claim: AudienceClaim::Aud,
            allowed: vec!["mosaic-app".into()],
        };
        Interceptor::new(key(), 60, ISS.into(), audience, Jwks::fixed(keys))
    }

    fn call(auth: Option<String>, client_principal: &str) -> Value {
        let mut headers = json!({"Content-Type": "application/json",
            "X-Mosaic-Principal": client_principal,
            "x-mosaic-principal-proof": "v1.99999999999.00"});
        if let Some(a) = auth {
            headers["Authorization"] = Value::from(a);
        }
        json!({"interceptorInputVersion": "1.0", "mcp": {
            "rawGatewayRequest": {"body": "{}"},
            "gatewayRequest": {"path": "/mcp", "httpMethod": "POST", "headers": headers,
                "body": {"jsonrpc": "2.0", "id": 9, "method": "tools/call",
                    "params": {"name": "mosaic-explain-retrieval___explain_retrieval",
                        "arguments": {"retrieval_scope_id": "e"}}}}}})
    }

    /// The interceptor's answer at Unix time 1000 to a call bearing a token
    /// of `u-1` that the issuer signed and ends at `exp`, with the client's
    /// own principal header naming a victim.
    async fn intercepted(exp: u64) -> Value {
        let bearer = format!(
            "Bearer {}",
            token(json!({"iss": ISS, "aud": "mosaic-app", "sub": "u-1", "exp": exp}))
        );
        interceptor()
            .intercept(&call(Some(bearer), "jwt:x#victim"), 1000)
            .await
            .unwrap()
    }

    #[tokio::test]
    async fn the_principal_comes_from_the_token_and_replaces_the_clients() {
        let out = intercepted(2000).await;
        assert_eq!(out["interceptorOutputVersion"], "1.0");
        let req = &out["mcp"]["transformedGatewayRequest"];
        let p = Principal::jwt(ISS, "u-1").unwrap();
        assert_eq!(req["headers"][principal::HEADER], p.as_str());
        let proof = req["headers"][principal::PROOF_HEADER].as_str().unwrap();
        let tool = "mosaic-explain-retrieval___explain_retrieval";
        assert_eq!(key().verify(&p, tool, proof, 1000), Ok(()));
        assert_eq!(
            key().verify(&p, tool, proof, 1061),
            Err(proof::Refusal::Expired)
        );
        assert_eq!(
            req["body"]["params"]["arguments"]["retrieval_scope_id"],
            "e"
        );
        assert_eq!(req["headers"].as_object().unwrap().len(), 2, "{req}");
    }

    #[tokio::test]
    async fn a_proof_lasts_no_longer_than_the_token_it_was_made_from() {
        let tool = "mosaic-explain-retrieval___explain_retrieval";
        let p = Principal::jwt(ISS, "u-1").unwrap();
        // The token ends 5 s from now, well inside the proof's 60 s.
        let out = intercepted(1005).await;
        let req = &out["mcp"]["transformedGatewayRequest"];
        let proof = req["headers"][principal::PROOF_HEADER].as_str().unwrap();
        assert!(proof.starts_with("v1.1005."), "{proof}");
        assert_eq!(key().verify(&p, tool, proof, 1004), Ok(()));
        assert_eq!(
            key().verify(&p, tool, proof, 1006),
            Err(proof::Refusal::Expired)
        );
    }

    #[tokio::test]
    async fn a_call_without_a_usable_token_is_answered_with_a_tool_error() {
        let i = interceptor();
        let ok = json!({"iss": ISS, "aud": "mosaic-app", "sub": "u-1", "exp": 2000});
        let mut missing_sub = ok.clone();
        missing_sub.as_object_mut().unwrap().remove("sub");
        let mut other_issuer = ok.clone();
        other_issuer["iss"] = "https://evil.example".into();
        let mut expired = ok.clone();
        expired["exp"] = 999.into();
        let mut spaced = ok.clone();
        spaced["sub"] = "a b".into();
        // Two spellings of the name, the second with a forged subject.
        let mut two = call(Some(format!("Bearer {}", token(ok))), "jwt:x#victim");
        let forged = token(json!({"iss": ISS, "aud": "mosaic-app", "sub": "victim", "exp": 2000}));
        // Claims the issuer never signed, and a token signed, then altered.
        let claims_only =
            unsigned(json!({"iss": ISS, "aud": "mosaic-app", "sub": "victim", "exp": 2000}));
        let good = token(json!({"iss": ISS, "aud": "mosaic-app", "sub": "u-1", "exp": 2000}));
        let (head, rest) = good.split_once('.').unwrap();
        let altered = format!(
            "{head}.{}.{}",
            unsigned(json!({"iss": ISS, "aud": "mosaic-app", "sub": "victim", "exp": 2000}))
                .split('.')
                .nth(1)
                .unwrap(),
            rest.split_once('.').unwrap().1
        );
        two["mcp"]["gatewayRequest"]["headers"]["authorization"] =
            Value::from(format!("Bearer {forged}"));
        let inputs = [
            None,
            Some("Basic dTpw".to_string()),
            Some("Bearer not-a-jwt".to_string()),
            Some(format!("Bearer {}", token(missing_sub))),
            Some(format!("Bearer {}", token(other_issuer))),
            Some(format!("Bearer {}", token(expired))),
            Some(format!("Bearer {}", token(spaced))),
            Some(format!("Bearer {claims_only}")),
            Some(format!("Bearer {altered}")),
        ]
        .map(|auth| call(auth, "jwt:x#victim"));
        for input in inputs.into_iter().chain([two]) {
            let headers = &input["mcp"]["gatewayRequest"]["headers"];
            let out = i.intercept(&input, 1000).await.unwrap();
            let resp = &out["mcp"]["transformedGatewayResponse"];
            assert_eq!(resp["body"]["id"], 9, "{headers}");
            assert_eq!(resp["body"]["result"]["isError"], true, "{headers}");
            let text = resp["body"]["result"]["content"][0]["text"]
                .as_str()
                .unwrap();
            let envelope: Value = serde_json::from_str(text).unwrap();
            assert_eq!(envelope["error"]["code"], "unauthenticated");
            assert!(out["mcp"].get("transformedGatewayRequest").is_none());
        }
    }

    #[tokio::test]
    async fn a_token_the_issuer_gave_another_application_is_refused() {
        let i = interceptor();
        let forwarded = |out: &Value| out["mcp"].get("transformedGatewayRequest").is_some();
        for (aud, ok) in [
            (json!("mosaic-app"), true),
            (json!(["other-app", "mosaic-app"]), true),
            (json!("other-app"), false),
            (json!(["other-app"]), false),
            (json!([]), false),
            (json!(7), false),
            (Value::Null, false),
        ] {
            let mut claims = json!({"iss": ISS, "sub": "u-1", "exp": 2000});
            if !aud.is_null() {
                claims["aud"] = aud.clone();
            }
            let bearer = Some(format!("Bearer {}", token(claims)));
            let out = i.intercept(&call(bearer, "x"), 1000).await.unwrap();
            assert_eq!(forwarded(&out), ok, "aud {aud}");
        }
        // Matched on client_id (Amazon Cognito access tokens carry no aud).
        let keys =
            crate::jwt::KeySet::from_jwks(&serde_json::from_str(crate::jwt::tests::JWKS).unwrap())
                .unwrap();
        let by_client = Interceptor::new(
            key(),
            60,
            ISS.into(),
            Audience {
                claim: AudienceClaim::ClientId,
                allowed: vec!["client-1".into()],
            },
            Jwks::fixed(keys),
        );
        for (claims, ok) in [
            (
                json!({"iss": ISS, "sub": "u", "exp": 2000, "client_id": "client-1"}),
                true,
            ),
            (
                json!({"iss": ISS, "sub": "u", "exp": 2000, "client_id": "client-2"}),
                false,
            ),
            (
                json!({"iss": ISS, "sub": "u", "exp": 2000, "aud": "client-1"}),
                false,
            ),
        ] {
            let bearer = Some(format!("Bearer {}", token(claims.clone())));
            let out = by_client.intercept(&call(bearer, "x"), 1000).await.unwrap();
            assert_eq!(forwarded(&out), ok, "{claims}");
        }
    }

    #[tokio::test]
    async fn other_methods_pass_and_garbage_fails() {
        let i = interceptor();
        let list = json!({"interceptorInputVersion": "1.0", "mcp": {"gatewayRequest": {
            "body": {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}}}});
        let out = i.intercept(&list, 0).await.unwrap();
        assert_eq!(
            out["mcp"]["transformedGatewayRequest"]["body"]["method"],
            "tools/list"
        );
        assert!(out["mcp"]["transformedGatewayRequest"]
            .get("headers")
            .is_none());
        for bad in [json!({}), json!([]), json!({"mcp": {"gatewayRequest": 3}})] {
            assert!(i.intercept(&bad, 0).await.is_err(), "{bad}");
        }
    }

    #[tokio::test]
    async fn a_batch_or_a_token_not_valid_yet_is_refused() {
        let i = interceptor();
        let bearer = |claims: Value| Some(format!("Bearer {}", token(claims)));
        let refused = |out: &Value| {
            out["mcp"]["transformedGatewayResponse"]["body"]["result"]["isError"] == true
                && out["mcp"].get("transformedGatewayRequest").is_none()
        };
        // A batch of tool calls, with a good token.
        let mut batch = call(
            bearer(json!({"iss": ISS, "aud": "mosaic-app", "sub": "u-1", "exp": 2000})),
            "x",
        );
        let one = batch["mcp"]["gatewayRequest"]["body"].clone();
        batch["mcp"]["gatewayRequest"]["body"] = json!([one.clone(), one]);
        assert!(refused(&i.intercept(&batch, 1000).await.unwrap()));
        // Expiring now; not valid until past the allowed skew; valid within it.
        let late = 1000 + proof::CLOCK_SKEW + 1;
        let soon = 1000 + proof::CLOCK_SKEW;
        for (claims, refuse) in [
            (
                json!({"iss": ISS, "aud": "mosaic-app", "sub": "u-1", "exp": 1000}),
                true,
            ),
            (
                json!({"iss": ISS, "aud": "mosaic-app", "sub": "u-1", "exp": 2000, "nbf": late}),
                true,
            ),
            (
                json!({"iss": ISS, "aud": "mosaic-app", "sub": "u-1", "exp": 2000, "nbf": "0"}),
                true,
            ),
            (
                json!({"iss": ISS, "aud": "mosaic-app", "sub": "u-1", "exp": 2000, "nbf": soon}),
                false,
            ),
        ] {
            let out = i
                .intercept(&call(bearer(claims.clone()), "x"), 1000)
                .await
                .unwrap();
            assert_eq!(refused(&out), refuse, "{claims}");
        }
    }
}
