//! `compose(a, b, c)`: hooks as one lifecycle, with the orders of SPEC L5–L10.
//! A phase is dispatched only to the hooks that handle it.

use std::borrow::Cow;
use std::fmt;

use serde_json::Value;

use super::chain::{ContextChain, ModelChain, call, note};
use super::decision::{
    AfterStepDecision, NoteDecision, RunDecision, StepDecision, ToolCallDecision,
    ToolResultDecision,
};
use super::fold::{StepFold, fold_run};
use super::hook::Lifecycle;
use super::input::{
    AfterStepInput, HookCx, RunInput, StepInput, StreamInput, StreamKind, ToolCallInput,
    ToolResult, ToolResultInput,
};
use super::phase::{PHASES, Phase, Phases};
use super::rewrite::{RewriteFact, RewriteInput, RewritePatch};
use crate::context::{ContextInput, ContextNext};
use crate::error::HookResult;
use crate::future::HookFuture;
use crate::message::ModelMessage;
use crate::model::{BoxStream, ModelRequest};
use crate::model_call::{AttemptPatch, ModelNext};
use crate::patch::Patch;
use crate::stream::{NoAbort, Pipeline, StreamTransform};

/// Hooks composed into one lifecycle (SPEC L5–L10).
pub struct Composed<C> {
    hooks: Vec<Box<dyn Lifecycle<C>>>,
    /// For each phase, the indices of the hooks that handle it.
    by_phase: [Vec<usize>; PHASES],
    phases: Phases,
}

impl<C: 'static> fmt::Debug for Composed<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.hooks.iter().map(|h| h.name()))
            .finish()
    }
}

/// Composes hooks in order: `compose(vec![a, b, c])`.
pub fn compose<C: 'static>(hooks: Vec<Box<dyn Lifecycle<C>>>) -> Composed<C> {
    let mut by_phase: [Vec<usize>; PHASES] = Default::default();
    let mut phases = Phases::NONE;
    for (i, h) in hooks.iter().enumerate() {
        let p = h.phases();
        for phase in Phase::ALL {
            if p.contains(phase) {
                by_phase[phase as usize].push(i);
                phases = phases.with(phase);
            }
        }
    }
    Composed {
        hooks,
        by_phase,
        phases,
    }
}

impl<C> Composed<C> {
    fn handlers(&self, phase: Phase) -> impl Iterator<Item = &dyn Lifecycle<C>> {
        self.by_phase[phase as usize]
            .iter()
            .map(|&i| &*self.hooks[i])
    }

    /// The number of hooks composed, in composition order (a nested composition
    /// counts as one).
    pub fn len(&self) -> usize {
        self.hooks.len()
    }

    /// Whether no hook was composed: the lifecycle then does nothing, as
    /// [`NoLifecycle`](super::NoLifecycle) does.
    pub fn is_empty(&self) -> bool {
        self.hooks.is_empty()
    }
}

impl<C: Send + Sync + 'static> Lifecycle<C> for Composed<C> {
    fn name(&self) -> &str {
        "compose"
    }

    fn phases(&self) -> Phases {
        self.phases
    }

    /// L5: in order; each hook sees the earlier patches; a respond stops the chain.
    fn prepare_run<'a>(
        &'a self,
        cx: &'a HookCx<'_, C>,
        input: &'a RunInput<'_>,
    ) -> HookFuture<'a, HookResult<RunDecision>> {
        HookFuture::new(async move {
            let mut route = Cow::Borrowed(input.route);
            let mut merged = Patch::default();
            for hook in self.handlers(Phase::PrepareRun) {
                let sub = RunInput {
                    route: &route,
                    ..*input
                };
                let decision = call(hook, || hook.prepare_run(cx, &sub)).await?;
                note(cx, Phase::PrepareRun, hook, || {
                    NoteDecision::Run(decision.clone())
                });
                match decision {
                    RunDecision::Respond(r) => return Ok(RunDecision::Respond(r)),
                    RunDecision::Continue(p) if p.is_empty() => {}
                    RunDecision::Continue(p) => fold_run(&mut merged, &mut route, p),
                }
            }
            Ok(RunDecision::Continue(merged))
        })
    }

    fn resolve_model_context<'a>(
        &'a self,
        cx: &'a HookCx<'_, C>,
        input: &'a ContextInput<'_>,
        next: ContextNext<'a>,
    ) -> HookFuture<'a, HookResult<Vec<ModelMessage>>> {
        HookFuture::new(async move {
            let chain = ContextChain {
                hooks: &self.hooks,
                order: &self.by_phase[Phase::ResolveModelContext as usize],
                cx,
                input,
                then: &next,
                failure: next.failure(),
            };
            crate::context::ContextLink::resolve(&chain, None).await
        })
    }

    /// L5: in order; each hook sees the route and messages the earlier
    /// hooks' patches made.
    fn prepare_model_step<'a>(
        &'a self,
        cx: &'a HookCx<'_, C>,
        input: &'a StepInput<'_>,
    ) -> HookFuture<'a, HookResult<StepDecision>> {
        HookFuture::new(async move {
            let order = &self.by_phase[Phase::PrepareModelStep as usize];
            let mut fold = StepFold::new(input);
            for (n, &i) in order.iter().enumerate() {
                let hook = &*self.hooks[i];
                let sub = fold.input(order.len() - n - 1);
                // The answer stays where it lies: the fold takes its parts.
                let mut decision = call(hook, || hook.prepare_model_step(cx, &sub)).await;
                let Ok(StepDecision::Continue(p)) = &mut decision else {
                    return decision;
                };
                note(cx, Phase::PrepareModelStep, hook, || {
                    NoteDecision::Step(StepDecision::Continue(p.clone()))
                });
                fold.absorb(p);
            }
            Ok(StepDecision::Continue(fold.finish()))
        })
    }

    fn around_model_call<'a>(
        &'a self,
        cx: &'a HookCx<'_, C>,
        request: &'a ModelRequest,
        next: ModelNext<'a>,
    ) -> HookFuture<'a, HookResult<BoxStream>> {
        HookFuture::new(async move {
            let chain = ModelChain {
                hooks: &self.hooks,
                order: &self.by_phase[Phase::AroundModelCall as usize],
                cx,
                then: &next,
                failure: next.failure(),
                caller: None,
            };
            let stream =
                crate::model_call::ModelLink::attempt(&chain, request, AttemptPatch::default())
                    .await?;
            Ok(stream)
        })
    }

    /// L7: the stages of every hook, in order, as one pipeline.
    fn transform_step_stream(
        &self,
        cx: &HookCx<'_, C>,
        input: &StreamInput,
    ) -> Option<Box<dyn StreamTransform>> {
        let mut stages = Vec::new();
        for hook in self.handlers(Phase::TransformStepStream) {
            let stage = hook
                .transform_step_stream(cx, input)
                .map(|t| match input.kind {
                    StreamKind::Model => t,
                    StreamKind::Respond
                    | StreamKind::Replacement
                    | StreamKind::Refusal
                    | StreamKind::Summary => NoAbort::wrap(t),
                });
            note(cx, Phase::TransformStepStream, hook, || {
                NoteDecision::Transform {
                    installed: stage.is_some(),
                }
            });
            stages.extend(stage);
        }
        match stages.len() {
            0 => None,
            1 => stages.pop(),
            _ => Some(Box::new(Pipeline::new(stages))),
        }
    }

    /// L8: in order; a replaced input feeds the next hook; the first reject stops.
    fn before_tool_call<'a>(
        &'a self,
        cx: &'a HookCx<'_, C>,
        input: &'a ToolCallInput<'_>,
    ) -> HookFuture<'a, HookResult<ToolCallDecision>> {
        HookFuture::new(async move {
            let mut replaced: Option<Value> = None;
            for hook in self.handlers(Phase::BeforeToolCall) {
                let sub = ToolCallInput {
                    input: replaced.as_ref().unwrap_or(input.input),
                    ..*input
                };
                let decision = call(hook, || hook.before_tool_call(cx, &sub)).await?;
                note(cx, Phase::BeforeToolCall, hook, || {
                    NoteDecision::ToolCall(decision.clone())
                });
                match decision {
                    ToolCallDecision::Continue => {}
                    ToolCallDecision::ReplaceInput(v) => replaced = Some(v),
                    reject @ ToolCallDecision::Reject { .. } => return Ok(reject),
                }
            }
            Ok(replaced.map_or(ToolCallDecision::Continue, ToolCallDecision::ReplaceInput))
        })
    }

    /// L9: in order; a replaced output feeds the next hook.
    fn after_tool_result<'a>(
        &'a self,
        cx: &'a HookCx<'_, C>,
        input: &'a ToolResultInput<'_>,
    ) -> HookFuture<'a, HookResult<ToolResultDecision>> {
        HookFuture::new(async move {
            let mut current: Cow<'_, ToolResult> = Cow::Borrowed(input.result);
            let mut replaced = false;
            for hook in self.handlers(Phase::AfterToolResult) {
                let sub = ToolResultInput {
                    step: input.step,
                    result: &current,
                };
                let decision = call(hook, || hook.after_tool_result(cx, &sub)).await?;
                note(cx, Phase::AfterToolResult, hook, || {
                    NoteDecision::ToolResult(decision.clone())
                });
                if let ToolResultDecision::ReplaceOutput(v) = decision {
                    current.to_mut().output = v;
                    replaced = true;
                }
            }
            Ok(if replaced {
                ToolResultDecision::ReplaceOutput(current.into_owned().output)
            } else {
                ToolResultDecision::Continue
            })
        })
    }

    /// L10: every hook is asked; the strongest decision wins.
    fn after_step<'a>(
        &'a self,
        cx: &'a HookCx<'_, C>,
        input: &'a AfterStepInput<'_>,
    ) -> HookFuture<'a, HookResult<AfterStepDecision>> {
        HookFuture::new(async move {
            let mut joined = AfterStepDecision::Natural;
            for hook in self.handlers(Phase::AfterStep) {
                let decision = call(hook, || hook.after_step(cx, input)).await?;
                note(cx, Phase::AfterStep, hook, || {
                    NoteDecision::AfterStep(decision)
                });
                joined = joined.max(decision);
            }
            Ok(joined)
        })
    }

    /// L11: in order; patches merge, a later hook's keys winning. The
    /// first error refuses the rewrite.
    fn prepare_history_rewrite<'a>(
        &'a self,
        cx: &'a HookCx<'_, C>,
        input: &'a RewriteInput<'_>,
    ) -> HookFuture<'a, HookResult<RewritePatch>> {
        HookFuture::new(async move {
            let mut merged = RewritePatch::default();
            for hook in self.handlers(Phase::PrepareHistoryRewrite) {
                merged.then(call(hook, || hook.prepare_history_rewrite(cx, input)).await?);
            }
            Ok(merged)
        })
    }

    /// L11, R3: each hook in order, after commit; one hook's failure does
    /// not keep the later ones from hearing the facts.
    fn history_rewritten<'a>(
        &'a self,
        cx: &'a HookCx<'_, C>,
        facts: &'a [RewriteFact],
    ) -> HookFuture<'a, HookResult<()>> {
        HookFuture::new(async move {
            let mut failures = Vec::new();
            for hook in self.handlers(Phase::HistoryRewritten) {
                if let Err(e) = call(hook, || hook.history_rewritten(cx, facts)).await {
                    failures.push(format!("{}: {e}", hook.name()));
                }
            }
            match failures.is_empty() {
                true => Ok(()),
                false => Err(crate::error::HookError::new(failures.join("; "))),
            }
        })
    }
}
