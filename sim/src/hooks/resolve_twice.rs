//! `resolve_twice`: a resolver that calls `next()` twice; the inner chain
//! runs once and both answers are the same (SPEC M2).

use pai_runtime::{HookError, HookFuture, hook};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::shared::SimHook;

/// Resolver: call `next()` twice and return the second answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ResolveTwice {
    /// The hook's name in the event log; `<hook>#<index>` when left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(pattern(crate::schema::checks::NONBLANK))]
    pub name: Option<String>,
}

impl ResolveTwice {
    pub(super) fn hook(&self, name: &str) -> SimHook {
        Box::new(hook::resolve_model_context(name, |_, _, next| {
            HookFuture::new(async move {
                let first = next.run().await?;
                let second = next.run().await?;
                if first != second {
                    return Err(HookError::new("next() gave two different answers"));
                }
                Ok(second)
            })
        }))
    }
}
