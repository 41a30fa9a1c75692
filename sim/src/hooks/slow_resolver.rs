//! `slow_resolver`: a resolver that waits (like a call to a search service)
//! before it reads the downstream context. Messages stored while it waits
//! are above the step's anchor and must stay out (SPEC M1).

use std::time::Duration;

use pai_runtime::{HookFuture, hook};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::shared::SimHook;

/// Resolver: wait `ms` virtual milliseconds, then read the downstream context.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SlowResolver {
    /// The hook's name in the event log; `<hook>#<index>` when left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(pattern(crate::schema::checks::NONBLANK))]
    pub name: Option<String>,
    /// Virtual milliseconds to wait.
    pub ms: u64,
}

impl SlowResolver {
    pub(super) fn hook(&self, name: &str) -> SimHook {
        let ms = self.ms;
        Box::new(hook::resolve_model_context(name, move |_, _, next| {
            HookFuture::new(async move {
                tokio::time::sleep(Duration::from_millis(ms)).await;
                next.run().await
            })
        }))
    }
}
