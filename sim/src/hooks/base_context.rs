//! `base_context`: a resolver that runs the inner hooks over its own messages
//! instead of the stored history (`next.with_base`, SPEC M2).

use pai_runtime::{HookFuture, hook};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::shared::{MessageSpec, SimHook};

/// Resolver: run the inner hooks over these messages instead of the stored history.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BaseContext {
    /// The hook's name in the event log; `<hook>#<index>` when left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(pattern(crate::schema::checks::NONBLANK))]
    pub name: Option<String>,
    /// The messages the inner hooks run over.
    pub messages: Vec<MessageSpec>,
}

impl BaseContext {
    pub(super) fn hook(&self, name: &str) -> SimHook {
        let base: Vec<_> = self
            .messages
            .iter()
            .map(MessageSpec::model_message)
            .collect();
        Box::new(hook::resolve_model_context(name, move |_, _, next| {
            let base = base.clone();
            HookFuture::new(async move { next.with_base(base).await })
        }))
    }
}
