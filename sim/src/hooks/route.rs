//! `route`: a sparse route patch at run level (episode defaults), step level
//! (one step, P5) or attempt level (one provider attempt, P6).

use pai_runtime::{
    HookFuture, hook,
    hook::{AttemptPatch, RunDecision, StepDecision},
    model::{ModelSettings, Patch, ProviderOptions, RoutePatch, ToolChoice},
};
use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::shared::{SimHook, applies_at};

/// Where a route hook applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RouteLevel {
    /// `prepare_run`: the episode's defaults.
    Run,
    /// `prepare_model_step`: one step.
    Step,
    /// `around_model_call`: one provider attempt (SPEC P6).
    Attempt,
}

/// Patch the route at run, step or attempt level.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Route {
    /// The hook's name in the event log; `<hook>#<index>` when left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(pattern(crate::schema::checks::NONBLANK))]
    pub name: Option<String>,
    /// Run, step or attempt level.
    pub at: RouteLevel,
    /// A model: starts a fresh route (SPEC P1); leave it out to keep the route's model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub model: Option<String>,
    /// Sampling settings, merged field by field (SPEC P2).
    #[serde(default, skip_serializing_if = "ModelSettings::is_empty")]
    pub settings: ModelSettings,
    /// Provider key → that provider's options, replaced per provider.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub provider_options: ProviderOptions,
    /// Provider-native tools (opaque JSON descriptions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_tools: Option<Vec<Value>>,
    /// How the model may choose tools.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<ToolChoice>,
    /// The registered tools offered, by name (SPEC P3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<String>>,
    /// Only at this step (step and attempt level).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<u32>,
}

impl Route {
    fn patch(&self) -> RoutePatch {
        RoutePatch {
            model: self.model.clone(),
            settings: self.settings.clone(),
            provider_options: self.provider_options.clone(),
            provider_tools: self.provider_tools.clone(),
            tool_choice: self.tool_choice.clone(),
            tools: self.tools.clone(),
        }
    }

    pub(super) fn hook(&self, name: &str) -> SimHook {
        let patch = self.patch();
        let only = self.step;
        match self.at {
            RouteLevel::Run => Box::new(hook::prepare_run(name, move |_, _| {
                HookFuture::ready(Ok(RunDecision::Continue(Patch::route(patch.clone()))))
            })),
            RouteLevel::Step => Box::new(hook::prepare_model_step(name, move |_, input| {
                let p = if applies_at(only, input.step) {
                    Patch::route(patch.clone())
                } else {
                    Patch::default()
                };
                HookFuture::ready(Ok(StepDecision::Continue(p)))
            })),
            RouteLevel::Attempt => {
                Box::new(hook::around_model_call(name, move |_, request, next| {
                    let attempt = AttemptPatch {
                        route: if applies_at(only, request.step) {
                            patch.clone()
                        } else {
                            RoutePatch::default()
                        },
                        timeout_ms: None,
                    };
                    HookFuture::new(async move { Ok(next.call(attempt).await?) })
                }))
            }
        }
    }
}
