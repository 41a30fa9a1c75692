//! The refund tool: it refunds an order, and a refund over the limit
//! waits for a person's approval, decided per call on the call's amount
//! (SPEC T7: approval is a tool feature, per call).

use std::sync::Arc;

use pai_runtime::tool::NeedsApproval;
use pai_runtime::{Tool, ToolError, typed_tool};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Refunds orders; a refund of more than `approval_over` dollars waits
/// for a person's approval before it runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RefundTool {
    /// The largest refund, in whole dollars, made without approval.
    pub approval_over: u64,
}

/// One refund call's input, as the model writes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RefundInput {
    /// The order refunded.
    pub order: u64,
    /// The amount, in whole dollars.
    pub amount: u64,
}

impl RefundTool {
    /// Whether a refund of `amount` needs a person's approval.
    pub fn needs_approval(&self, amount: u64) -> bool {
        amount > self.approval_over
    }

    /// The tool, named `name`.
    pub fn tool(&self, name: &str) -> Arc<dyn Tool> {
        let me = self.clone();
        let approval = NeedsApproval::when(move |i: &RefundInput| me.needs_approval(i.amount));
        typed_tool(
            name,
            "Refunds an order.",
            approval,
            |_cx, i: RefundInput| async move {
                Ok::<_, ToolError>(serde_json::json!({ "order": i.order, "refunded": i.amount }))
            },
        )
        .tool()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refunds_over_the_limit_need_approval() {
        let t = RefundTool { approval_over: 100 };
        assert!(!t.needs_approval(100));
        assert!(t.needs_approval(101));
    }
}
