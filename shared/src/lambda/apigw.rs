//! API Gateway HTTP API events (payload 2.0): the request through the shared
//! router, the principal from the authorizer, the proxy result.

use super::*;

impl Handler {
    /// An API Gateway HTTP API (payload 2.0) event through the shared router.
    pub(super) async fn api_gateway(
        &self,
        event: &Value,
        request_id: &str,
        budget: Duration,
    ) -> HttpResponse {
        let text = |ptr: &str| event.pointer(ptr).and_then(Value::as_str);
        let method = text("/requestContext/http/method");
        let path = text("/rawPath").or_else(|| text("/requestContext/http/path"));
        let (Some(method), Some(path)) = (method, path) else {
            return HttpResponse::error(&Error::invalid_json(
                "malformed API Gateway event: no requestContext.http.method or rawPath",
            ));
        };
        let query = text("/rawQueryString").unwrap_or("");
        let body = match event.get("body") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::String(s)) if event["isBase64Encoded"] == true => {
                match base64::engine::general_purpose::STANDARD.decode(s) {
                    Ok(b) => b,
                    Err(_) => {
                        return HttpResponse::error(&Error::invalid_json(
                            "the request body is flagged base64 but does not decode",
                        ))
                    }
                }
            }
            Some(Value::String(s)) => s.clone().into_bytes(),
            Some(_) => {
                return HttpResponse::error(&Error::invalid_json(
                    "malformed API Gateway event: body is not a string",
                ))
            }
        };
        // The stage's catch-all route (`$default`, no authorizer) reaches
        // the liveness check and nothing else: any other request there is
        // the standard not_found, in the contract's envelope. Through an
        // operation's route, only that operation is served.
        let catch_all =
            text("/routeKey").or_else(|| text("/requestContext/routeKey")) == Some("$default");
        if (catch_all && !router::is_health(path)) || !router::served_by(path, self.op) {
            return HttpResponse::error(&Error::NotFound);
        }
        let principal = match catch_all {
            // The liveness check reads no principal.
            true => Principal("-".into()),
            false => match self.api_gateway_principal(event) {
                Ok(p) => p,
                Err(e) => return HttpResponse::error(&e),
            },
        };
        let req = HttpRequest {
            method,
            path,
            query,
            body: &body,
            request_id,
        };
        let attempt = || router::handle(&self.ctx, &principal, req);
        let unavailable = |r: &HttpResponse| r.status == Code::Unavailable.status();
        match self
            .within_budget(budget, request_id, attempt, unavailable)
            .await
        {
            Some(resp) => resp,
            None => {
                tracing::error!(request_id, "invocation deadline reached");
                HttpResponse::error(&Error::Unavailable("deadline".into()))
            }
        }
    }

    /// `jwt:<iss>#<sub>` from the JWT authorizer's claims, else
    /// `iam:<userArn>`, else anonymous when allowed.
    fn api_gateway_principal(&self, event: &Value) -> Result<Principal, Error> {
        let authorizer = event.pointer("/requestContext/authorizer");
        // Present but unusable (empty, not a string, malformed) is refused,
        // never taken for anonymous.
        let claim = |ptr: &str| {
            authorizer
                .and_then(|a| a.pointer(ptr))
                .filter(|v| !v.is_null())
                .map(|v| v.as_str().unwrap_or(""))
        };
        let refused = |e: principal::Invalid| {
            tracing::warn!(reason = %e, "API Gateway caller refused");
            unauthenticated()
        };
        if let Some(sub) = claim("/jwt/claims/sub") {
            let iss = claim("/jwt/claims/iss").unwrap_or("");
            return Principal::jwt(iss, sub).map_err(refused);
        }
        if let Some(arn) = claim("/iam/userArn") {
            return Principal::iam(arn).map_err(refused);
        }
        // An authorizer that vouched for someone without a subject (a JWT
        // without `sub`, a Lambda authorizer's context) is no anonymous call.
        match authorizer {
            None | Some(Value::Null) => self.anonymous(),
            Some(Value::Object(m)) if m.is_empty() => self.anonymous(),
            Some(_) => {
                tracing::warn!("API Gateway caller refused: an authorizer without a subject");
                Err(unauthenticated())
            }
        }
    }
}

/// An API Gateway proxy result (payload 2.0) for a router response.
pub fn api_gateway_result(resp: &HttpResponse) -> Value {
    let headers: Map<String, Value> = resp
        .headers
        .iter()
        .map(|(k, v)| (k.to_string(), Value::from(*v)))
        .collect();
    let (body, base64) = match std::str::from_utf8(&resp.body) {
        Ok(s) => (s.to_string(), false),
        Err(_) => (
            base64::engine::general_purpose::STANDARD.encode(&resp.body),
            true,
        ),
    };
    json!({
        "statusCode": resp.status,
        "headers": headers,
        "body": body,
        "isBase64Encoded": base64,
    })
}
