//! `fail`: a hook that returns an error, or panics, in one phase (SPEC L4,
//! X2): the run must fail, and nothing its step had not committed is stored.

use pai_runtime::{
    HookError, HookFuture, HookResult, hook,
    hook::{
        AfterStepDecision, AttemptPatch, Phase, RunDecision, StepDecision, ToolCallDecision,
        ToolResultDecision,
    },
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::shared::{SimHook, applies_at};
use crate::planted::PLANTED_PANIC;

/// A lifecycle phase, as named in scenario files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PhaseName {
    /// `prepare_run`: once an episode.
    PrepareRun,
    /// `resolve_model_context`: each step's context.
    ResolveModelContext,
    /// `prepare_model_step`: each step.
    PrepareModelStep,
    /// `around_model_call`: each provider attempt.
    AroundModelCall,
    /// `before_tool_call`: each tool call.
    BeforeToolCall,
    /// `after_tool_result`: each tool result.
    AfterToolResult,
    /// `after_step`: each step's transition.
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
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Fail {
    /// The hook's name in the event log; `<hook>#<index>` when left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(pattern(crate::schema::checks::NONBLANK))]
    pub name: Option<String>,
    /// The phase the hook handles.
    pub phase: PhaseName,
    /// The error's message (or the panic's).
    pub message: String,
    /// Panic instead of returning an error.
    #[serde(default, skip_serializing_if = "crate::defaults::is_false")]
    #[schemars(extend("default" = false))]
    pub panic: bool,
    /// Only at this step, numbered from 0 as the event log numbers steps
    /// (across a run's episodes); at every step when left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<u32>,
    /// Only in a resumed episode: one whose `prepare_run` says it resumes
    /// (after a wait, SPEC T7; or a takeover among workers, K3).
    #[serde(default, skip_serializing_if = "crate::defaults::is_false")]
    #[schemars(extend("default" = false))]
    pub on_resume: bool,
}

impl Fail {
    /// The error at `step` (`None`: a phase without steps) of an episode
    /// that resumes the run or not, or a panic.
    fn fire(&self, resumed: bool, step: Option<u32>) -> HookResult<()> {
        if step.is_some_and(|s| !applies_at(self.step, s)) || (self.on_resume && !resumed) {
            return Ok(());
        }
        if self.panic {
            panic!("{PLANTED_PANIC} {}", self.message);
        }
        Err(HookError::new(self.message.clone()))
    }

    /// `decision` when the hook does not fire at `step`.
    fn or<T>(
        &self,
        resumed: bool,
        step: Option<u32>,
        decision: T,
    ) -> HookFuture<'static, HookResult<T>>
    where
        T: Send + 'static,
    {
        HookFuture::ready(self.fire(resumed, step).map(|()| decision))
    }

    pub(super) fn hook(&self, name: &str) -> SimHook {
        let me = self.clone();
        match self.phase {
            PhaseName::PrepareRun => Box::new(hook::prepare_run(name, move |cx, _| {
                me.or(cx.resumed, None, RunDecision::default())
            })),
            PhaseName::ResolveModelContext => {
                Box::new(hook::resolve_model_context(name, move |cx, input, next| {
                    let fired = me.fire(cx.resumed, Some(input.step));
                    HookFuture::new(async move {
                        fired?;
                        next.run().await
                    })
                }))
            }
            PhaseName::PrepareModelStep => {
                Box::new(hook::prepare_model_step(name, move |cx, i| {
                    me.or(cx.resumed, Some(i.step), StepDecision::default())
                }))
            }
            PhaseName::AroundModelCall => {
                Box::new(hook::around_model_call(name, move |cx, request, next| {
                    let fired = me.fire(cx.resumed, Some(request.step));
                    HookFuture::new(async move {
                        fired?;
                        Ok(next.call(AttemptPatch::default()).await?)
                    })
                }))
            }
            PhaseName::BeforeToolCall => Box::new(hook::before_tool_call(name, move |cx, i| {
                me.or(cx.resumed, Some(i.step), ToolCallDecision::Continue)
            })),
            PhaseName::AfterToolResult => Box::new(hook::after_tool_result(name, move |cx, i| {
                me.or(cx.resumed, Some(i.step), ToolResultDecision::Continue)
            })),
            PhaseName::AfterStep => Box::new(hook::after_step(name, move |cx, i| {
                me.or(cx.resumed, Some(i.step), AfterStepDecision::Natural)
            })),
        }
    }
}
