//! `hide_message`: after a step, the run changes one stored message's
//! context visibility through its own mutation (SPEC H2, R1). Only the
//! active run may rewrite visibility while it runs (K4), so this is the one
//! way a scenario changes what the next step of the same run must send
//! (M1): a cached context that missed the change would show here.

use pai_runtime::{
    HookError, HookFuture, Role, hook, hook::AfterStepDecision, message::Visibility, store::Expect,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::shared::{MessageRole, SimHook, applies_at};

/// Hide (or show again) the `nth` stored message of `role` from the model
/// context, after every step or after `step` only. The message keeps its
/// transcript visibility. Nothing happens when there is no such message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HideMessage {
    /// The hook's name in the event log; `<hook>#<index>` when left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(pattern(crate::schema::checks::NONBLANK))]
    pub name: Option<String>,
    /// Only after this step (from 0, as the event log numbers steps); after
    /// every step when left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<u32>,
    /// The role of the message.
    pub role: MessageRole,
    /// Which message of that role, counting stored messages from 1.
    #[schemars(range(min = 1))]
    pub nth: usize,
    /// Make the message context-visible again instead of hiding it.
    #[serde(default, skip_serializing_if = "crate::defaults::is_false")]
    pub show: bool,
}

impl HideMessage {
    pub(super) fn hook(&self, name: &str) -> SimHook {
        let (only, role, nth, show) = (self.step, role_of(self.role), self.nth, self.show);
        Box::new(hook::after_step(name, move |cx, input| {
            let step = input.step;
            HookFuture::new(async move {
                if !applies_at(only, step) {
                    return Ok(AfterStepDecision::Natural);
                }
                let fail = |e: pai_runtime::facade::MutateError| HookError::new(e.to_string());
                let thread = cx.read_thread().await.map_err(fail)?;
                let target = thread
                    .messages
                    .iter()
                    .filter(|m| m.role == role)
                    .nth(nth.saturating_sub(1));
                let Some(target) = target else {
                    return Ok(AfterStepDecision::Natural);
                };
                let visibility = Visibility {
                    transcript: target.visibility.transcript,
                    context: show,
                };
                if target.visibility == visibility {
                    return Ok(AfterStepDecision::Natural);
                }
                let id = target.id.clone();
                cx.mutate(Expect::Nothing, move |s| {
                    s.set_visibility(id, visibility);
                    Ok(())
                })
                .await
                .map_err(fail)?;
                Ok(AfterStepDecision::Natural)
            })
        }))
    }
}

fn role_of(role: MessageRole) -> Role {
    match role {
        MessageRole::System => Role::System,
        MessageRole::User => Role::User,
        MessageRole::Assistant => Role::Assistant,
    }
}
