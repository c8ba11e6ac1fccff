//! The four operations, transport-neutral: every entry point (the HTTP
//! router, the Lambda functions, the MCP server, the `mosaic` commands)
//! decides which operation a request names and with which arguments, and runs
//! it through [`Operation::call`].

use crate::context::{Ctx, Principal};
use crate::error::Error;
use crate::scope;
use crate::search::{search_json, Shape};
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
    pub fn contract(self) -> &'static Value {
        // Every operation is in the contract (a unit test holds it to that).
        crate::contract::operation(self.name()).unwrap_or(&Value::Null)
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
        match self {
            Operation::SearchProducts => search_json(ctx, principal, args, shape).await,
            Operation::GetProductEvidence => {
                scope::get_product_evidence(ctx, principal, args).await
            }
            Operation::CompareProducts => scope::compare_products(ctx, principal, args).await,
            Operation::ExplainRetrieval => scope::explain_retrieval(ctx, principal, args).await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operations_are_the_contract_operations() {
        for op in Operation::ALL {
            assert_eq!(op.contract()["name"], op.name());
            assert_eq!(Operation::from_name(op.name()), Some(op));
            assert_eq!(op.function_name().replace('-', "_"), op.name());
        }
        assert_eq!(Operation::from_name("drop_tables"), None);
    }
}
