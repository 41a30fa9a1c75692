//! `timeout`: gives each provider attempt a deadline on the runtime's clock
//! (SPEC P6); the run's stop still wins.

use pai_runtime::{AttemptPatch, HookFuture, hook};
use serde::{Deserialize, Serialize};

use super::shared::SimHook;

/// Model call: give each attempt `ms` virtual milliseconds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Timeout {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    pub ms: u64,
}

impl Timeout {
    pub(super) fn build(&self, name: &str) -> SimHook {
        let ms = self.ms;
        Box::new(hook::around_model_call(name, move |_, _, next| {
            HookFuture::new(async move { Ok(next.call(AttemptPatch::timeout(ms)).await?) })
        }))
    }
}
