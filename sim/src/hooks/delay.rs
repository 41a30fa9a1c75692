//! `delay`: a hook that only waits, in any phase (like a slow policy
//! service or a remote lookup), then takes the phase's default decision.
//! It moves when things happen, so messages can arrive before a step's
//! anchor (during `prepare_run`), after it, or while tools run.

use std::time::Duration;

use pai_runtime::{
    HookFuture, hook,
    hook::{
        AfterStepDecision, AttemptPatch, RunDecision, StepDecision, ToolCallDecision,
        ToolResultDecision,
    },
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::fail::PhaseName;
use super::shared::{SimHook, applies_at};

/// Wait `ms` virtual milliseconds in `phase`, at every step or at `step` only.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Delay {
    /// The hook's name in the event log; `<hook>#<index>` when left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(pattern(crate::schema::checks::NONBLANK))]
    pub name: Option<String>,
    /// The phase the hook handles.
    pub phase: PhaseName,
    /// Virtual milliseconds to wait.
    pub ms: u64,
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

/// `decision` after `ms` milliseconds (at once when `ms` is 0 or the step is not ours).
fn after<T: Send + 'static>(
    ms: u64,
    decision: T,
) -> HookFuture<'static, pai_runtime::HookResult<T>> {
    if ms == 0 {
        return HookFuture::ready(Ok(decision));
    }
    HookFuture::new(async move {
        tokio::time::sleep(Duration::from_millis(ms)).await;
        Ok(decision)
    })
}

impl Delay {
    /// The wait at `step` (`None`: a phase without steps) of an episode
    /// that resumes the run or not.
    fn ms_at(&self, resumed: bool, step: Option<u32>) -> u64 {
        match step {
            _ if self.on_resume && !resumed => 0,
            Some(s) if !applies_at(self.step, s) => 0,
            _ => self.ms,
        }
    }

    pub(super) fn hook(&self, name: &str) -> SimHook {
        let me = self.clone();
        match self.phase {
            PhaseName::PrepareRun => Box::new(hook::prepare_run(name, move |cx, _| {
                after(me.ms_at(cx.resumed, None), RunDecision::default())
            })),
            PhaseName::ResolveModelContext => {
                Box::new(hook::resolve_model_context(name, move |cx, input, next| {
                    let ms = me.ms_at(cx.resumed, Some(input.step));
                    HookFuture::new(async move {
                        tokio::time::sleep(Duration::from_millis(ms)).await;
                        next.run().await
                    })
                }))
            }
            PhaseName::PrepareModelStep => {
                Box::new(hook::prepare_model_step(name, move |cx, i| {
                    after(me.ms_at(cx.resumed, Some(i.step)), StepDecision::default())
                }))
            }
            PhaseName::AroundModelCall => {
                Box::new(hook::around_model_call(name, move |cx, request, next| {
                    let ms = me.ms_at(cx.resumed, Some(request.step));
                    HookFuture::new(async move {
                        tokio::time::sleep(Duration::from_millis(ms)).await;
                        Ok(next.call(AttemptPatch::default()).await?)
                    })
                }))
            }
            PhaseName::BeforeToolCall => Box::new(hook::before_tool_call(name, move |cx, i| {
                after(
                    me.ms_at(cx.resumed, Some(i.step)),
                    ToolCallDecision::Continue,
                )
            })),
            PhaseName::AfterToolResult => Box::new(hook::after_tool_result(name, move |cx, i| {
                after(
                    me.ms_at(cx.resumed, Some(i.step)),
                    ToolResultDecision::Continue,
                )
            })),
            PhaseName::AfterStep => Box::new(hook::after_step(name, move |cx, i| {
                after(
                    me.ms_at(cx.resumed, Some(i.step)),
                    AfterStepDecision::Natural,
                )
            })),
        }
    }
}
