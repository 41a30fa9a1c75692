//! `guardrail`: the seed's prompt-injection guard. `prepare_run` responds
//! instead of running (SPEC L12) when the latest user text contains a phrase.

use pai_runtime::{
    HookFuture, Part, hook,
    hook::{Response, RunDecision},
    message::Outcome,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::shared::SimHook;

/// Respond instead of running when the latest user text contains
/// `contains` (case-insensitive).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Guardrail {
    /// The hook's name in the event log; `<hook>#<index>` when left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(pattern(crate::schema::checks::NONBLANK))]
    pub name: Option<String>,
    /// The phrase that triggers the guard (case-insensitive).
    #[schemars(length(min = 1))]
    pub contains: String,
    /// The run's outcome when the guard responds.
    pub outcome: Outcome,
    /// Why, as the response records it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The response's text.
    pub text: String,
}

impl Guardrail {
    pub(super) fn hook(&self, name: &str) -> SimHook {
        let me = self.clone();
        Box::new(hook::prepare_run(name, move |_, input| {
            let latest = input
                .latest_user_message
                .map(|m| m.text().to_lowercase())
                .unwrap_or_default();
            if !latest.contains(&me.contains.to_lowercase()) {
                return HookFuture::ready(Ok(RunDecision::default()));
            }
            HookFuture::ready(Ok(RunDecision::Respond(Response {
                outcome: me.outcome,
                reason: me.reason.clone(),
                parts: vec![Part::text(me.text.clone())],
            })))
        }))
    }
}
