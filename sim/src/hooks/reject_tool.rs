//! `reject_tool`: rejects every call of one tool (SPEC T3, L8); the model
//! sees the message as the call's error.

use pai_runtime::{HookFuture, ToolCallDecision, hook};
use serde::{Deserialize, Serialize};

use super::shared::SimHook;

/// Reject every call of a named tool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RejectTool {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    pub tool: String,
    pub message: String,
}

impl RejectTool {
    pub(super) fn build(&self, name: &str) -> SimHook {
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
