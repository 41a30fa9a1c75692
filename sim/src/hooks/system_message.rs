//! `system_message`: a model-only system message at run level (the episode
//! overlay, P5, P8) or step level (one step).

use pai_runtime::{
    HookFuture, hook,
    hook::{RunDecision, StepDecision},
    model::Patch,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::shared::{SimHook, applies_at, latest_user_text};

/// Where a message hook applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum MessageLevel {
    /// `prepare_run`: the episode's overlay.
    Run,
    /// `prepare_model_step`: one step.
    Step,
}

/// Append a model-only system message at run or step level.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SystemMessage {
    /// The hook's name in the event log; `<hook>#<index>` when left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(pattern(crate::schema::checks::NONBLANK))]
    pub name: Option<String>,
    /// Run or step level.
    pub at: MessageLevel,
    /// The message's text.
    pub text: String,
    /// Only at this step (step level only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<u32>,
    /// Only when the route this hook sees has this model: shows that a hook
    /// sees the earlier hooks' patches (SPEC L5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub if_model: Option<String>,
    /// Append the latest user text to `text` (shows when an overlay was built).
    #[serde(default, skip_serializing_if = "crate::defaults::is_false")]
    #[schemars(extend("default" = false))]
    pub with_latest_user: bool,
}

impl SystemMessage {
    fn patch(&self, latest_user: Option<&str>) -> Patch {
        Patch::append_system(match (self.with_latest_user, latest_user) {
            (true, Some(u)) => format!("{} {u}", self.text),
            _ => self.text.clone(),
        })
    }

    fn model_matches(&self, model: &str) -> bool {
        self.if_model.as_ref().is_none_or(|m| m == model)
    }

    pub(super) fn hook(&self, name: &str) -> SimHook {
        let me = self.clone();
        match self.at {
            MessageLevel::Run => Box::new(hook::prepare_run(name, move |_, input| {
                if !me.model_matches(&input.route.model) {
                    return HookFuture::ready(Ok(RunDecision::default()));
                }
                let latest = input.latest_user_message.map(|m| m.text());
                HookFuture::ready(Ok(RunDecision::Continue(me.patch(latest.as_deref()))))
            })),
            MessageLevel::Step => Box::new(hook::prepare_model_step(name, move |_, input| {
                if !applies_at(me.step, input.step) || !me.model_matches(&input.route.model) {
                    return HookFuture::ready(Ok(StepDecision::default()));
                }
                let latest = latest_user_text(input.messages);
                HookFuture::ready(Ok(StepDecision::Continue(me.patch(latest.as_deref()))))
            })),
        }
    }
}
