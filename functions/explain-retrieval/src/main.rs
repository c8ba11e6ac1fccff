//! The `explain-retrieval` Lambda function: `explain_retrieval`.
//!
//! It explains a retrieval event from its receipt (the whole candidate pool; grants nothing).
//!
//! All of it lives in [`mosaic::lambda`]: the binary reads its configuration
//! from the environment once per container (`MOSAIC_DATABASE_URL`,
//! `MOSAIC_EMBEDDER`, `MOSAIC_ALLOW_ANONYMOUS`, ...), then answers both
//! event kinds it can be sent:
//!
//! - API Gateway HTTP API (payload 2.0) events, through the shared HTTP
//!   router, answered as proxy results with the router's status codes;
//! - AgentCore Gateway Lambda-target calls (the flat tool arguments, the tool
//!   name `<target>___explain_retrieval` in the client context), answered with the
//!   operation's output or the `{"error": {...}}` envelope.
//!
//! Sample events for both kinds are in `events/explain-retrieval/`.

use mosaic::lambda::{run, Operation};

#[tokio::main]
async fn main() -> Result<(), mosaic::lambda::BoxError> {
    run(Operation::ExplainRetrieval).await
}
