//! The four operations, transport-neutral: every entry point (the HTTP
//! router, the Lambda functions, the MCP server, the `mosaic` commands)
//! decides which operation a request names and with which arguments, and runs
//! it through [`Operation::call`]: the arguments are validated once into
//! the operation's typed [`Request`], which runs to its typed response,
//! serialised here.

use crate::context::{Ctx, Principal};
use crate::contract::OperationSpec;
use crate::error::{to_json, Error};
use crate::profile::RetrievalProfile;
use crate::scope::{self, CompareRequest, EvidenceRequest, ExplainRequest};
use crate::search::{self, SearchRequest, Shape};
use serde_json::Value;

/// One of the four operations of the contract.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operation {
    SearchProducts,
    GetProductEvidence,
    CompareProducts,
    ExplainRetrieval,
}

impl Operation {
    pub const ALL: [Operation; 4] = [
        Operation::SearchProducts,
        Operation::GetProductEvidence,
        Operation::CompareProducts,
        Operation::ExplainRetrieval,
    ];

    /// The logical name, which is also the AgentCore tool name (after the
    /// `<target>___` prefix) and the operation's name in the contract.
    pub fn name(self) -> &'static str {
        match self {
            Operation::SearchProducts => "search_products",
            Operation::GetProductEvidence => "get_product_evidence",
            Operation::CompareProducts => "compare_products",
            Operation::ExplainRetrieval => "explain_retrieval",
        }
    }

    /// The function (binary) name, as in `functions/` and `template.yaml`.
    pub fn function_name(self) -> &'static str {
        match self {
            Operation::SearchProducts => "search-products",
            Operation::GetProductEvidence => "get-product-evidence",
            Operation::CompareProducts => "compare-products",
            Operation::ExplainRetrieval => "explain-retrieval",
        }
    }

    /// The operation a logical name names.
    pub fn from_name(name: &str) -> Option<Operation> {
        Self::ALL.into_iter().find(|op| op.name() == name)
    }

    /// The operation's entry in the contract.
    pub fn contract(self) -> &'static OperationSpec {
        crate::contract::operation(self.name())
            .expect("every operation is in the contract (a unit test holds it to that)")
    }

    /// Runs the operation on flat logical arguments (the contract's shape:
    /// the skill, MCP and AgentCore tools, direct invocations).
    pub async fn call(
        self,
        ctx: &Ctx,
        principal: &Principal,
        args: &Value,
    ) -> Result<Value, Error> {
        self.call_shaped(ctx, principal, args, Shape::Flat).await
    }

    /// Runs the operation; search arguments in `shape` (the HTTP body nests
    /// its filters, [`Shape::Nested`]).
    pub async fn call_shaped(
        self,
        ctx: &Ctx,
        principal: &Principal,
        args: &Value,
        shape: Shape,
    ) -> Result<Value, Error> {
        self.request(args, shape, &ctx.profile)?
            .run(ctx, principal)
            .await
    }

    /// Validates the arguments of this operation (search arguments in
    /// `shape`); every bad input is a 400 naming the field, before anything
    /// runs.
    pub fn request(
        self,
        args: &Value,
        shape: Shape,
        profile: &RetrievalProfile,
    ) -> Result<Request, Error> {
        Ok(match self {
            Operation::SearchProducts => {
                Request::Search(SearchRequest::from_json(args, shape, profile)?)
            }
            Operation::GetProductEvidence => Request::Evidence(EvidenceRequest::from_json(args)?),
            Operation::CompareProducts => Request::Compare(CompareRequest::from_json(args)?),
            Operation::ExplainRetrieval => Request::Explain(ExplainRequest::from_json(args)?),
        })
    }
}

/// A validated request of one of the four operations.
#[derive(Debug, Clone, PartialEq)]
pub enum Request {
    Search(SearchRequest),
    Evidence(EvidenceRequest),
    Compare(CompareRequest),
    Explain(ExplainRequest),
}

impl Request {
    /// Runs the request; its response as JSON.
    pub async fn run(self, ctx: &Ctx, principal: &Principal) -> Result<Value, Error> {
        match self {
            Request::Search(req) => to_json(&search::search(ctx, principal, req).await?),
            Request::Evidence(req) => to_json(&scope::evidence(ctx, principal, req).await?),
            Request::Compare(req) => to_json(&scope::compare(ctx, principal, req).await?),
            Request::Explain(req) => to_json(&scope::explain(ctx, principal, req).await?),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn operations_are_the_contract_operations() {
        for op in Operation::ALL {
            assert_eq!(op.contract().name, op.name());
            assert_eq!(Operation::from_name(op.name()), Some(op));
            assert_eq!(op.function_name().replace('-', "_"), op.name());
        }
        assert_eq!(Operation::from_name("drop_tables"), None);
    }

    #[test]
    fn each_operation_validates_into_its_own_request() {
        let profile = RetrievalProfile::default();
        let id = uuid::Uuid::new_v4();
        let parse = |op: Operation, args: Value| op.request(&args, Shape::Flat, &profile);
        let evidence = parse(
            Operation::GetProductEvidence,
            json!({"retrieval_scope_id": id.to_string(), "product_id": "P1",
                   "evidence_query": "  battery life  "}),
        )
        .unwrap();
        assert_eq!(
            evidence,
            Request::Evidence(EvidenceRequest {
                retrieval_scope_id: Some(id),
                product_id: "P1".into(),
                evidence_query: "battery life".into(),
                limit: 5,
            })
        );
        let compare = parse(
            Operation::CompareProducts,
            json!({"retrieval_scope_id": "not-a-uuid", "product_ids": ["a", "b"]}),
        )
        .unwrap();
        assert_eq!(
            compare,
            Request::Compare(CompareRequest {
                retrieval_scope_id: None,
                product_ids: vec!["a".into(), "b".into()],
            })
        );
        let explain = parse(
            Operation::ExplainRetrieval,
            json!({"retrieval_scope_id": id.to_string()}),
        )
        .unwrap();
        assert_eq!(
            explain,
            Request::Explain(ExplainRequest {
                retrieval_scope_id: Some(id),
            })
        );
        assert!(matches!(
            parse(Operation::SearchProducts, json!({"query": "kettle"})).unwrap(),
            Request::Search(_)
        ));
    }

    #[test]
    fn bad_arguments_are_refused_naming_the_field() {
        let profile = RetrievalProfile::default();
        let cases = [
            (
                Operation::GetProductEvidence,
                json!({"retrieval_scope_id": "x", "product_id": "P1"}),
                "evidence_query",
                "`evidence_query` is required",
            ),
            (
                Operation::GetProductEvidence,
                json!({"retrieval_scope_id": "x", "product_id": "P1", "evidence_query": "  "}),
                "evidence_query",
                "`evidence_query` must not be empty",
            ),
            (
                Operation::GetProductEvidence,
                json!({"retrieval_scope_id": "x", "product_id": "P1", "evidence_query": "q", "limit": 21}),
                "limit",
                "`limit` must be a whole number from 1 to 20",
            ),
            (
                Operation::GetProductEvidence,
                json!({"retrieval_scope_id": "x", "product_id": "P1", "evidence_query": "q", "limit": "5"}),
                "limit",
                "`limit` must be a number",
            ),
            (
                Operation::CompareProducts,
                json!({"retrieval_scope_id": "x", "product_ids": ["a"]}),
                "product_ids",
                "`product_ids` must be an array of 2 to 5 distinct product ids",
            ),
            (
                Operation::ExplainRetrieval,
                json!({}),
                "retrieval_scope_id",
                "`retrieval_scope_id` is required",
            ),
            (
                Operation::ExplainRetrieval,
                json!({"retrieval_scope_id": "x", "extra": 1}),
                "extra",
                "unknown field `extra`",
            ),
        ];
        for (op, args, field, message) in cases {
            let e = op.request(&args, Shape::Flat, &profile).unwrap_err();
            assert_eq!(e.status(), 400, "{args}");
            assert_eq!(e.body()["error"]["field"], field, "{args}");
            assert_eq!(e.body()["error"]["message"], message, "{args}");
        }
    }
}
