//! The `identity-interceptor` Lambda function: the AgentCore Gateway REQUEST
//! interceptor. An identity adapter, not a fifth operation.
//!
//! Before each tool call the gateway hands it the request, bearer token
//! included (`passRequestHeaders: true`); it reads the token's issuer and
//! `sub`, and sets the principal `jwt:<issuer>#<sub>` for the target in the
//! propagated headers `x-mosaic-principal` and `x-mosaic-principal-proof`,
//! replacing whatever the client sent there. The proof is an HMAC with a key
//! only this function and the four operation functions can read
//! (`MOSAIC_PRINCIPAL_PROOF_SECRET_ARN`); the functions accept an AgentCore
//! principal only with it.
//!
//! All of it lives in [`mosaic::interceptor`]; sample interceptor inputs are
//! in `events/identity-interceptor/`.

#[tokio::main]
async fn main() -> Result<(), mosaic::lambda::BoxError> {
    mosaic::interceptor::run().await
}
