//! `replace_tool_input`: replaces one tool's input before it runs (SPEC L8).

use pai_runtime::{HookFuture, hook, hook::ToolCallDecision};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::shared::SimHook;

/// Replace a named tool's input before it runs. With `merge = true`, the
/// fields of `input` are merged into the input this hook receives, which
/// shows that each hook sees the previous hook's replacement (SPEC L8).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReplaceToolInput {
    /// The hook's name in the event log; `<hook>#<index>` when left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(pattern(crate::schema::checks::NONBLANK))]
    pub name: Option<String>,
    /// The tool whose input is replaced.
    #[schemars(length(min = 1))]
    pub tool: String,
    /// The new input (with `merge`, the fields to set).
    pub input: Value,
    /// Merge the fields of `input` into the input received.
    #[serde(default, skip_serializing_if = "crate::defaults::is_false")]
    #[schemars(extend("default" = false))]
    pub merge: bool,
}

impl ReplaceToolInput {
    fn replace(&self, received: &Value) -> Value {
        if !self.merge {
            return self.input.clone();
        }
        let mut next = received.clone();
        if let (Some(into), Some(from)) = (next.as_object_mut(), self.input.as_object()) {
            for (k, v) in from {
                into.insert(k.clone(), v.clone());
            }
        }
        next
    }

    pub(super) fn hook(&self, name: &str) -> SimHook {
        let me = self.clone();
        Box::new(hook::before_tool_call(name, move |_, input| {
            HookFuture::ready(Ok(if input.tool == me.tool {
                ToolCallDecision::ReplaceInput(me.replace(input.input))
            } else {
                ToolCallDecision::Continue
            }))
        }))
    }
}
