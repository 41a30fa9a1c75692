//! The lifecycle trait, its typed decisions (SPEC §3) and composition (SPEC §2).

use std::borrow::Cow;
use std::fmt;

use serde_json::Value;

use crate::clock::Millis;
use crate::context::{ContextInput, ContextLink, ContextNext};
use crate::future::{HookFuture, guarded};
use crate::message::{Message, ModelMessage, Outcome, Part, ResultSource, ToolStatus};
use crate::model::{BoxStream, ModelError, ModelRequest};
use crate::model_call::{AttemptPatch, ModelLink, ModelNext};
use crate::patch::{Patch, Route};
use crate::transform::{NoAbort, Pipeline, StreamTransform};

/// The error a hook returns to fail its run (SPEC L4).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct HookError {
    pub message: String,
    /// Set when this is a provider error passed through from `next`: it is
    /// the provider's failure, not the hook's, so an outer hook may still
    /// recover from it.
    model: Option<ModelError>,
}

impl HookError {
    pub fn new(message: impl Into<String>) -> HookError {
        HookError {
            message: message.into(),
            model: None,
        }
    }

    /// The provider error this passes through, if it is one.
    pub fn model_error(&self) -> Option<&ModelError> {
        self.model.as_ref()
    }
}

pub type HookResult<T> = Result<T, HookError>;

impl From<ModelError> for HookError {
    fn from(e: ModelError) -> HookError {
        HookError {
            message: e.to_string(),
            model: Some(e),
        }
    }
}

/// The first hook failure inside an onion. It fails the run even when an
/// outer hook catches what its `next` returned (SPEC L4).
#[derive(Debug, Default)]
pub(crate) struct FailureCell(std::sync::Mutex<Option<HookError>>);

impl FailureCell {
    pub(crate) fn record(&self, e: &HookError) {
        let mut slot = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if slot.is_none() {
            *slot = Some(e.clone());
        }
    }

    pub(crate) fn take(&self) -> Option<HookError> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).take()
    }
}

/// A lifecycle phase that hooks can handle, in step order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Phase {
    PrepareRun,
    ResolveModelContext,
    PrepareModelStep,
    AroundModelCall,
    TransformStepStream,
    BeforeToolCall,
    AfterToolResult,
    AfterStep,
}

const PHASES: usize = 8;

impl Phase {
    pub const ALL: [Phase; PHASES] = [
        Phase::PrepareRun,
        Phase::ResolveModelContext,
        Phase::PrepareModelStep,
        Phase::AroundModelCall,
        Phase::TransformStepStream,
        Phase::BeforeToolCall,
        Phase::AfterToolResult,
        Phase::AfterStep,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Phase::PrepareRun => "prepare_run",
            Phase::ResolveModelContext => "resolve_model_context",
            Phase::PrepareModelStep => "prepare_model_step",
            Phase::AroundModelCall => "around_model_call",
            Phase::TransformStepStream => "transform_step_stream",
            Phase::BeforeToolCall => "before_tool_call",
            Phase::AfterToolResult => "after_tool_result",
            Phase::AfterStep => "after_step",
        }
    }

    const fn bit(self) -> u8 {
        1 << self as u8
    }
}

/// The set of phases a hook handles. Composition dispatches a phase only to
/// the hooks whose set contains it.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Phases(u8);

impl Phases {
    pub const NONE: Phases = Phases(0);
    pub const ALL: Phases = Phases(0b1111_1111);

    pub const fn only(phase: Phase) -> Phases {
        Phases(phase.bit())
    }

    pub const fn with(self, phase: Phase) -> Phases {
        Phases(self.0 | phase.bit())
    }

    pub const fn contains(self, phase: Phase) -> bool {
        self.0 & phase.bit() != 0
    }
}

impl fmt::Debug for Phases {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set()
            .entries(
                Phase::ALL
                    .iter()
                    .filter(|p| self.contains(**p))
                    .map(|p| p.as_str()),
            )
            .finish()
    }
}

/// A terminal response from `prepare_run` (SPEC L12).
#[derive(Debug, Clone, PartialEq)]
pub struct Response {
    pub outcome: Outcome,
    pub reason: Option<String>,
    pub parts: Vec<Part>,
}

/// What `prepare_run` may decide.
#[derive(Debug, Clone, PartialEq)]
pub enum RunDecision {
    /// Go on; the patch sets the episode's defaults.
    Continue(Patch),
    /// Commit this response and end the run.
    Respond(Response),
}

impl Default for RunDecision {
    fn default() -> Self {
        RunDecision::Continue(Patch::default())
    }
}

/// What `prepare_model_step` may decide.
#[derive(Debug, Clone, PartialEq)]
pub enum StepDecision {
    /// Go on; the patch (often empty) applies to this step only.
    Continue(Patch),
}

impl Default for StepDecision {
    fn default() -> Self {
        StepDecision::Continue(Patch::default())
    }
}

/// What `before_tool_call` may decide.
#[derive(Debug, Clone, Default, PartialEq)]
pub enum ToolCallDecision {
    #[default]
    Continue,
    ReplaceInput(Value),
    Reject {
        message: String,
    },
}

/// What `after_tool_result` may decide.
#[derive(Debug, Clone, Default, PartialEq)]
pub enum ToolResultDecision {
    #[default]
    Continue,
    ReplaceOutput(Value),
}

/// What `after_step` may decide. Ordered by strength (SPEC L10):
/// `Complete > NextStep > Natural`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum AfterStepDecision {
    #[default]
    Natural,
    NextStep,
    Complete,
}

impl AfterStepDecision {
    pub fn as_str(self) -> &'static str {
        match self {
            AfterStepDecision::Natural => "natural",
            AfterStepDecision::NextStep => "next_step",
            AfterStepDecision::Complete => "complete",
        }
    }
}

/// What every hook receives besides its phase input.
pub struct HookCx<'a, C> {
    /// The application's typed runtime context.
    pub context: &'a C,
    pub run_id: &'a str,
    pub thread_id: &'a str,
    /// Execution episode number, from 1.
    pub episode: u32,
    pub now: Millis,
    pub(crate) trace: Option<&'a dyn HookTrace>,
}

impl<'a, C> HookCx<'a, C> {
    /// A context for calling hooks outside the runtime (unit tests of hooks,
    /// other drivers). Inner decisions of composed hooks are not traced.
    pub fn new(
        context: &'a C,
        run_id: &'a str,
        thread_id: &'a str,
        episode: u32,
        now: Millis,
    ) -> Self {
        HookCx {
            context,
            run_id,
            thread_id,
            episode,
            now,
            trace: None,
        }
    }
}

impl<C> fmt::Debug for HookCx<'_, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HookCx")
            .field("run_id", &self.run_id)
            .field("thread_id", &self.thread_id)
            .field("episode", &self.episode)
            .field("now", &self.now)
            .finish_non_exhaustive()
    }
}

/// Where composed hooks report each inner decision.
pub(crate) trait HookTrace: Send + Sync {
    fn note(&self, note: HookNote);
}

/// One hook's decision inside a composition, reported to the event log.
#[derive(Debug, Clone, PartialEq)]
pub struct HookNote {
    pub phase: Phase,
    pub hook: String,
    pub decision: NoteDecision,
}

/// A copy of a decision for the event log.
#[derive(Debug, Clone, PartialEq)]
pub enum NoteDecision {
    Run(RunDecision),
    Step(StepDecision),
    ToolCall(ToolCallDecision),
    ToolResult(ToolResultDecision),
    AfterStep(AfterStepDecision),
    /// A resolver returned this many messages.
    Context {
        messages: usize,
    },
    /// An `around_model_call` hook returned a stream, or this error.
    ModelCall {
        error: Option<String>,
    },
    /// A `transform_step_stream` hook installed a stage (or not).
    Transform {
        installed: bool,
    },
}

/// What a canonical stream carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamKind {
    /// A model step's provider stream.
    Model,
    /// A `prepare_run` response (SPEC L12).
    Respond,
    /// An abort's replacement parts (SPEC S4).
    Replacement,
}

/// Input of `transform_step_stream`.
#[derive(Debug, Clone, Copy)]
pub struct StreamInput {
    /// The model step, for model streams.
    pub step: Option<u32>,
    pub kind: StreamKind,
}

/// Input of `prepare_run`.
#[derive(Debug)]
pub struct RunInput<'a> {
    /// The thread's stored messages at episode start.
    pub messages: &'a [Message],
    /// The newest user message, if any.
    pub latest_user_message: Option<&'a Message>,
    /// The episode route with earlier hooks' patches applied.
    pub route: &'a Route,
}

/// Input of `prepare_model_step`.
#[derive(Debug)]
pub struct StepInput<'a> {
    /// Step number within the run, from 0.
    pub step: u32,
    /// The step route with earlier hooks' patches applied.
    pub route: &'a Route,
    /// The messages the step would send: resolved context, episode overlay and
    /// earlier hooks' step patches.
    pub messages: &'a [ModelMessage],
}

/// Input of `before_tool_call`.
#[derive(Debug)]
pub struct ToolCallInput<'a> {
    pub step: u32,
    pub call_id: &'a str,
    pub tool: &'a str,
    /// The input, as replaced by earlier hooks.
    pub input: &'a Value,
}

/// A final tool result as hooks see it.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolResult {
    pub call_id: String,
    pub tool: String,
    pub status: ToolStatus,
    pub source: ResultSource,
    pub output: Value,
}

/// Input of `after_tool_result`.
#[derive(Debug)]
pub struct ToolResultInput<'a> {
    pub step: u32,
    /// The result, with earlier hooks' replacements applied.
    pub result: &'a ToolResult,
}

/// Input of `after_step`.
#[derive(Debug)]
pub struct AfterStepInput<'a> {
    pub step: u32,
    /// The assembled, committed assistant message. Read-only (SPEC A1).
    pub message: &'a Message,
    pub tool_results: &'a [ToolResult],
}

/// Lifecycle hooks of one agent. Every method has a no-op default, so a hook
/// implements only the phases it cares about and lists them in [`phases`].
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

    fn prepare_run<'a>(
        &'a self,
        cx: &'a HookCx<'_, C>,
        input: &'a RunInput<'_>,
    ) -> HookFuture<'a, HookResult<RunDecision>> {
        let _ = (cx, input);
        HookFuture::ready(Ok(RunDecision::default()))
    }

    /// An onion (L6): `next.run()` is the downstream context (memoized, M2);
    /// `next.with_base(base)` runs the inner hooks over `base` instead.
    fn resolve_model_context<'a>(
        &'a self,
        cx: &'a HookCx<'_, C>,
        input: &'a ContextInput<'_>,
        next: ContextNext<'a>,
    ) -> HookFuture<'a, HookResult<Vec<ModelMessage>>> {
        let _ = (cx, input);
        HookFuture::new(async move { next.run().await })
    }

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
    fn transform_step_stream(
        &self,
        cx: &HookCx<'_, C>,
        input: &StreamInput,
    ) -> Option<Box<dyn StreamTransform>> {
        let _ = (cx, input);
        None
    }

    fn before_tool_call<'a>(
        &'a self,
        cx: &'a HookCx<'_, C>,
        input: &'a ToolCallInput<'_>,
    ) -> HookFuture<'a, HookResult<ToolCallDecision>> {
        let _ = (cx, input);
        HookFuture::ready(Ok(ToolCallDecision::Continue))
    }

    fn after_tool_result<'a>(
        &'a self,
        cx: &'a HookCx<'_, C>,
        input: &'a ToolResultInput<'_>,
    ) -> HookFuture<'a, HookResult<ToolResultDecision>> {
        let _ = (cx, input);
        HookFuture::ready(Ok(ToolResultDecision::Continue))
    }

    fn after_step<'a>(
        &'a self,
        cx: &'a HookCx<'_, C>,
        input: &'a AfterStepInput<'_>,
    ) -> HookFuture<'a, HookResult<AfterStepDecision>> {
        let _ = (cx, input);
        HookFuture::ready(Ok(AfterStepDecision::Natural))
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

/// Hooks composed into one lifecycle (SPEC L5, L8, L9, L10).
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

    pub fn len(&self) -> usize {
        self.hooks.len()
    }

    pub fn is_empty(&self) -> bool {
        self.hooks.is_empty()
    }
}

fn note<C>(cx: &HookCx<'_, C>, phase: Phase, hook: &str, decision: impl FnOnce() -> NoteDecision) {
    if let Some(trace) = cx.trace {
        trace.note(HookNote {
            phase,
            hook: hook.to_string(),
            decision: decision(),
        });
    }
}

/// Runs one inner hook call, turning a panic into a hook error that names the hook.
async fn call<'a, C: 'static, T>(
    hook: &'a dyn Lifecycle<C>,
    make: impl FnOnce() -> HookFuture<'a, HookResult<T>>,
) -> HookResult<T> {
    match guarded(make).await {
        Ok(r) => r,
        Err(panic) => Err(HookError::new(format!(
            "hook {} panicked: {panic}",
            hook.name()
        ))),
    }
}

impl<C: Send + Sync + 'static> Lifecycle<C> for Composed<C> {
    fn name(&self) -> &str {
        "compose"
    }

    fn phases(&self) -> Phases {
        self.phases
    }

    fn prepare_run<'a>(
        &'a self,
        cx: &'a HookCx<'_, C>,
        input: &'a RunInput<'_>,
    ) -> HookFuture<'a, HookResult<RunDecision>> {
        HookFuture::new(async move {
            let mut route = Cow::Borrowed(input.route);
            let mut merged: Option<Patch> = None;
            for hook in self.handlers(Phase::PrepareRun) {
                let sub = RunInput {
                    messages: input.messages,
                    latest_user_message: input.latest_user_message,
                    route: &route,
                };
                let decision = call(hook, || hook.prepare_run(cx, &sub)).await?;
                note(cx, Phase::PrepareRun, hook.name(), || {
                    NoteDecision::Run(decision.clone())
                });
                match decision {
                    RunDecision::Respond(r) => return Ok(RunDecision::Respond(r)),
                    RunDecision::Continue(p) => {
                        if p.is_empty() {
                            continue;
                        }
                        if !p.route.is_empty() {
                            route.to_mut().apply(&p.route);
                        }
                        match &mut merged {
                            Some(m) => m.then(p),
                            None => merged = Some(p),
                        }
                    }
                }
            }
            Ok(RunDecision::Continue(merged.unwrap_or_default()))
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
            chain.resolve(None).await
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
            };
            Ok(chain.attempt(request, AttemptPatch::default()).await?)
        })
    }

    fn prepare_model_step<'a>(
        &'a self,
        cx: &'a HookCx<'_, C>,
        input: &'a StepInput<'_>,
    ) -> HookFuture<'a, HookResult<StepDecision>> {
        HookFuture::new(async move {
            let mut route = Cow::Borrowed(input.route);
            let mut messages = Cow::Borrowed(input.messages);
            let mut merged: Option<Patch> = None;
            for hook in self.handlers(Phase::PrepareModelStep) {
                let sub = StepInput {
                    step: input.step,
                    route: &route,
                    messages: &messages,
                };
                let decision = call(hook, || hook.prepare_model_step(cx, &sub)).await?;
                note(cx, Phase::PrepareModelStep, hook.name(), || {
                    NoteDecision::Step(decision.clone())
                });
                let StepDecision::Continue(p) = decision;
                if p.is_empty() {
                    continue;
                }
                if !p.route.is_empty() {
                    route.to_mut().apply(&p.route);
                }
                if p.replace_model_messages.is_some() || !p.append_model_messages.is_empty() {
                    let mut owned = messages.into_owned();
                    p.apply_messages(&mut owned);
                    messages = Cow::Owned(owned);
                }
                match &mut merged {
                    Some(m) => m.then(p),
                    None => merged = Some(p),
                }
            }
            Ok(StepDecision::Continue(merged.unwrap_or_default()))
        })
    }

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
                    StreamKind::Respond | StreamKind::Replacement => NoAbort::wrap(t),
                });
            note(cx, Phase::TransformStepStream, hook.name(), || {
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

    fn before_tool_call<'a>(
        &'a self,
        cx: &'a HookCx<'_, C>,
        input: &'a ToolCallInput<'_>,
    ) -> HookFuture<'a, HookResult<ToolCallDecision>> {
        HookFuture::new(async move {
            let mut replaced: Option<Value> = None;
            for hook in self.handlers(Phase::BeforeToolCall) {
                let sub = ToolCallInput {
                    step: input.step,
                    call_id: input.call_id,
                    tool: input.tool,
                    input: replaced.as_ref().unwrap_or(input.input),
                };
                let decision = call(hook, || hook.before_tool_call(cx, &sub)).await?;
                note(cx, Phase::BeforeToolCall, hook.name(), || {
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
                note(cx, Phase::AfterToolResult, hook.name(), || {
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

    fn after_step<'a>(
        &'a self,
        cx: &'a HookCx<'_, C>,
        input: &'a AfterStepInput<'_>,
    ) -> HookFuture<'a, HookResult<AfterStepDecision>> {
        HookFuture::new(async move {
            let mut joined = AfterStepDecision::Natural;
            for hook in self.handlers(Phase::AfterStep) {
                let decision = call(hook, || hook.after_step(cx, input)).await?;
                note(cx, Phase::AfterStep, hook.name(), || {
                    NoteDecision::AfterStep(decision)
                });
                joined = joined.max(decision);
            }
            Ok(joined)
        })
    }
}

/// The resolver onion of one composition: the hooks in `order`, then `then`.
struct ContextChain<'a, C> {
    hooks: &'a [Box<dyn Lifecycle<C>>],
    order: &'a [usize],
    cx: &'a HookCx<'a, C>,
    input: &'a ContextInput<'a>,
    then: &'a dyn ContextLink,
    failure: &'a FailureCell,
}

impl<C: Send + Sync + 'static> ContextLink for ContextChain<'_, C> {
    fn resolve(
        &self,
        base: Option<Vec<ModelMessage>>,
    ) -> HookFuture<'_, HookResult<Vec<ModelMessage>>> {
        HookFuture::new(async move {
            let Some((&i, rest)) = self.order.split_first() else {
                return self.then.resolve(base).await;
            };
            let hook = &*self.hooks[i];
            let inner = ContextChain {
                order: rest,
                ..*self
            };
            let next = ContextNext::new(&inner, base, self.failure);
            let out = call(hook, || {
                hook.resolve_model_context(self.cx, self.input, next)
            })
            .await;
            match &out {
                Ok(messages) => note(self.cx, Phase::ResolveModelContext, hook.name(), || {
                    NoteDecision::Context {
                        messages: messages.len(),
                    }
                }),
                Err(e) => self.failure.record(e),
            }
            out
        })
    }
}

impl<C> Clone for ContextChain<'_, C> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<C> Copy for ContextChain<'_, C> {}

/// The model-call onion of one composition: the hooks in `order`, then `then`.
struct ModelChain<'a, C> {
    hooks: &'a [Box<dyn Lifecycle<C>>],
    order: &'a [usize],
    cx: &'a HookCx<'a, C>,
    then: &'a dyn ModelLink,
    failure: &'a FailureCell,
}

impl<C> Clone for ModelChain<'_, C> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<C> Copy for ModelChain<'_, C> {}

impl<C: Send + Sync + 'static> ModelLink for ModelChain<'_, C> {
    fn attempt<'s>(
        &'s self,
        request: &'s ModelRequest,
        patch: AttemptPatch,
    ) -> HookFuture<'s, Result<BoxStream, ModelError>> {
        HookFuture::new(async move {
            let Some((&i, rest)) = self.order.split_first() else {
                return self.then.attempt(request, patch).await;
            };
            let hook = &*self.hooks[i];
            let effective = patch.apply(request);
            let inner = ModelChain {
                order: rest,
                ..*self
            };
            let next = ModelNext::new(&inner, &effective, self.failure);
            let out = call(hook, || hook.around_model_call(self.cx, &effective, next)).await;
            note(self.cx, Phase::AroundModelCall, hook.name(), || {
                NoteDecision::ModelCall {
                    error: out.as_ref().err().map(|e| e.message.clone()),
                }
            });
            out.map_err(|e| match e.model {
                Some(provider) => provider,
                None => {
                    self.failure.record(&e);
                    ModelError::Hook(e.message)
                }
            })
        })
    }
}
