//! `rag`: the seed's retrieval example. At each step, the documents (from the
//! scenario's `[docs]`) whose key the latest user text mentions become one
//! model-only system message (`prepare_model_step`).

use pai_runtime::{HookFuture, hook, hook::StepDecision, model::Patch};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::shared::{SimContext, SimHook, latest_user_text};

/// Inject the latest user text's documents as a model-only system message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Rag {
    /// The hook's name in the event log; `<hook>#<index>` when left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(pattern(crate::schema::checks::NONBLANK))]
    pub name: Option<String>,
}

impl Rag {
    pub(super) fn hook(&self, name: &str) -> SimHook {
        Box::new(hook::prepare_model_step::<SimContext, _>(
            name,
            |cx, input| {
                let Some(query) = latest_user_text(input.messages) else {
                    return HookFuture::ready(Ok(StepDecision::default()));
                };
                let query = query.to_lowercase();
                let docs: Vec<&str> = cx
                    .context
                    .docs
                    .iter()
                    .filter(|(k, _)| query.contains(&k.to_lowercase()))
                    .map(|(_, v)| v.as_str())
                    .collect();
                if docs.is_empty() {
                    return HookFuture::ready(Ok(StepDecision::default()));
                }
                let text = format!("Relevant workspace context:\n{}", docs.join("\n\n"));
                HookFuture::ready(Ok(StepDecision::Continue(Patch::append_system(text))))
            },
        ))
    }
}
