//! `replace_tool_output`: replaces one tool's result before the model sees it
//! (SPEC T4, T5, L9).

use pai_runtime::{HookFuture, hook, hook::ToolResultDecision};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::shared::SimHook;

/// Replace a named tool's output: with `output`, or by removing `remove`
/// fields from the output this hook receives.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReplaceToolOutput {
    /// The hook's name in the event log; `<hook>#<index>` when left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(pattern(crate::schema::checks::NONBLANK))]
    pub name: Option<String>,
    /// The tool whose output is replaced.
    #[schemars(length(min = 1))]
    pub tool: String,
    /// The new output; the output received when left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<Value>,
    /// Fields to remove from the output.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub remove: Vec<String>,
}

impl ReplaceToolOutput {
    fn replace(&self, received: &Value) -> Value {
        let mut next = self.output.clone().unwrap_or_else(|| received.clone());
        if let Some(obj) = next.as_object_mut() {
            for field in &self.remove {
                obj.remove(field);
            }
        }
        next
    }

    pub(super) fn hook(&self, name: &str) -> SimHook {
        let me = self.clone();
        Box::new(hook::after_tool_result(name, move |_, input| {
            HookFuture::ready(Ok(if input.result.tool == me.tool {
                ToolResultDecision::ReplaceOutput(me.replace(&input.result.output))
            } else {
                ToolResultDecision::Continue
            }))
        }))
    }
}
