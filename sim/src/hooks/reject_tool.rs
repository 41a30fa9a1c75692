//! `reject_tool`: rejects every call of one tool (SPEC T3, L8); the model
//! sees the message as the call's error.

use pai_runtime::{HookFuture, hook, hook::ToolCallDecision};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::shared::SimHook;

/// Reject every call of a named tool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RejectTool {
    /// The hook's name in the event log; `<hook>#<index>` when left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(pattern(crate::schema::checks::NONBLANK))]
    pub name: Option<String>,
    /// The tool whose calls are rejected.
    #[schemars(length(min = 1))]
    pub tool: String,
    /// What the model sees as the call's error.
    pub message: String,
}

impl RejectTool {
    pub(super) fn hook(&self, name: &str) -> SimHook {
        let me = self.clone();
        Box::new(hook::before_tool_call(name, move |_, input| {
            HookFuture::ready(Ok(if input.tool == me.tool {
                ToolCallDecision::Reject {
                    message: me.message.clone(),
                }
            } else {
                ToolCallDecision::Continue
            }))
        }))
    }
}
