//! `fail`: a hook that returns an error, or panics, in one phase (SPEC L4,
//! X2): the run must fail, and nothing its step had not committed is stored.

use pai_runtime::{
    AfterStepDecision, AttemptPatch, HookError, HookFuture, HookResult, Phase, RunDecision,
    StepDecision, ToolCallDecision, ToolResultDecision, hook,
};
use serde::{Deserialize, Serialize};

use super::shared::{SimHook, applies_at};
use crate::planted::PLANTED_PANIC;

/// A lifecycle phase, as named in scenario files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PhaseName {
    PrepareRun,
    ResolveModelContext,
    PrepareModelStep,
    AroundModelCall,
    BeforeToolCall,
    AfterToolResult,
    AfterStep,
}

impl PhaseName {
    /// The runtime's phase of this name.
    pub fn phase(self) -> Phase {
        match self {
            PhaseName::PrepareRun => Phase::PrepareRun,
            PhaseName::ResolveModelContext => Phase::ResolveModelContext,
            PhaseName::PrepareModelStep => Phase::PrepareModelStep,
            PhaseName::AroundModelCall => Phase::AroundModelCall,
            PhaseName::BeforeToolCall => Phase::BeforeToolCall,
            PhaseName::AfterToolResult => Phase::AfterToolResult,
            PhaseName::AfterStep => Phase::AfterStep,
        }
    }
}

/// Fail (or panic) in a phase, at every step or at `step` only.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Fail {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    pub phase: PhaseName,
    pub message: String,
    #[serde(default, skip_serializing_if = "crate::defaults::is_false")]
    pub panic: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<u32>,
}

impl Fail {
    /// The error at `step` (`None`: a phase without steps), or a panic.
    fn fire(&self, step: Option<u32>) -> HookResult<()> {
        if step.is_some_and(|s| !applies_at(self.step, s)) {
            return Ok(());
        }
        if self.panic {
            panic!("{PLANTED_PANIC} {}", self.message);
        }
        Err(HookError::new(self.message.clone()))
    }

    /// `decision` when the hook does not fire at `step`.
    fn or<T>(&self, step: Option<u32>, decision: T) -> HookFuture<'static, HookResult<T>>
    where
        T: Send + 'static,
    {
        HookFuture::ready(self.fire(step).map(|()| decision))
    }

    pub(super) fn build(&self, name: &str) -> SimHook {
        let me = self.clone();
        match self.phase {
            PhaseName::PrepareRun => Box::new(hook::prepare_run(name, move |_, _| {
                me.or(None, RunDecision::default())
            })),
            PhaseName::ResolveModelContext => {
                Box::new(hook::resolve_model_context(name, move |_, input, next| {
                    let fired = me.fire(Some(input.step));
                    HookFuture::new(async move {
                        fired?;
                        next.run().await
                    })
                }))
            }
            PhaseName::PrepareModelStep => Box::new(hook::prepare_model_step(name, move |_, i| {
                me.or(Some(i.step), StepDecision::default())
            })),
            PhaseName::AroundModelCall => {
                Box::new(hook::around_model_call(name, move |_, request, next| {
                    let fired = me.fire(Some(request.step));
                    HookFuture::new(async move {
                        fired?;
                        Ok(next.call(AttemptPatch::default()).await?)
                    })
                }))
            }
            PhaseName::BeforeToolCall => Box::new(hook::before_tool_call(name, move |_, i| {
                me.or(Some(i.step), ToolCallDecision::Continue)
            })),
            PhaseName::AfterToolResult => Box::new(hook::after_tool_result(name, move |_, i| {
                me.or(Some(i.step), ToolResultDecision::Continue)
            })),
            PhaseName::AfterStep => Box::new(hook::after_step(name, move |_, i| {
                me.or(Some(i.step), AfterStepDecision::Natural)
            })),
        }
    }
}
