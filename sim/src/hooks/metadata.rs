//! Run metadata hooks (seed: durable application state in typed run
//! metadata): `set_metadata` sets it when a run starts, `patch_metadata`
//! counts and merges in one phase, `metadata_overlay` shows it to the model
//! each episode. The metadata survives waiting and resume; the overlay
//! that shows it lives one episode (SPEC M5, T7).

use pai_runtime::{
    HookCx, HookFuture, HookResult, hook,
    hook::{AfterStepDecision, RunDecision, StepDecision, ToolCallDecision, ToolResultDecision},
    model::Patch,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::shared::{SimContext, SimHook, SimMetadata};

/// Set the run metadata when a run starts (its first episode, not a resume).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SetMetadata {
    /// The hook's name in the event log; `<hook>#<index>` when left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(pattern(crate::schema::checks::NONBLANK))]
    pub name: Option<String>,
    /// The metadata: an object.
    pub values: Map<String, Value>,
}

impl SetMetadata {
    pub(super) fn hook(&self, name: &str) -> SimHook {
        let values: std::sync::Arc<SimMetadata> =
            std::sync::Arc::new(self.values.clone().into_iter().collect());
        Box::new(hook::prepare_run(name, move |cx, input| {
            let values = values.clone();
            HookFuture::new(async move {
                if !input.resumed {
                    cx.set_run_metadata(&*values).await?;
                }
                Ok(RunDecision::default())
            })
        }))
    }
}

/// A phase `patch_metadata` may run in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum MetadataPhase {
    /// Once an episode.
    PrepareRun,
    /// Each step.
    PrepareModelStep,
    /// Each tool call.
    BeforeToolCall,
    /// Each final tool result.
    AfterToolResult,
    /// Each step's transition.
    AfterStep,
}

impl MetadataPhase {
    /// The runtime phase this name stands for.
    pub fn phase(self) -> pai_runtime::hook::Phase {
        use pai_runtime::hook::Phase;
        match self {
            MetadataPhase::PrepareRun => Phase::PrepareRun,
            MetadataPhase::PrepareModelStep => Phase::PrepareModelStep,
            MetadataPhase::BeforeToolCall => Phase::BeforeToolCall,
            MetadataPhase::AfterToolResult => Phase::AfterToolResult,
            MetadataPhase::AfterStep => Phase::AfterStep,
        }
    }
}

/// Update the run metadata each time a phase runs: add 1 under `count`,
/// merge `set` in.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(transform = crate::schema::checks::patch_metadata)]
pub struct PatchMetadata {
    /// The hook's name in the event log; `<hook>#<index>` when left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(pattern(crate::schema::checks::NONBLANK))]
    pub name: Option<String>,
    /// The phase the hook handles.
    pub phase: MetadataPhase,
    /// Add 1 to the number under this key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub count: Option<String>,
    /// Keys and values merged into the metadata.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub set: Map<String, Value>,
}

impl PatchMetadata {
    async fn update(&self, cx: &HookCx<'_, SimContext>) -> HookResult<()> {
        cx.update_run_metadata(|m: &mut SimMetadata| {
            if let Some(key) = &self.count {
                let n = m.get(key).and_then(Value::as_u64).unwrap_or(0);
                m.insert(key.clone(), Value::from(n + 1));
            }
            for (k, v) in &self.set {
                m.insert(k.clone(), v.clone());
            }
        })
        .await
    }

    pub(super) fn hook(&self, name: &str) -> SimHook {
        let me = std::sync::Arc::new(self.clone());
        match self.phase {
            MetadataPhase::PrepareRun => Box::new(hook::prepare_run(name, move |cx, _| {
                let me = me.clone();
                HookFuture::new(async move { me.update(cx).await.map(|()| RunDecision::default()) })
            })),
            MetadataPhase::PrepareModelStep => {
                Box::new(hook::prepare_model_step(name, move |cx, _| {
                    let me = me.clone();
                    HookFuture::new(
                        async move { me.update(cx).await.map(|()| StepDecision::default()) },
                    )
                }))
            }
            MetadataPhase::BeforeToolCall => {
                Box::new(hook::before_tool_call(name, move |cx, _| {
                    let me = me.clone();
                    HookFuture::new(async move {
                        me.update(cx).await.map(|()| ToolCallDecision::Continue)
                    })
                }))
            }
            MetadataPhase::AfterToolResult => {
                Box::new(hook::after_tool_result(name, move |cx, _| {
                    let me = me.clone();
                    HookFuture::new(async move {
                        me.update(cx).await.map(|()| ToolResultDecision::Continue)
                    })
                }))
            }
            MetadataPhase::AfterStep => Box::new(hook::after_step(name, move |cx, _| {
                let me = me.clone();
                HookFuture::new(
                    async move { me.update(cx).await.map(|()| AfterStepDecision::Natural) },
                )
            })),
        }
    }
}

/// Show the run metadata to the model: a model-only system message in the
/// episode overlay, built anew each episode.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MetadataOverlay {
    /// The hook's name in the event log; `<hook>#<index>` when left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(pattern(crate::schema::checks::NONBLANK))]
    pub name: Option<String>,
}

impl MetadataOverlay {
    pub(super) fn hook(&self, name: &str) -> SimHook {
        Box::new(hook::prepare_run(name, move |cx, _| {
            HookFuture::new(async move {
                let m = cx.run_metadata::<SimMetadata>().await?;
                let text = serde_json::to_string(&m).unwrap_or_default();
                let shown = Patch::append_system(format!("run metadata: {text}"));
                Ok(RunDecision::Continue(shown))
            })
        }))
    }
}

/// Store a hidden lifecycle context message when a run starts (SPEC L13):
/// stored, context-visible, transcript-hidden; it survives waiting and
/// resume, unlike an overlay.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ContextMessage {
    /// The hook's name in the event log; `<hook>#<index>` when left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(pattern(crate::schema::checks::NONBLANK))]
    pub name: Option<String>,
    /// The message's text.
    pub text: String,
}

impl ContextMessage {
    pub(super) fn hook(&self, name: &str) -> SimHook {
        let text = self.text.clone();
        Box::new(hook::prepare_run(name, move |cx, input| {
            let text = text.clone();
            HookFuture::new(async move {
                if !input.resumed {
                    cx.store_context_message(text).await?;
                }
                Ok(RunDecision::default())
            })
        }))
    }
}
