//! `after_step`: decides the step transition (SPEC A1–A3, L10).

use pai_runtime::{HookFuture, hook, hook::AfterStepDecision};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::shared::{SimHook, applies_at};

/// What an `after_step` hook decides.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum AfterStepSpec {
    /// Go on as the step would: tool results lead to another step.
    Natural,
    /// Take another step.
    NextStep,
    /// End the run.
    Complete,
}

/// Decide the step transition, at every step or at `step` only.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AfterStep {
    /// The hook's name in the event log; `<hook>#<index>` when left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(pattern(crate::schema::checks::NONBLANK))]
    pub name: Option<String>,
    /// The decision.
    pub decision: AfterStepSpec,
    /// Only at this step (from 0, as the event log numbers steps); at every
    /// step when left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<u32>,
}

impl AfterStep {
    pub(super) fn hook(&self, name: &str) -> SimHook {
        let decision = match self.decision {
            AfterStepSpec::Natural => AfterStepDecision::Natural,
            AfterStepSpec::NextStep => AfterStepDecision::NextStep,
            AfterStepSpec::Complete => AfterStepDecision::Complete,
        };
        let only = self.step;
        Box::new(hook::after_step(name, move |_, input| {
            HookFuture::ready(Ok(if applies_at(only, input.step) {
                decision
            } else {
                AfterStepDecision::Natural
            }))
        }))
    }
}
