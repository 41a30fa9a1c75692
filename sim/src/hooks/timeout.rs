//! `timeout`: gives each provider attempt a deadline on the runtime's clock
//! (SPEC P6); the run's stop still wins.

use pai_runtime::{HookFuture, hook, hook::AttemptPatch};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::shared::SimHook;

/// Model call: give each attempt `ms` virtual milliseconds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Timeout {
    /// The hook's name in the event log; `<hook>#<index>` when left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(pattern(crate::schema::checks::NONBLANK))]
    pub name: Option<String>,
    /// Virtual milliseconds each attempt may take.
    pub ms: u64,
}

impl Timeout {
    pub(super) fn hook(&self, name: &str) -> SimHook {
        let ms = self.ms;
        Box::new(hook::around_model_call(name, move |_, _, next| {
            HookFuture::new(async move { Ok(next.call(AttemptPatch::timeout(ms)).await?) })
        }))
    }
}
