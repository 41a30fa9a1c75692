//! The `Lifecycle` trait: one method per phase, each with a no-op default.

use super::decision::{
    AfterStepDecision, RunDecision, StepDecision, ToolCallDecision, ToolResultDecision,
};
use super::input::{
    AfterStepInput, HookCx, RunInput, StepInput, StreamInput, ToolCallInput, ToolResultInput,
};
use super::phase::Phases;
use super::rewrite::{RewriteFact, RewriteInput, RewritePatch};
use crate::context::{ContextInput, ContextNext};
use crate::error::HookResult;
use crate::future::HookFuture;
use crate::message::ModelMessage;
use crate::model::{BoxStream, ModelRequest};
use crate::model_call::{AttemptPatch, ModelNext};
use crate::stream::StreamTransform;

/// Lifecycle hooks of one agent. Every method has a no-op default, so a hook
/// implements only the phases it cares about and lists them in [`phases`].
/// A hook that returns an error (or panics) fails its run (SPEC L4, X2).
///
/// For a hook with one phase, the constructors in [`crate::hook`] build one
/// from a closure.
///
/// [`phases`]: Lifecycle::phases
pub trait Lifecycle<C>: Send + Sync + 'static {
    /// The name shown in event logs.
    fn name(&self) -> &str {
        "hook"
    }

    /// The phases this hook handles. Defaults to all of them, which is always
    /// correct; narrowing it lets composition skip this hook elsewhere.
    fn phases(&self) -> Phases {
        Phases::ALL
    }

    /// Once per execution episode (resume included), before the first model
    /// step (SPEC L1): continue with a run patch that sets the episode's
    /// route and model-only overlay (P5), or respond and end the run (L12).
    fn prepare_run<'a>(
        &'a self,
        cx: &'a HookCx<'_, C>,
        input: &'a RunInput<'_>,
    ) -> HookFuture<'a, HookResult<RunDecision>> {
        let _ = (cx, input);
        HookFuture::ready(Ok(RunDecision::default()))
    }

    /// Chooses the durable context of one step. An onion (L6): `next.run()`
    /// is the downstream context (memoized, M2); `next.with_base(base)` runs
    /// the inner hooks over `base` instead. History reads are anchored (M1).
    fn resolve_model_context<'a>(
        &'a self,
        cx: &'a HookCx<'_, C>,
        input: &'a ContextInput<'_>,
        next: ContextNext<'a>,
    ) -> HookFuture<'a, HookResult<Vec<ModelMessage>>> {
        let _ = (cx, input);
        HookFuture::new(async move { next.run().await })
    }

    /// Before each model call: a step patch for this step only (P5) that
    /// may change the route and the messages sent (P1–P4).
    fn prepare_model_step<'a>(
        &'a self,
        cx: &'a HookCx<'_, C>,
        input: &'a StepInput<'_>,
    ) -> HookFuture<'a, HookResult<StepDecision>> {
        let _ = (cx, input);
        HookFuture::ready(Ok(StepDecision::default()))
    }

    /// An onion (L6) around provider attempts: `request` is read-only;
    /// each `next.call(patch)` is one attempt (P6), resolving when its stream
    /// exists (P7). Return the stream the step should consume.
    fn around_model_call<'a>(
        &'a self,
        cx: &'a HookCx<'_, C>,
        request: &'a ModelRequest,
        next: ModelNext<'a>,
    ) -> HookFuture<'a, HookResult<BoxStream>> {
        let _ = (cx, request);
        HookFuture::new(async move { Ok(next.call(AttemptPatch::default()).await?) })
    }

    /// A canonical stage for this stream (L7, S1): its output is what is
    /// stored, shown live and reused as context. `None` leaves the stream as
    /// it is. Called for every model step, `respond` and abort replacement.
    ///
    /// Timing: a stage also sees the step's tool calls, and what it emits
    /// for one is the call that is stored and run: `before_tool_call` and
    /// the tool receive its input as the stage left it (a redactor that
    /// masks an account number in tool-call inputs hands the tool the
    /// masked input). Pass tool calls through unchanged to keep them.
    fn transform_step_stream(
        &self,
        cx: &HookCx<'_, C>,
        input: &StreamInput,
    ) -> Option<Box<dyn StreamTransform>> {
        let _ = (cx, input);
        None
    }

    /// Policy for one tool call the model asked for, before any tool of the
    /// step starts (T1): continue, replace its input, or reject it (T3).
    fn before_tool_call<'a>(
        &'a self,
        cx: &'a HookCx<'_, C>,
        input: &'a ToolCallInput<'_>,
    ) -> HookFuture<'a, HookResult<ToolCallDecision>> {
        let _ = (cx, input);
        HookFuture::ready(Ok(ToolCallDecision::Continue))
    }

    /// Every final tool result, before the model sees it (T4): continue, or
    /// replace its output (T5, L9).
    ///
    /// What the hook writes to the run's metadata (`cx.set_run_metadata`,
    /// `cx.update_run_metadata`) is about this result, so it commits in
    /// the same store write as the result (SPEC K5): the step's
    /// `commit_tool_results`, a resumed run's commit of its answered calls,
    /// or the commit that closes a cancelled run's calls. Until then it is
    /// staged: `cx.run_metadata` reads it back (the hook's own write, and
    /// those of earlier hooks and `on_output` handlers of the same batch of
    /// results), and nothing of it is stored if the result is not (a
    /// crash, a lost lease, a later hook's error). A call run again after a
    /// crash therefore counts once. Hidden context messages and mutations
    /// (`cx.store_context_message`, `cx.mutate`) still commit at once.
    fn after_tool_result<'a>(
        &'a self,
        cx: &'a HookCx<'_, C>,
        input: &'a ToolResultInput<'_>,
    ) -> HookFuture<'a, HookResult<ToolResultDecision>> {
        let _ = (cx, input);
        HookFuture::ready(Ok(ToolResultDecision::Continue))
    }

    /// After a step is committed and its tools ran (A1): keep the natural
    /// transition, ask for another step, or complete the run (A2, A3).
    fn after_step<'a>(
        &'a self,
        cx: &'a HookCx<'_, C>,
        input: &'a AfterStepInput<'_>,
    ) -> HookFuture<'a, HookResult<AfterStepDecision>> {
        let _ = (cx, input);
        HookFuture::ready(Ok(AfterStepDecision::Natural))
    }

    /// Before a history rewrite commits (L11, R2): metadata patches to
    /// commit in the rewrite's own transaction. An error refuses the
    /// rewrite; nothing is committed. `cx.run_id` is empty: no run.
    fn prepare_history_rewrite<'a>(
        &'a self,
        cx: &'a HookCx<'_, C>,
        input: &'a RewriteInput<'_>,
    ) -> HookFuture<'a, HookResult<RewritePatch>> {
        let _ = (cx, input);
        HookFuture::ready(Ok(RewritePatch::default()))
    }

    /// After rewrites committed (L11, R3): best effort, serialized per
    /// thread, facts of one thread possibly coalesced. It cannot undo them;
    /// an error is logged and dropped.
    fn history_rewritten<'a>(
        &'a self,
        cx: &'a HookCx<'_, C>,
        facts: &'a [RewriteFact],
    ) -> HookFuture<'a, HookResult<()>> {
        let _ = (cx, facts);
        HookFuture::ready(Ok(()))
    }
}

/// The lifecycle that does nothing.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoLifecycle;

impl<C> Lifecycle<C> for NoLifecycle {
    fn name(&self) -> &str {
        "none"
    }
    fn phases(&self) -> Phases {
        Phases::NONE
    }
}
