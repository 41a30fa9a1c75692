//! `recent_window`: a resolver that keeps the last `last` messages of the
//! downstream context (the seed's moving window; SPEC L6, H6).

use pai_runtime::{HookFuture, hook};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::shared::SimHook;

/// Resolver: keep only the last `last` messages of the downstream context.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RecentWindow {
    /// The hook's name in the event log; `<hook>#<index>` when left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(pattern(crate::schema::checks::NONBLANK))]
    pub name: Option<String>,
    /// How many messages to keep.
    #[schemars(range(min = 1))]
    pub last: usize,
}

impl RecentWindow {
    pub(super) fn hook(&self, name: &str) -> SimHook {
        let last = self.last;
        Box::new(hook::resolve_model_context(name, move |_, _, next| {
            HookFuture::new(async move {
                let mut all = next.run().await?;
                let keep = all.len().saturating_sub(last);
                Ok(all.split_off(keep))
            })
        }))
    }
}
