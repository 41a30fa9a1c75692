//! `fallback`: when an attempt fails before its stream exists, try once more
//! on another model, a fresh route (SPEC P1, P6, P7).

use pai_runtime::{HookError, HookFuture, ModelError, hook, hook::AttemptPatch};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::shared::SimHook;

/// Model call: on a provider failure before the stream, retry with model `to`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Fallback {
    /// The hook's name in the event log; `<hook>#<index>` when left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(pattern(crate::schema::checks::NONBLANK))]
    pub name: Option<String>,
    /// The model to try once more on.
    #[schemars(length(min = 1))]
    pub to: String,
}

impl Fallback {
    pub(super) fn hook(&self, name: &str) -> SimHook {
        let to = self.to.clone();
        Box::new(hook::around_model_call(name, move |_, _, next| {
            let to = to.clone();
            HookFuture::new(async move {
                match next.call(AttemptPatch::default()).await {
                    Ok(stream) => Ok(stream),
                    // A hook failure inside is not the provider's: let it fail the run.
                    Err(ModelError::Hook(m)) => Err(HookError::new(m)),
                    Err(_) => Ok(next.call(AttemptPatch::model(to)).await?),
                }
            })
        }))
    }
}
