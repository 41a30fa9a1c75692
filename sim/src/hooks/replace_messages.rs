//! `replace_messages`: replaces the messages the phase would send (SPEC P4),
//! at run level (the episode overlay) or step level.

use pai_runtime::{
    HookFuture, hook,
    hook::{RunDecision, StepDecision},
    model::Patch,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::shared::{MessageSpec, SimHook, applies_at};
use super::system_message::MessageLevel;

/// Replace the messages the phase would send, at run or step level.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReplaceMessages {
    /// The hook's name in the event log; `<hook>#<index>` when left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(pattern(crate::schema::checks::NONBLANK))]
    pub name: Option<String>,
    /// Run or step level.
    pub at: MessageLevel,
    /// The messages sent instead.
    pub messages: Vec<MessageSpec>,
    /// Only at this step (step level only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<u32>,
}

impl ReplaceMessages {
    pub(super) fn hook(&self, name: &str) -> SimHook {
        let patch = Patch {
            replace_model_messages: Some(
                self.messages
                    .iter()
                    .map(MessageSpec::model_message)
                    .collect(),
            ),
            ..Patch::default()
        };
        let only = self.step;
        match self.at {
            MessageLevel::Run => Box::new(hook::prepare_run(name, move |_, _| {
                HookFuture::ready(Ok(RunDecision::Continue(patch.clone())))
            })),
            MessageLevel::Step => Box::new(hook::prepare_model_step(name, move |_, input| {
                let p = if applies_at(only, input.step) {
                    patch.clone()
                } else {
                    Patch::default()
                };
                HookFuture::ready(Ok(StepDecision::Continue(p)))
            })),
        }
    }
}
